"""Impersonation: a request acting as another user through the Impersonate-User, -Group, -Uid and
-Extra-* headers, as kube-apiserver v1.37 decides it (k8s.io/apiserver pkg/endpoints/filters/
impersonation: constrained_impersonation.go and mode.go, ConstrainedImpersonation on by default
since 1.36).

Why these steps: the requestor needs, for each thing it claims, the verb `impersonate` (legacy) on
users / groups / serviceaccounts (core group) and uids / userextras (authentication.k8s.io), or one
of the constrained modes of KEP-5284, tried first: `impersonate-on:<mode>:<verb>` on the request
itself plus `impersonate:<mode>` on the identity (associated-node: a pod's service account acting
as the node its token is bound to; arbitrary-node; serviceaccount; user-info). The first mode that
succeeds decides; when none does, the refusal is the first mode's that applied, and the mode that
last worked for a requestor is tried first (upstream's per-username memory, which therefore also
picks the refusal text). The impersonated user gets system:authenticated (or system:unauthenticated
for system:anonymous), a service account its groups when none were asked for, a node (constrained)
exactly system:nodes.

Difference, on purpose: upstream caches a successful check for 10 s; nodeagent authorizes every
request, so a revoked grant stops impersonation at once. Pure: no I/O, no HTTP.
"""

from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from nodeagent.apiserver.authn.user import (
    ALL_AUTHENTICATED,
    ALL_UNAUTHENTICATED,
    ANONYMOUS,
    NODE_USER_PREFIX,
    NODES_GROUP,
    SERVICE_ACCOUNT_PREFIX,
    SERVICE_ACCOUNTS_GROUP,
    SYSTEM_PRIVILEGED_GROUP,
    UserInfo,
)
from nodeagent.apiserver.authz.attributes import Attributes, forbidden_status_message
from nodeagent.apiserver.authz.chain import Authorizer
from nodeagent.apiserver.errors import APIError

USER_HEADER = "Impersonate-User"
UID_HEADER = "Impersonate-Uid"
GROUP_HEADER = "Impersonate-Group"
EXTRA_PREFIX = "Impersonate-Extra-"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"  # serviceaccount.NodeNameKey
AUTHN_GROUP, AUTHN_VERSION = "authentication.k8s.io", "v1"
MANY_CHECKS = 4  # manyAuthorizationChecksInLoop: from this many groups or extras, one `*` check first
MEMORY = 10_000  # the mode-index LRU's size

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_RE = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_LABEL_RE = re.compile(rf"^{_LABEL}$")
_HTTP_PATH = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE = re.compile(rf"^{_HTTP_PATH}$")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 rf"validation is '{_LABEL}(\.{_LABEL})*')")


@dataclass(frozen=True)
class Wanted:
    """The identity the headers ask for, as given (no defaulting): user.DefaultInfo of the headers."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def only_name(self) -> bool:
        return not self.uid and not self.groups and not self.extra


def _go_q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _go_strings(values: Iterable[str]) -> str:
    return "[]string{" + ", ".join(_go_q(v) for v in values) + "}"


def _go_info(wanted: Wanted) -> str:
    """Go's %#v of the *user.DefaultInfo (the 400's text)."""
    groups = _go_strings(wanted.groups) if wanted.groups else "[]string(nil)"
    extra = ("map[string][]string{" + ", ".join(f"{_go_q(k)}:{_go_strings(v)}" for k, v in sorted(wanted.extra.items()))
             + "}") if wanted.extra else "map[string][]string(nil)"
    return (f"&user.DefaultInfo{{Name:{_go_q(wanted.name)}, UID:{_go_q(wanted.uid)}, Groups:{groups}, "
            f"Extra:{extra}}}")


def _extra_key(encoded: str) -> str:
    """unescapeExtraKey: %-decoded, or kept as sent when the escapes are malformed."""
    return encoded if _BAD_ESCAPE.search(encoded) else unquote(encoded, errors="strict")


def wanted_from_headers(headers: Iterable[tuple[str, str]]) -> Wanted | None:
    """processImpersonationHeaders: None when no user is impersonated; 400 when a uid, group or
    extra comes without a user name. Header names are matched case-insensitively, as Go's
    canonical header keys are."""
    name = uid = ""
    seen_name = seen_uid = False
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    has_extra = False
    for key, value in headers:
        low = key.lower()
        if low == USER_HEADER.lower():
            if not seen_name:
                name, seen_name = value, True
        elif low == UID_HEADER.lower():
            if not seen_uid:
                uid, seen_uid = value, True
        elif low == GROUP_HEADER.lower():
            groups.append(value)
        elif low.startswith(EXTRA_PREFIX.lower()):
            has_extra = True
            try:
                extra_key = _extra_key(low[len(EXTRA_PREFIX):])
            except UnicodeDecodeError:
                extra_key = low[len(EXTRA_PREFIX):]
            extra.setdefault(extra_key, []).append(value)
    wanted = Wanted(name, uid, tuple(groups), {k: tuple(v) for k, v in extra.items()})
    if not name and (uid or groups or has_extra):
        raise APIError(400, "BadRequest", f"requested {_go_info(wanted)} without impersonating a user name")
    return wanted if name else None


def node_username(username: str) -> str | None:
    """isNodeUsername: the node name of system:node:NAME when NAME is a DNS subdomain."""
    if not username.startswith(NODE_USER_PREFIX):
        return None
    name = username[len(NODE_USER_PREFIX):]
    return name if len(name) <= 253 and _SUBDOMAIN_RE.match(name) else None


def service_account_username(username: str) -> tuple[str, str] | None:
    """serviceaccount.SplitUsername: (namespace, name) of system:serviceaccount:NS:NAME."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX):].split(":")
    if len(parts) != 2:
        return None
    namespace, name = parts
    if len(namespace) > 63 or not _LABEL_RE.match(namespace) or len(name) > 253 or not _SUBDOMAIN_RE.match(name):
        return None
    return namespace, name


