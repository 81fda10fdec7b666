"""One shared copy of the managedFields sets that many stored objects hold alike.

Every object written through the API server carries metadata.managedFields, whose `fieldsV1`
is a tree of small dicts, most of them the empty `{}` leaves of FieldsV1 (`"f:image": {}`).
Objects made by one client from one template (a Deployment's pods, scheduler_perf's pods) have
the same tree, or the same subtrees, and the empty leaves are all alike: held once per object
they were about half of a stored pod's dicts (49 of 85 in bench/scheduler_peer.py's pods).
The store keeps committed objects immutable (its copy rule), so equal subtrees may be one
object; the key is the subtree's JSON text, so only exactly equal trees are joined.
"""

from __future__ import annotations

from typing import Any

import orjson

DEFAULT_SIZE = 4096
"""Distinct subtrees remembered; the table starts over when full (a bound, not an LRU: a
subtree already joined stays joined, only later copies of it are not)."""


class FieldsInterner:
    """A bounded table from a FieldsV1 subtree's JSON text (its hash: the text itself would cost as
    much as the trees saved) to the one copy of it to keep."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self._size = size
        self._table: dict[int, dict[str, Any]] = {}

    def intern(self, value: dict[str, Any]) -> dict[str, Any]:
        """The kept copy equal to `value`: `value` itself is never changed (it may be committed);
        on a miss a new dict of the kept children is made and remembered. FieldsV1 trees hold only
        dicts, so `==` confirms a hash's match exactly; a collision is a miss that is not kept."""
        key = hash(orjson.dumps(value))
        hit = self._table.get(key)
        if hit is not None:
            if hit == value:
                return hit
            return value
        out = {k: self.intern(v) if type(v) is dict else v for k, v in value.items()} if value else value
        if len(self._table) >= self._size:
            self._table.clear()
        self._table[key] = out
        return out

    def share_managed_fields(self, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """Point the fieldsV1 of `obj`'s managedFields entries at the kept copies, before `obj` is
        committed. The list and the entries `old` (the version `obj` replaces) holds too are left
        as they are: they are committed already and were joined when written."""
        entries = obj["metadata"].get("managedFields")
        if type(entries) is not list or not entries:
            return
        old_entries = (old or {}).get("metadata", {}).get("managedFields")
        if entries is old_entries:
            return
        kept = {id(e) for e in old_entries} if type(old_entries) is list else set()
        for i, entry in enumerate(entries):
            if type(entry) is not dict or id(entry) in kept:
                continue
            fields = entry.get("fieldsV1")
            if type(fields) is dict:
                shared = self.intern(fields)
                if shared is not fields:
                    entries[i] = {**entry, "fieldsV1": shared}
