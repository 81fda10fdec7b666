"""metadata.managedFields: decoding, encoding and capping the per-manager field sets.

Why apart from fieldmanager.py: the wire form has rules of its own that clients see (which entries
are one manager, their order, the "ancient-changes" bucket past ten updaters, how a manager is
named in conflict messages), all from k8s.io/apimachinery's managedfields/internal
(managedfields.go, capmanagers.go, conflict.go). Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple

from nodeagent.apiserver.apply.fieldset import FieldSet, fieldset_from_fieldsv1, fieldset_to_fieldsv1

MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"


class ManagerKey(NamedTuple):
    """One managedFields entry's identity. Appliers keep one entry whatever version they apply
    at (api_version is "" here); updaters have one entry per version."""

    manager: str
    operation: str
    api_version: str = ""
    subresource: str = ""

    @classmethod
    def of(cls, manager: str, operation: str, api_version: str, subresource: str = "") -> ManagerKey:
        return cls(manager, operation, "" if operation == "Apply" else api_version, subresource)

    def identifier(self) -> str:
        """The JSON upstream keys managers by (and sorts conflict messages by)."""
        fields = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        fields["subresource"] = self.subresource
        return json.dumps({k: v for k, v in fields.items() if v}, separators=(",", ":"), ensure_ascii=False)

    def describe(self) -> str:
        """`"kubectl" `, `"kube-controller-manager" using apps/v1`: the manager in messages."""
        text = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource, ensure_ascii=False)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text


@dataclass
class VersionedSet:
    fields: FieldSet
    api_version: str
    applied: bool
    wire: Mapping[str, Any] | None = field(default=None, compare=False)
    """The stored FieldsV1 `fields` was read from (this server's own encoding), written again as
    is while the set is the very one read: a write leaves most managers' sets alone."""


Managed = dict[ManagerKey, VersionedSet]
Times = dict[ManagerKey, "str | None"]


class StoredSets:
    """The FieldSet of each stored FieldsV1, by the identity of its dict: a stored object is never
    changed (the store's copy rule), its versions share the entries a write leaves alone, and the
    store's ValueInterner holds equal FieldsV1 trees of different objects once, so every write over
    a stored object asks again for sets parsed before (a pod's status write parsed its two or three
    managers' sets, ~60 us, to change one). A FieldSet is never changed once built (fieldset.py),
    so one may serve every caller. Bounded: the table starts over when full; each entry keeps its
    dict alive (a replaced version's too, until then), so an id is not reused while it is in the
    table. 1024: a pod's writes follow one another within seconds, and the bench's 500-pod batch
    kept ~1000 distinct sets of ~600 bytes."""

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._table: dict[int, tuple[Any, FieldSet]] = {}

    def get(self, raw: Any) -> FieldSet:
        """fieldset_from_fieldsv1(raw) for a stored (never mutated) FieldsV1 `raw`."""
        hit = self._table.get(id(raw))
        if hit is not None and hit[0] is raw:
            return hit[1]
        fields = fieldset_from_fieldsv1(raw)
        if len(self._table) >= self._size:
            self._table.clear()
        self._table[id(raw)] = (raw, fields)
        return fields


_STORED_SETS = StoredSets()


def decode_managed_fields(entries: Any, *, stored: bool = False) -> tuple[Managed, Times]:
    """The sets and times of a managedFields list (ValueError with upstream's texts when bad).
    `stored`: the list is the stored object's (encoded here, never changed), each set keeps its FieldsV1
    and is parsed once per FieldsV1 dict (StoredSets)."""
    managed: Managed = {}
    times: Times = {}
    if entries is None:
        return managed, times
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ValueError(f"managed fields entry {i} must be an object")
        operation = entry.get("operation")
        if operation not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = entry.get("apiVersion") or ""
        if not api_version:
            raise ValueError("apiVersion must not be empty")
        fields_type = entry.get("fieldsType") or ""
        if not fields_type:
            raise ValueError(f"missing fieldsType in managed fields entry {i}")
        if fields_type != "FieldsV1":
            raise ValueError(f"invalid fieldsType {json.dumps(fields_type)} in managed fields entry {i}")
        key = ManagerKey.of(
            str(entry.get("manager") or ""), operation, api_version, str(entry.get("subresource") or "")
        )
        raw = entry.get("fieldsV1") or {}
        fields = _STORED_SETS.get(raw) if stored else fieldset_from_fieldsv1(raw)
        managed[key] = VersionedSet(fields, api_version, operation == "Apply", raw if stored else None)
        times[key] = entry.get("time")
    return managed, times


@lru_cache(maxsize=1024)
def _seconds(time: str | None) -> int:
    """An entry's time in whole seconds (the sort key); remembered: every write with two managers or
    more sorts its entries, whose times repeat (each a second's stamp)."""
    if not time:
        return 0
    try:
        return int(datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0


def encode_managed_fields(managed: Managed, times: Times) -> list[dict[str, Any]]:
    """The managedFields list: Apply entries before Update ones, then oldest first, then by
    manager, version and subresource (upstream's sort)."""
    entries: list[dict[str, Any]] = []
    for key, vs in managed.items():
        entry: dict[str, Any] = {}
        if key.manager:
            entry["manager"] = key.manager
        entry["operation"] = "Apply" if vs.applied else key.operation
        entry["apiVersion"] = vs.api_version
        if times.get(key):
            entry["time"] = times[key]
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = vs.wire if vs.wire is not None else fieldset_to_fieldsv1(vs.fields)
        if key.subresource:
            entry["subresource"] = key.subresource
        entries.append(entry)
    return sort_entries(entries)


def sort_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`entries` in upstream's order (sortEncodedManagedFields), sorted in place: by operation, the
    time's second (none: 0), manager, version and subresource."""
    if len(entries) < 2:
        return entries  # one entry is in order: its sort key parses its time
    entries.sort(
        key=lambda e: (
            e.get("operation", ""),
            _seconds(e.get("time")),
            e.get("manager", ""),
            e.get("apiVersion", ""),
            e.get("subresource", ""),
        )
    )
    return entries


def cap_update_managers(managed: Managed, times: Times, limit: int = MAX_UPDATE_MANAGERS) -> Managed:
    """Past `limit` updaters, fold the oldest into one "ancient-changes" entry per version so
    managedFields cannot grow without bound."""
    updaters = [k for k, vs in managed.items() if not vs.applied]
    if len(updaters) <= limit:
        return managed
    out = dict(managed)
    updaters.sort(key=lambda k: (_seconds(times.get(k)), k.identifier()))
    first_of_version: dict[str, ManagerKey] = {}
    length = len(updaters)
    for key in updaters:
        if length <= limit:
            break
        vs = out[key]
        bucket = ManagerKey.of(ANCIENT_CHANGES, "Update", vs.api_version)
        first = first_of_version.get(vs.api_version)
        if first is None:
            first_of_version[vs.api_version] = key
            continue
        if bucket not in out:
            out[bucket] = out.pop(first)
        out[bucket] = VersionedSet(vs.fields.union(out[bucket].fields), vs.api_version, vs.applied)
        del out[key]
        length -= 1
        times[bucket] = times.get(key)
    return out
