"""Every built-in kind, declared once: one module per API group, `BUILTIN` in discovery's order.

Adding a served kind is its `Kind` in its group's module (added to that module's KINDS) plus its
schema (apiserver/schema/) and, when the store must check it, its validation in objects/.
Everything else (the store's registry, the API catalog, conversion, strategies, field
selectors, tables) is derived from the declaration (model.py says how). A leaf: imports nothing
from the rest of nodeagent, so the store, the object model and the API server all may read it.
"""

from __future__ import annotations

from nodeagent.kinds import apiextensions, coordination, core, resource
from nodeagent.kinds.model import Kind

BUILTIN: tuple[Kind, ...] = (*core.KINDS, *coordination.KINDS, *resource.KINDS, *apiextensions.KINDS)
"""The built-in kinds; discovery lists groups in the order their kinds first appear here."""

_BY_KIND = {k.kind: k for k in BUILTIN}


def by_kind(kind: str) -> Kind | None:
    """The declaration of a built-in kind, None for any other (custom resources)."""
    return _BY_KIND.get(kind)


__all__ = ["BUILTIN", "Kind", "by_kind"]
