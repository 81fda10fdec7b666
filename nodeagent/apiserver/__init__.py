"""The Kubernetes API served over the embedded object store (HTTPS, kubectl and client libraries).

Shaped like k8s.io/apiserver: the HTTP edge (`http`) parses a request into a verb on a
resource and calls one generic registry (`registry`); each kind brings a strategy
(`strategies`); version conversion, patching (`patch/`), server-side apply (`apply/`),
tables, schemas and OpenAPI (`schema/`) and protobuf bodies (`protobuf/`) are pure modules
over plain dicts. Nothing here is used by the node side: it reaches the store in process.
"""