def _validate_extra(extra: Mapping[str, tuple[str, ...]]) -> str:
    """validateExtra's refusal text, "" when the extras are acceptable."""
    for key, values in extra.items():
        if not key:
            return "impersonating the empty string key in extra is not allowed"
        host, sep, path = key.partition("/")
        prefix = "impersonating an invalid key in extra is not allowed: extra.key: Invalid value: "
        if not sep or not host or not path:
            return prefix + f'{_go_q(key)}: must be a domain-prefixed path (such as "acme.io/foo")'
        if len(host) > 253:
            return prefix + f"{_go_q(host)}: must be no more than 253 characters"
        if not _SUBDOMAIN_RE.match(host):
            return prefix + f"{_go_q(host)}: {SUBDOMAIN_MSG}"
        if not _HTTP_PATH_RE.match(path):
            return prefix + f"{_go_q(path)}: Invalid path (regex used for validation is '{_HTTP_PATH}')"
        if key != key.lower():
            return f"impersonating a non-lowercase key in extra is not allowed: {_go_q(key)}"
        if not values:
            return "impersonating empty values in extra is not allowed"
        if "" in values:
            return "impersonating the empty string value in extra is not allowed"
    return ""


def _forbidden(attrs: Attributes, reason: str) -> APIError:
    """responsewriters.ForbiddenStatusError (details name, group, kind = the resource)."""
    return APIError(403, "Forbidden", forbidden_status_message(attrs, reason),
                    details={k: v for k, v in (("name", attrs.name), ("group", attrs.api_group),
                                               ("kind", attrs.resource)) if v},
                    empty_details=True)


