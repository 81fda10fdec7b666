"""A request's authorization attributes, as k8s.io/apiserver's RequestInfoFactory derives them
(pkg/endpoints/request/requestinfo.go) and authorizer.Attributes carries them.

Why apart from the HTTP edge: the verb of a request (get, list, watch, create, update, patch,
delete, deletecollection, or the lower-cased method of a non-resource path), its API group,
resource, subresource, namespace and name are pure string work, and the authorizers, the reviews
(SubjectAccessReview) and the 403 texts all read the same record. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nodeagent.apiserver.authn.user import UserInfo

NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
"""Subresources of a namespace (/api/v1/namespaces/NAME/status), not resources inside it."""

_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}

FieldRequirement = tuple[str, str, str]
"""One fieldSelector term: (field, operator "=" or "!=", value)."""


@dataclass(frozen=True)
class Attributes:
    """authorizer.AttributesRecord: who asks, and what for."""

    user: UserInfo
    verb: str
    resource_request: bool
    path: str = ""
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    field_selector: tuple[FieldRequirement, ...] = ()

    def field_equals(self, field: str, value: str) -> bool:
        """Whether the fieldSelector requires `field` to be exactly `value`."""
        return any(f == field and op == "=" and v == value for f, op, v in self.field_selector)


def parse_field_selector(text: str) -> tuple[FieldRequirement, ...]:
    """fields.ParseSelector's terms (`a=b`, `a==b`, `a!=b`, comma-separated); a malformed term is
    left out here (the request itself is refused with 400 after authorization, as upstream)."""
    out: list[FieldRequirement] = []
    for term in (t.strip() for t in text.split(",")):
        if "!=" in term:
            field, _, value = term.partition("!=")
            out.append((field.strip(), "!=", value.strip()))
        elif "=" in term:
            field, _, value = term.partition("=")
            out.append((field.strip(), "=", value.lstrip("=").strip()))
    return tuple(out)


def _path_segment_ok(name: str) -> bool:
    return name not in (".", "..") and "/" not in name and "%" not in name


def request_attributes(user: UserInfo, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """RequestInfoFactory.NewRequestInfo for one request: /api/v1/... and /apis/GROUP/VERSION/...
    are resource requests (the legacy /watch/ prefix included); anything else is a non-resource
    request whose verb is the lower-cased method."""
    parts = [p for p in path.split("/") if p]
    plain = Attributes(user, method.lower(), False, path=path)
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return plain
    verb = _METHOD_VERBS.get(method.upper(), method.lower())
    if rest[:1] == ["watch"]:
        verb, rest = "watch", rest[1:]
    if not rest:
        return plain
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    selector = parse_field_selector(query.get("fieldSelector", ""))
    if not name and verb == "get":
        verb = "watch" if query.get("watch", "").lower() in ("true", "1") else "list"
        exact = [v for f, op, v in selector if f == "metadata.name" and op == "="]
        if exact and _path_segment_ok(exact[0]):
            name = exact[0]
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(user, verb, True, path=path, namespace=namespace, api_group=group, api_version=version,
                      resource=resource, subresource=subresource, name=name, field_selector=selector)


def forbidden_message(attrs: Attributes) -> str:
    """responsewriters.forbiddenMessage, with its HTML sanitizer (& < > escaped)."""
    user = attrs.user.name
    if not attrs.resource_request:
        text = f"User {_q(user)} cannot {attrs.verb} path {_q(attrs.path)}"
    else:
        resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        where = f"in the namespace {_q(attrs.namespace)}" if attrs.namespace else "at the cluster scope"
        text = f"User {_q(user)} cannot {attrs.verb} resource {_q(resource)} in API group {_q(attrs.api_group)} {where}"
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def forbidden_status_message(attrs: Attributes, reason: str) -> str:
    """The Status message of ForbiddenStatusError: `<resource>[.group] "<name>" is forbidden: ...`."""
    text = forbidden_message(attrs)
    if reason:
        text = f"{text}: {reason}"
    if not attrs.resource:
        return f"forbidden: {text}"
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    if not attrs.name:
        return f"{qualified} is forbidden: {text}"
    return f"{qualified} {_q(attrs.name)} is forbidden: {text}"


def _q(text: str) -> str:
    """Go's %q for the printable strings these texts carry."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
