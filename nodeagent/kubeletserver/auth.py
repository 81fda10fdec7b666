"""The kubelet's authorization attributes for a request path, and the texts of its refusals.

Why a pure module: which SubjectAccessReview a request needs is a rule of upstream's
(pkg/kubelet/server/auth.go GetRequestAttributes) that clients depend on (metrics-server asks
for nodes/metrics and nodes/stats, Prometheus for nodes/metrics, NFD for nodes/configz or
nodes/proxy); kept apart so it is tested as a table. Under the KubeletFineGrainedAuthz gate
(beta and on by default since 1.33) /pods, /runningpods, /healthz and /configz check a
fine-grained subresource first (pods, healthz, configz) and fall back to nodes/proxy; the
request is allowed if either is. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodeagent.util.x509subject import CREDENTIAL_ID, identity_of_subject

UNAUTHORIZED = "Unauthorized"
VERBS = {"POST": "create", "GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True)
class User:
    """user.Info of an authenticated request (extra as sorted (key, values) pairs: hashable, for the cache)."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))


@dataclass(frozen=True)
class Attributes:
    """One authorizer.AttributesRecord of a kubelet request: always resource nodes, version v1."""

    verb: str
    subresource: str
    name: str
    path: str


def _is_subpath(subpath: str, path: str) -> bool:
    """auth.go isSubpath: `subpath` is `path` (trailing slash ignored) or below it."""
    path = path.removesuffix("/")
    return subpath == path or (subpath.startswith(path) and len(subpath) > len(path) and subpath[len(path)] == "/")


def subresources(path: str, *, fine_grained: bool) -> list[str]:
    """The subresources GetRequestAttributes checks for `path`, in order."""
    out: list[str] = []
    if fine_grained:
        for prefix, sub in (("/allocatedPods", "pods"), ("/pods", "pods"), ("/healthz", "healthz"),
                            ("/configz", "configz"), ("/runningpods/", "pods")):
            if _is_subpath(path, prefix):
                out.append(sub)
                break
    for prefix, sub in (("/stats/", "stats"), ("/metrics", "metrics"), ("/logs/", "log"),
                        ("/checkpoint/", "checkpoint"), ("/statusz", "statusz"), ("/flagz", "configz")):
        if _is_subpath(path, prefix):
            out.append(sub)
            break
    else:
        out.append("proxy")
    return out


def request_attributes(method: str, path: str, node: str, *, fine_grained: bool) -> list[Attributes]:
    verb = VERBS.get(method, "")
    return [Attributes(verb, sub, node, path) for sub in subresources(path, fine_grained=fine_grained)]


def forbidden_text(user: User, attrs: Sequence[Attributes]) -> str:
    """The kubelet's 403 body: Forbidden (user=U, verb=V, resource=nodes, subresource(s)=[a b])."""
    subs = " ".join(a.subresource for a in attrs)
    verb = attrs[0].verb if attrs else ""
    return f"Forbidden (user={user.name}, verb={verb}, resource=nodes, subresource(s)=[{subs}])\n"


def user_of_certificate(subject: Sequence[Sequence[tuple[str, str]]], der: bytes | None = None) -> User | None:
    """CN user, O groups, userId as uid of a verified client certificate's subject (ssl's getpeercert()
    form), and its SHA-256 as the credential id when its DER bytes are given, as the x509 authenticator's
    CommonNameUserConversion; None without a common name."""
    found = identity_of_subject(subject, der)
    if found is None:
        return None
    extra = ((CREDENTIAL_ID, (found.credential_id,)),) if found.credential_id else ()
    return User(found.name, found.groups, found.uid, extra)


def bearer_token(header: str | None) -> str | None:
    """The token of an Authorization header as k8s.io/apiserver's bearertoken authenticator parses it."""
    if header is None:
        return None
    parts = header.strip().split(" ")
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]
