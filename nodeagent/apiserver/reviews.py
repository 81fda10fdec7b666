"""TokenReview, SelfSubjectReview and SubjectAccessReview as the embedded API server answers them.

Why: the kubelet's webhook authentication and authorization (a node's HTTPS endpoint,
nodeagent/kubeletserver) ask the API server who a bearer token belongs to and whether a user
may do something, and `kubectl auth whoami` asks who the caller is; kube-apiserver answers with
these create-only, never-stored kinds (authentication.k8s.io/v1 tokenreviews and
selfsubjectreviews, authorization.k8s.io/v1 subjectaccessreviews).

A TokenReview runs the server's own authenticator chain on the token (authn/chain.py: the token
table), as pkg/registry/authentication/tokenreview does with a request holding nothing but the
token: a token nobody holds answers `error: invalid bearer token`. A SelfSubjectReview tells the
caller's UserInfo as the authentication step found it. SubjectAccessReview (difference from
kube-apiserver, which runs its authorizers): `system:masters` is allowed (as kube-apiserver's
privileged-group authorizer does) and, when the server runs with `anonymous: true`, everyone, as
every request of that server is allowed; anyone else is denied with a reason naming what is
missing. Pure: no I/O.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from nodeagent.apiserver.authn.chain import INVALID_TOKEN, Authenticator
from nodeagent.apiserver.authn.user import SYSTEM_PRIVILEGED_GROUP, UserInfo
from nodeagent.apiserver.errors import APIError, bad_request

AUTHN_GROUP, AUTHZ_GROUP = "authentication.k8s.io", "authorization.k8s.io"
MASTERS = SYSTEM_PRIVILEGED_GROUP
DENIED_REASON = (f"nodeagent's API server allows only its administrator (group {MASTERS}) and serves no RBAC "
                 "yet: other identities are refused (least privilege, issue 25)")
API_AUDIENCES = ("https://kubernetes.default.svc.cluster.local",)
"""kube-apiserver's --api-audiences, which default to its --service-account-issuer; nodeagent issues no
service account tokens and takes the issuer kubeadm and upstream's examples set."""
# The review paths, (group, version, plural) -> the kind they take.
PATHS: Mapping[tuple[str, str, str], str] = {
    (AUTHN_GROUP, "v1", "tokenreviews"): "TokenReview",
    (AUTHN_GROUP, "v1", "selfsubjectreviews"): "SelfSubjectReview",
    (AUTHZ_GROUP, "v1", "subjectaccessreviews"): "SubjectAccessReview",
}


class Reviews:
    """The answers of one API server: its authenticator chain (and whether it runs anonymous)."""

    def __init__(self, authenticator: Authenticator, now: Callable[[], float]) -> None:
        self._authn = authenticator
        self._now = now  # wall clock, seconds: a SelfSubjectReview's creationTimestamp

    def allowed(self, user: str, groups: tuple[str, ...]) -> tuple[bool, str]:
        """(allowed, reason) for any request of `user` in `groups`."""
        if self._authn.anonymous:
            return True, "nodeagent's API server runs with anonymous: true and allows every request"
        if MASTERS in groups:
            return True, ""
        return False, DENIED_REASON

    def create(self, kind: str, body: Any, caller: UserInfo | None = None) -> dict[str, Any]:
        """The review `body` (a TokenReview, SelfSubjectReview or SubjectAccessReview) with its status
        filled in; `caller` is who sent it (what a SelfSubjectReview answers)."""
        if kind == "SelfSubjectReview":
            return self._self_subject(body, caller)
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
        who = self._authn.token_user(token)
        if who is None:
            return {"user": {}, "error": INVALID_TOKEN}
        status: dict[str, Any] = {"authenticated": True, "user": _user_info(who)}
        audiences = spec.get("audiences")
        # the token is not audience-bound: it is good for whatever the caller asks, else for the API's own
        # audiences (authenticator.WrapAudienceAgnosticToken)
        status["audiences"] = list(audiences) if isinstance(audiences, list) and audiences else list(API_AUDIENCES)
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


    def _self_subject(self, body: Any, caller: UserInfo | None) -> dict[str, Any]:
        """selfsubjectreview REST: the caller's UserInfo, created now (nothing of the body is kept)."""
        if body is not None and not isinstance(body, Mapping):
            raise bad_request("not a SelfSubjectReview")
        if caller is None:
            raise bad_request("no user present on request")
        stamp = dt.datetime.fromtimestamp(int(self._now()), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"kind": "SelfSubjectReview", "apiVersion": f"{AUTHN_GROUP}/v1",
                "metadata": {"creationTimestamp": stamp}, "status": {"userInfo": _user_info(caller)}}


def _user_info(user: UserInfo) -> dict[str, Any]:
    """authentication.k8s.io/v1 UserInfo (empty fields left out, as their omitempty tags say)."""
    out: dict[str, Any] = {"username": user.name}
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra.items()}
    return out


def _api_version(kind: str) -> str:
    return f"{AUTHZ_GROUP}/v1" if kind == "SubjectAccessReview" else f"{AUTHN_GROUP}/v1"


def review_kind(path: str) -> str | None:
    """The review kind a POST path creates (`/apis/authentication.k8s.io/v1/tokenreviews`), else None."""
    parts = [p for p in path.split("/") if p]
    if len(parts) != 4 or parts[0] != "apis":
        return None
    return PATHS.get((parts[1], parts[2], parts[3]))
