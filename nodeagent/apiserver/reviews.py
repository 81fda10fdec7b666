"""TokenReview, SelfSubjectReview and SubjectAccessReview as the embedded API server answers them.

Why: the kubelet's webhook authentication and authorization (a node's HTTPS endpoint,
nodeagent/kubeletserver) ask the API server who a bearer token belongs to and whether a user
may do something, and `kubectl auth whoami` asks who the caller is; kube-apiserver answers with
these create-only, never-stored kinds (authentication.k8s.io/v1 tokenreviews and
selfsubjectreviews, authorization.k8s.io/v1 subjectaccessreviews).

A TokenReview runs the server's own authenticator chain on the token (authn/chain.py: the token
table), as pkg/registry/authentication/tokenreview does with a request holding nothing but the
token: a token nobody holds answers `error: invalid bearer token`. A SelfSubjectReview tells the
caller's UserInfo as the authentication step found it. SubjectAccessReview, its local
(namespaced) and self forms and SelfSubjectRulesReview are answered by the server's authorizers
(authz/chain.py: system:masters, Node, RBAC), as kube-apiserver answers them; a Reviews built
without authorizers (a test's) keeps the single-administrator answer: `system:masters` allowed,
everyone when anonymous, anyone else denied. Pure: no I/O.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from nodeagent.apiserver.authn.chain import Authenticator
from nodeagent.apiserver.authn.serviceaccount import API_AUDIENCES
from nodeagent.apiserver.authn.user import SYSTEM_PRIVILEGED_GROUP, UserInfo
from nodeagent.apiserver.authz.attributes import Attributes
from nodeagent.apiserver.authz.chain import Authorizer
from nodeagent.apiserver.errors import APIError, bad_request

AUTHN_GROUP, AUTHZ_GROUP = "authentication.k8s.io", "authorization.k8s.io"
MASTERS = SYSTEM_PRIVILEGED_GROUP
DENIED_REASON = (f"nodeagent's API server allows only its administrator (group {MASTERS}) and serves no RBAC "
                 "yet: other identities are refused (least privilege, issue 25)")
# The review paths, (group, version, plural) -> the kind they take.
PATHS: Mapping[tuple[str, str, str], str] = {
    (AUTHN_GROUP, "v1", "tokenreviews"): "TokenReview",
    (AUTHN_GROUP, "v1", "selfsubjectreviews"): "SelfSubjectReview",
    (AUTHZ_GROUP, "v1", "subjectaccessreviews"): "SubjectAccessReview",
    (AUTHZ_GROUP, "v1", "selfsubjectaccessreviews"): "SelfSubjectAccessReview",
    (AUTHZ_GROUP, "v1", "localsubjectaccessreviews"): "LocalSubjectAccessReview",
    (AUTHZ_GROUP, "v1", "selfsubjectrulesreviews"): "SelfSubjectRulesReview",
}
ACCESS_KINDS = ("SubjectAccessReview", "SelfSubjectAccessReview", "LocalSubjectAccessReview")


class Reviews:
    """The answers of one API server: its authenticator chain (and whether it runs anonymous)."""

    def __init__(self, authenticator: Authenticator, now: Callable[[], float],
                 authorizer: Authorizer | None = None) -> None:
        self._authn = authenticator
        self._now = now  # wall clock, seconds: a SelfSubjectReview's creationTimestamp
        self._authz = authorizer  # the server's Node,RBAC chain; None: the single-administrator model

    def allowed(self, user: str, groups: tuple[str, ...]) -> tuple[bool, str]:
        """(allowed, reason) for any request of `user` in `groups`."""
        if self._authn.anonymous:
            return True, "nodeagent's API server runs with anonymous: true and allows every request"
        if MASTERS in groups:
            return True, ""
        return False, DENIED_REASON

    def create(self, kind: str, body: Any, caller: UserInfo | None = None, namespace: str = "") -> dict[str, Any]:
        """The review `body` (a TokenReview, SelfSubjectReview, SubjectAccessReview and its local and
        self forms, SelfSubjectRulesReview) with its status filled in; `caller` is who sent it (what
        the self reviews ask about), `namespace` the local review's path namespace."""
        if kind == "SelfSubjectReview":
            return self._self_subject(body, caller)
        if kind == "SelfSubjectRulesReview":
            return self._rules_review(body, caller)
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
        elif kind == "SubjectAccessReview" and self._authz is None:
            out["status"] = self._access_status(out["spec"])
        else:
            out["status"] = self._decide(kind, out, caller, namespace)
        return out

    def _decide(self, kind: str, review: dict[str, Any], caller: UserInfo | None, namespace: str) -> dict[str, Any]:
        """The authorizers' answer (pkg/registry/authorization/*subjectaccessreview): allowed, denied
        when an authorizer denies, and its reason."""
        spec = review["spec"]
        res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        resource, non_resource = isinstance(res, Mapping), isinstance(non, Mapping)
        if resource == non_resource:
            raise APIError(422, "Invalid", f'{kind}.authorization.k8s.io "" is invalid: spec: Invalid value: '
                           f'"null": exactly one of nonResourceAttributes or resourceAttributes must be specified')
        if kind == "SubjectAccessReview" or kind == "LocalSubjectAccessReview":
            user = UserInfo(str(spec.get("user") or ""), uid=str(spec.get("uid") or ""),
                            groups=tuple(str(g) for g in spec.get("groups") or ()))
            if not user.name and not user.groups:
                raise APIError(422, "Invalid", f'{kind}.authorization.k8s.io "" is invalid: spec.user: Invalid '
                               'value: "": at least one of user or group must be specified')
        else:
            if caller is None:
                raise bad_request("no user present on request")
            user = caller
        if kind == "LocalSubjectAccessReview" and resource and str(res.get("namespace") or "") != namespace:
            raise APIError(422, "Invalid", f'{kind}.authorization.k8s.io "" is invalid: '
                           f'spec.resourceAttributes.namespace: Invalid value: "{res.get("namespace") or ""}": must '
                           f'match metadata.namespace')
        if resource:
            attrs = Attributes(user, str(res.get("verb") or ""), True, namespace=str(res.get("namespace") or ""),
                               api_group=str(res.get("group") or ""), api_version=str(res.get("version") or ""),
                               resource=str(res.get("resource") or ""), subresource=str(res.get("subresource") or ""),
                               name=str(res.get("name") or ""))
        else:
            attrs = Attributes(user, str(non.get("verb") or ""), False, path=str(non.get("path") or ""))
        assert self._authz is not None
        decision = self._authz.authorize(attrs)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.decision == "deny":
            status["denied"] = True
        if decision.reason:
            status["reason"] = decision.reason
        return status

    def _rules_review(self, body: Any, caller: UserInfo | None) -> dict[str, Any]:
        """SelfSubjectRulesReview: the caller's rules in spec.namespace, as the rule resolvers list
        them (system:masters: everything; a node: the system:node role's static rules; then RBAC)."""
        if not isinstance(body, Mapping) or not isinstance(body.get("spec"), Mapping):
            raise bad_request('SelfSubjectRulesReview in version "v1" cannot be handled: spec is required')
        if caller is None:
            raise bad_request("no user present on request")
        if self._authz is None:
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        namespace = str(body["spec"].get("namespace") or "")
        rules, errors = self._authz.rules_for(caller, namespace)
        resource_rules: list[dict[str, Any]] = []
        non_resource_rules: list[dict[str, Any]] = []
        for rule in rules:
            if rule.get("nonResourceURLs"):
                non_resource_rules.append({"verbs": list(rule.get("verbs") or []),
                                           "nonResourceURLs": list(rule["nonResourceURLs"])})
            else:
                out = {k: list(rule.get(k) or []) for k in ("verbs", "apiGroups", "resources", "resourceNames")}
                resource_rules.append({k: v for k, v in out.items() if v or k == "verbs"})
        status: dict[str, Any] = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                                  "incomplete": bool(errors)}
        if errors:
            status["evaluationError"] = ", ".join(errors)
        return {"kind": "SelfSubjectRulesReview", "apiVersion": f"{AUTHZ_GROUP}/v1",
                "metadata": {"creationTimestamp": None}, "spec": dict(body["spec"]), "status": status}

    def _token_status(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            # kube-apiserver's tokenreview REST, word for word
            raise bad_request("token is required for TokenReview in authentication")
        audiences = spec.get("audiences")
        wanted = [str(a) for a in audiences] if isinstance(audiences, list) and audiences else []
        who, error, bound = self._authn.token_user(token, wanted)
        if who is None:
            return {"user": {}, "error": error}
        status: dict[str, Any] = {"authenticated": True, "user": _user_info(who)}
        # a service-account token answers the audiences it shares with the request; a token of the table is
        # not audience-bound: it is good for whatever the caller asks, else for the API's own audiences
        # (authenticator.WrapAudienceAgnosticToken)
        status["audiences"] = list(bound) if bound else (wanted or list(API_AUDIENCES))
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
    return f"{AUTHZ_GROUP}/v1" if kind in ACCESS_KINDS else f"{AUTHN_GROUP}/v1"


def review_kind(path: str) -> str | None:
    """The review kind a POST path creates (`/apis/authentication.k8s.io/v1/tokenreviews`), else None."""
    parts = [p for p in path.split("/") if p]
    if len(parts) == 6 and parts[0] == "apis" and parts[3] == "namespaces" and parts[5] == "localsubjectaccessreviews":
        return PATHS.get((parts[1], parts[2], parts[5]))
    if len(parts) != 4 or parts[0] != "apis" or parts[3] == "localsubjectaccessreviews":
        return None
    return PATHS.get((parts[1], parts[2], parts[3]))
