"""authentication.k8s.io/v1 TokenRequest (k8s.io/api authentication/v1 generated.proto).

Why: `kubectl create token` and client-go's CreateToken (the kubelet's projected tokens) post the
serviceaccounts/token subresource's body as protobuf (attestations read, and refused by the token
request: nodeagent binds no token to a webhook configuration). Notation: nodeagent.protowire.notation.
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

AUTHENTICATION_V1 = package({
    "TokenRequest": "1 metadata meta.ObjectMeta; 2 spec TokenRequestSpec; 3 status TokenRequestStatus",
    "TokenRequestSpec": """
        1 audiences []string; 4 expirationSeconds int64?; 3 boundObjectRef BoundObjectReference*
        5 attestations {}StringList""",
    "BoundObjectReference": "1 kind string; 2 apiVersion string; 3 name string; 4 uid string",
    "TokenRequestStatus": "1 token string!; 2 expirationTimestamp Time",
})
