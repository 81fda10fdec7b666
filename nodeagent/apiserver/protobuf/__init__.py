"""The API server's protobuf: request bodies from kube clients, and the OpenAPI v2 document.

Why a package: both speak Kubernetes' protobuf wire formats to client-go, but neither owns the
message tables: those are upstream messages, kept once in nodeagent.protowire and shared with the
Pods API's encoder. decoder.py reads `application/vnd.kubernetes.protobuf` bodies; kinds.py names
which (apiVersion, kind) envelopes it reads; gnostic.py writes gnostic's openapi.v2.Document.
"""
