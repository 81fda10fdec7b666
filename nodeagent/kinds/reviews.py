"""The review kinds: authentication.k8s.io/v1 TokenReview and SelfSubjectReview, authorization.k8s.io/v1
SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview and SelfSubjectRulesReview.

Why declared apart from BUILTIN: they are create-only questions the API server answers
(apiserver/reviews.py) and never stores, as upstream's pkg/registry/authentication and
pkg/registry/authorization REST storages (no generic Store); so the object store, the strategies
and the tables never see them, while discovery (verbs [create], no storageVersionHash), the OpenAPI
documents and routing list them as kube-apiserver does: kubectl decides from discovery whether
`kubectl auth can-i` and `kubectl auth whoami` may ask. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import Kind

AUTHN_V1 = "authentication.k8s.io/v1"
AUTHZ_V1 = "authorization.k8s.io/v1"
_DEFINITION = {"authentication.k8s.io": "io.k8s.api.authentication",
               "authorization.k8s.io": "io.k8s.api.authorization"}
_CREATE = ("create",)


def _review(kind: str, api_version: str, *, namespaced: bool = False) -> Kind:
    return Kind(kind, kind.lower() + "s", namespaced=namespaced, versions=(api_version,), definition=_DEFINITION,
                verbs=_CREATE)


REVIEWS = (
    # in each group's version, the order upstream's discovery lists them (alphabetical)
    _review("SelfSubjectReview", AUTHN_V1),
    _review("TokenReview", AUTHN_V1),
    _review("LocalSubjectAccessReview", AUTHZ_V1, namespaced=True),
    _review("SelfSubjectAccessReview", AUTHZ_V1),
    _review("SelfSubjectRulesReview", AUTHZ_V1),
    _review("SubjectAccessReview", AUTHZ_V1),
)
"""The review kinds, served create-only and never stored."""
