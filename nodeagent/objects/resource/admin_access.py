"""Admin access to devices (KEP-5018): only in namespaces labelled for it, checked at creation.

One responsibility: the API server's admission rule for ResourceClaims and ResourceClaimTemplates
whose requests ask for adminAccess: the containing namespace must carry the label
`resource.kubernetes.io/admin-access: "true"`, else the object is refused with upstream's
Forbidden error on the request's field path (every such request is reported). It reads the
namespace through the store transaction it is given, so it needs no store of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from nodeagent.errors import ValidationError
from nodeagent.store import validation as meta

ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
DETAIL = (f"admin access to devices requires the `{ADMIN_NAMESPACE_LABEL}: true` label on the "
          "containing namespace")


class Reader(Protocol):
    def try_get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...


def admin_paths(spec: Mapping[str, Any], prefix: str) -> list[str]:
    """The field paths of every request with adminAccess: true (storage version: `exactly`)."""
    requests = ((spec.get("devices") or {}).get("requests")) or []
    return [f"{prefix}.devices.requests[{i}].exactly.adminAccess" for i, r in enumerate(requests)
            if isinstance(r, Mapping) and ((r.get("exactly") or {}).get("adminAccess") is True)]


def check(kind: str, obj: Mapping[str, Any], reader: Reader) -> None:
    """Refuse `obj` when it asks for admin access outside an admin namespace."""
    spec = obj.get("spec") or {}
    if kind == "ResourceClaimTemplate":
        paths = admin_paths(spec.get("spec") or {}, "spec.spec")
    else:
        paths = admin_paths(spec, "spec")
    if not paths:
        return
    namespace = str((obj.get("metadata") or {}).get("namespace") or "default")
    ns = reader.try_get("Namespace", "", namespace)
    labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
    if labels.get(ADMIN_NAMESPACE_LABEL) == "true":
        return
    errors = [meta.forbidden(p, DETAIL) for p in paths]
    if len(errors) == 1:
        raise errors[0]
    raise ValidationError("", "[" + ", ".join(str(e) for e in errors) + "]")