class _Refused(Exception):
    def __init__(self, error: APIError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(frozen=True)
class _Mode:
    """One impersonation mode: its verb, whether it is constrained, and (for the node modes) the
    name the identity checks carry."""

    name: str
    constrained: bool
    star_name: bool = False  # associated-node: one grant for every node name ("*")

    @property
    def verb(self) -> str:
        return f"impersonate:{self.name}" if self.constrained else "impersonate"

    def applies(self, wanted: Wanted, requestor: UserInfo) -> bool:
        if self.name == "associated-node":
            node = node_username(wanted.name)
            sa = service_account_username(requestor.name)
            bound = requestor.extra.get(NODE_NAME_KEY, ())
            return (wanted.only_name() and node is not None and sa is not None and len(bound) == 1
                    and bound[0] == node)
        if self.name == "arbitrary-node":
            return wanted.only_name() and node_username(wanted.name) is not None
        if self.name == "serviceaccount":
            return wanted.only_name() and service_account_username(wanted.name) is not None
        if self.name == "user-info":
            return node_username(wanted.name) is None and service_account_username(wanted.name) is None
        return True


MODES = (_Mode("associated-node", True, star_name=True), _Mode("arbitrary-node", True),
         _Mode("serviceaccount", True), _Mode("user-info", True), _Mode("legacy", False))


class Impersonator:
    """Decides impersonation with one server's authorizers; remembers per requestor name which mode
    last worked (bounded, as upstream's LRU)."""

    def __init__(self, authorizer: Authorizer) -> None:
        self._authz = authorizer
        self._last: OrderedDict[str, int] = OrderedDict()

    def impersonate(self, wanted: Wanted, request: Attributes) -> tuple[UserInfo, str]:
        """The user the request continues as and the constraint that allowed it ("" for legacy),
        or the refusal (APIError 403) of the first mode that applied."""
        requestor = request.user
        first: APIError | None = None
        last = self._last.get(requestor.name)
        order = ([last] if last is not None else []) + [i for i in range(len(MODES)) if i != last]
        for index in order:
            mode = MODES[index]
            if not mode.applies(wanted, requestor):
                continue
            try:
                user = self._check(mode, wanted, request)
            except _Refused as refused:
                first = first or refused.error
                continue
            self._remember(requestor.name, index)
            return user, mode.verb if mode.constrained else ""
        raise first or APIError(500, "InternalError", "Internal error occurred: all impersonation modes failed")

    def _remember(self, name: str, index: int) -> None:
        self._last[name] = index
        self._last.move_to_end(name)
        while len(self._last) > MEMORY:
            self._last.popitem(last=False)

    def _authorize(self, mode: _Mode, attrs: Attributes) -> None:
        if mode.star_name and attrs.verb == mode.verb:
            attrs = dataclasses.replace(attrs, name="*")
        decision = self._authz.authorize(attrs)
        if not decision.allowed:
            raise _Refused(_forbidden(attrs, decision.reason))

    def _identity(self, mode: _Mode, requestor: UserInfo, group: str, resource: str, name: str,
                  namespace: str = "", subresource: str = "") -> Attributes:
        return Attributes(requestor, mode.verb, True, namespace=namespace, api_group=group,
                          api_version=AUTHN_VERSION if group else "v1", resource=resource, subresource=subresource,
                          name=name)

    def _check(self, mode: _Mode, wanted: Wanted, request: Attributes) -> UserInfo:
        requestor = request.user
        if mode.constrained:  # the request itself: impersonate-on:<mode>:<verb>
            self._authorize(mode, dataclasses.replace(request, verb=f"impersonate-on:{mode.name}:{request.verb}"))
        core = AUTHN_GROUP if mode.constrained else ""
        groups = list(wanted.groups)
        who = self._identity(mode, requestor, core, "users", wanted.name)
        node = node_username(wanted.name) if mode.constrained else None
        if node is not None:
            who = dataclasses.replace(who, resource="nodes", name=node)
            if wanted.groups:
                raise _Refused(_forbidden(who, "when impersonating a node, cannot impersonate groups "
                                               f"[{' '.join(_go_q(g) for g in wanted.groups)}]"))
            groups = [NODES_GROUP]
        sa = service_account_username(wanted.name)
        if sa is not None:
            who = dataclasses.replace(who, resource="serviceaccounts", namespace=sa[0], name=sa[1])
            if mode.constrained and wanted.groups:
                raise _Refused(_forbidden(who, "when impersonating a service account, cannot impersonate groups "
                                               f"[{' '.join(_go_q(g) for g in wanted.groups)}]"))
            if not wanted.groups:
                groups = [SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{sa[0]}"]
        self._authorize(mode, who)
        if wanted.uid:
            self._authorize(mode, self._identity(mode, requestor, AUTHN_GROUP, "uids", wanted.uid))
        self._check_groups(mode, requestor, core, wanted.groups)
        self._check_extra(mode, requestor, wanted.extra)
        if wanted.name == ANONYMOUS:
            if ALL_UNAUTHENTICATED not in groups:
                groups.append(ALL_UNAUTHENTICATED)
        elif ALL_UNAUTHENTICATED not in groups and ALL_AUTHENTICATED not in groups:
            groups.append(ALL_AUTHENTICATED)
        return UserInfo(wanted.name, wanted.uid, tuple(groups), dict(wanted.extra))

    def _check_groups(self, mode: _Mode, requestor: UserInfo, group: str, groups: tuple[str, ...]) -> None:
        if not groups:
            return
        attrs = self._identity(mode, requestor, group, "groups", "")
        if mode.constrained:
            if "" in groups:
                raise _Refused(_forbidden(attrs, "impersonating the empty string group is not allowed"))
            if SYSTEM_PRIVILEGED_GROUP in groups:
                raise _Refused(_forbidden(dataclasses.replace(attrs, name=SYSTEM_PRIVILEGED_GROUP),
                                          "impersonating the system:masters group is not allowed"))
            if len(groups) >= MANY_CHECKS and self._authz.authorize(dataclasses.replace(attrs, name="*")).allowed:
                return
        for name in groups:
            self._authorize(mode, dataclasses.replace(attrs, name=name))

    def _check_extra(self, mode: _Mode, requestor: UserInfo, extra: Mapping[str, tuple[str, ...]]) -> None:
        if not extra:
            return
        attrs = self._identity(mode, requestor, AUTHN_GROUP, "userextras", "")
        if mode.constrained:
            refusal = _validate_extra(extra)
            if refusal:
                raise _Refused(_forbidden(attrs, refusal))
            large = len(extra) >= MANY_CHECKS or sum(len(v) for v in extra.values()) >= MANY_CHECKS
            if large and self._authz.authorize(dataclasses.replace(attrs, subresource="*", name="*")).allowed:
                return
        for key, values in extra.items():
            for value in values:
                self._authorize(mode, dataclasses.replace(attrs, subresource=key, name=value))


def user_string(user: UserInfo) -> str:
    """userString: name[group,group] (<empty> for no name), for the log line."""
    name = user.name or "<empty>"
    return f"{name}[{','.join(user.groups)}]" if user.groups else name
