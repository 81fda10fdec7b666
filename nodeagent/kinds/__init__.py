"""Every built-in kind, declared once: one module per API group, `BUILTIN` in discovery's order.

Adding a served kind is its `Kind` in its group's module (added to that module's KINDS; a new
group's module is added to BUILTIN below) plus its schema (apiserver/schema/builtin/; its
BUILTIN_GVK entry is derived) and, when the store must check it, its validation in objects/ with the hooks
`store_hooks` names. Derived from the declaration with no further edit: the store's registry
(store/kinds.py), the API catalog (discovery, OpenAPI paths, routing), conversion through the
storage version, the strategy with its reset fields and field selectors, and the table lookup.
Only a kind that behaves unlike the generic one also needs its strategy class
(apiserver/strategies.py `special`), its printer (apiserver/tables/) or its protobuf message
(nodeagent/protowire/, apiserver/protobuf/kinds.py); the declaration names the first two.
tests/unit/kinds checks that every name a declaration gives resolves. A leaf: imports nothing
from the rest of nodeagent, so the store, the object model and the API server all may read it.
"""

from __future__ import annotations

from nodeagent.kinds import (
    admissionregistration,
    apiextensions,
    apps,
    autoscaling,
    certificates,
    coordination,
    core,
    discovery,
    networking,
    node,
    policy,
    rbac,
    resource,
    scheduling,
    storage,
    storagemigration,
)
from nodeagent.kinds.model import Kind

BUILTIN: tuple[Kind, ...] = (
    *core.KINDS, *coordination.KINDS, *resource.KINDS, *apiextensions.KINDS,
    *storage.KINDS, *policy.KINDS, *scheduling.KINDS, *discovery.KINDS,
    *apps.APPS_KINDS, *apps.BATCH_KINDS, *rbac.KINDS,
    *autoscaling.KINDS, *admissionregistration.KINDS, *certificates.KINDS, *networking.KINDS,
    *storagemigration.KINDS, *node.KINDS,
)
"""The built-in kinds; discovery lists groups in the order their kinds first appear here."""

_BY_KIND = {k.kind: k for k in BUILTIN}


def by_kind(kind: str) -> Kind | None:
    """The declaration of a built-in kind, None for any other (custom resources)."""
    return _BY_KIND.get(kind)


__all__ = ["BUILTIN", "Kind", "by_kind"]
