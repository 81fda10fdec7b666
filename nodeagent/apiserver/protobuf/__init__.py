"""The API server's protobuf: request bodies and answers for kube clients, and the OpenAPI v2 document.

Why a package: all of it speaks Kubernetes' protobuf wire formats to client-go, but none owns the
message tables: those are upstream messages, kept once in nodeagent.protowire and shared with the
Pods API. decoder.py reads `application/vnd.kubernetes.protobuf` bodies (and answers, for clients);
encoding.py writes answers, lists, Status errors and watch frames through the shared encoder;
kinds.py names which (apiVersion, kind) envelopes have a message; gnostic.py writes gnostic's
openapi.v2.Document.
"""
