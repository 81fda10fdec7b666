"""TokenReview and SubjectAccessReview as the embedded API server answers them.

Why: the kubelet's webhook authentication and authorization (a node's HTTPS endpoint,
nodeagent/kubeletserver) ask the API server who a bearer token belongs to and whether a user
may do something; kube-apiserver answers with these two create-only, never-stored kinds
(authentication.k8s.io/v1 tokenreviews, authorization.k8s.io/v1 subjectaccessreviews).

What the embedded server knows today decides the answers (difference from kube-apiserver,
which runs its authenticators and RBAC): one bearer token, the administrator's, who is
`nodeagent-admin` in `system:masters`; a SubjectAccessReview allows `system:masters` (as
kube-apiserver's privileged-group authorizer does) and, when the server runs with
`anonymous: true`, everyone, as every request of that server is allowed; anyone else is
denied with a reason naming what is missing. Per-identity credentials and RBAC are the
least-privilege issue's work (issue 25). Pure: no I/O.
"""

from __future__ import annotations

import copy
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.apiserver.errors import APIError, bad_request

AUTHN_GROUP, AUTHZ_GROUP = "authentication.k8s.io", "authorization.k8s.io"
ADMIN_USER = "nodeagent-admin"
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
DENIED_REASON = (f"nodeagent's API server allows only its administrator (group {MASTERS}) and serves no RBAC "
                 "yet: other identities are refused (least privilege, issue 25)")
# The review paths, (group, version, plural) -> the kind they take.
PATHS: Mapping[tuple[str, str, str], str] = {
    (AUTHN_GROUP, "v1", "tokenreviews"): "TokenReview",
    (AUTHZ_GROUP, "v1", "subjectaccessreviews"): "SubjectAccessReview",
}


@dataclass(frozen=True)
class Identity:
    """Who a credential belongs to (user.Info)."""

    username: str
    groups: tuple[str, ...] = ()
    uid: str = ""


class Reviews:
    """The answers of one API server: its admin token (None: the server runs anonymous)."""

    def __init__(self, token: str | None) -> None:
        self._token = token

    def identity(self, token: str) -> Identity | None:
        """The identity of a bearer token, None when the server does not know it (constant time)."""
        if self._token is None or not token or not hmac.compare_digest(token.encode(), self._token.encode()):
            return None
        return Identity(ADMIN_USER, (MASTERS, AUTHENTICATED))

    def allowed(self, user: str, groups: tuple[str, ...]) -> tuple[bool, str]:
        """(allowed, reason) for any request of `user` in `groups`."""
        if self._token is None:
            return True, "nodeagent's API server runs with anonymous: true and allows every request"
        if MASTERS in groups:
            return True, ""
        return False, DENIED_REASON

    def create(self, kind: str, body: Any) -> dict[str, Any]:
        """The review `body` (a TokenReview or SubjectAccessReview) with its status filled in."""
        if not isinstance(body, Mapping) or not isinstance(body.get("spec"), Mapping):
            raise bad_request(f"{kind} in version \"v1\" cannot be handled: spec is required")
        found_kind = body.get("kind")
        if found_kind not in (None, "", kind):
            raise bad_request(f'the API version in the data ({body.get("apiVersion")}) does not match the expected '
                              f"API version ({_api_version(kind)})")
        out = copy.deepcopy(dict(body))
        out["kind"], out["apiVersion"] = kind, _api_version(kind)
        meta = out.get("metadata")
        out["metadata"] = dict(meta) if isinstance(meta, Mapping) else {}
        out["metadata"].setdefault("creationTimestamp", None)
        if kind == "TokenReview":
            out["status"] = self._token_status(out["spec"])
        else:
            out["status"] = self._access_status(out["spec"])
        return out

    def _token_status(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            # kube-apiserver's tokenreview REST, word for word
            raise bad_request("token is required for TokenReview in authentication")
        who = self.identity(token)
        if who is None:
            return {"user": {}}
        user: dict[str, Any] = {"username": who.username, "groups": list(who.groups)}
        if who.uid:
            user["uid"] = who.uid
        status: dict[str, Any] = {"authenticated": True, "user": user}
        audiences = spec.get("audiences")
        if isinstance(audiences, list) and audiences:
            # the token is not audience-bound: it is good for whatever the caller asks
            status["audiences"] = list(audiences)
        return status

    def _access_status(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(spec.get("resourceAttributes"), Mapping) and not isinstance(
                spec.get("nonResourceAttributes"), Mapping):
            raise APIError(422, "Invalid", 'SubjectAccessReview.authorization.k8s.io "" is invalid: '
                           "spec: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes "
                           "must be specified")
        user = str(spec.get("user") or "")
        groups = tuple(str(g) for g in spec.get("groups") or ())
        if not user and not groups:
            raise APIError(422, "Invalid", 'SubjectAccessReview.authorization.k8s.io "" is invalid: '
                           'spec.user: Invalid value: "": at least one of user or group must be specified')
        allowed, reason = self.allowed(user, groups)
        status: dict[str, Any] = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return status


def _api_version(kind: str) -> str:
    return f"{AUTHN_GROUP}/v1" if kind == "TokenReview" else f"{AUTHZ_GROUP}/v1"


def review_kind(path: str) -> str | None:
    """The review kind a POST path creates (`/apis/authentication.k8s.io/v1/tokenreviews`), else None."""
    parts = [p for p in path.split("/") if p]
    if len(parts) != 4 or parts[0] != "apis":
        return None
    return PATHS.get((parts[1], parts[2], parts[3]))
