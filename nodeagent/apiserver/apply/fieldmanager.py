"""Server-side apply and the managedFields bookkeeping of every write.

Why one module: apply (PATCH with application/apply-patch+yaml) and every other write share
one ownership model: each manager owns a set of fields; a write takes the fields it changes;
an apply also gives up the fields it no longer applies, removing them when nobody else owns
them, and fails on fields another manager owns with a different value unless forced. This
follows k8s.io/apimachinery's managedfields/internal layers (strip of identity metadata,
"before-first-apply", the "kubectl" client-side-apply upgrade through the last-applied
annotation, the ten-updater cap) over structured-merge-diff's merge.Updater, built on the
walks in typedvalue.py. Pure: no I/O; the caller stores the result.

Known difference: every manager's set is read at the request's version (no conversion
between served versions).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from nodeagent.apiserver.apply.fieldset import FieldSet, Path, field_path, fieldset_to_fieldsv1, path_text
from nodeagent.apiserver.apply.managedfields import (
    Managed,
    ManagerKey,
    Times,
    VersionedSet,
    cap_update_managers,
    decode_managed_fields,
    encode_managed_fields,
)
from nodeagent.apiserver.apply.typedvalue import TypedValueError, Typer
from nodeagent.apiserver.errors import APIError, bad_request
from nodeagent.apiserver.jsoncopy import json_copy
from nodeagent.apiserver.schema.gotext import go_json
from nodeagent.apiserver.schema.model import Definitions, Schema

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
BEFORE_FIRST_APPLY = "before-first-apply"
_ANNOTATIONS_LIMIT = 256 * 1024

# Identity and bookkeeping fields nobody owns (upstream's stripMetaManager).
_STRIPPED = FieldSet.of(
    *(
        field_path(p)
        for p in (
            "apiVersion",
            "kind",
            "metadata",
            "metadata.name",
            "metadata.namespace",
            "metadata.creationTimestamp",
            "metadata.selfLink",
            "metadata.uid",
            "metadata.clusterName",
            "metadata.generation",
            "metadata.managedFields",
            "metadata.resourceVersion",
        )
    )
)


_STRIPPED_META = frozenset(p[1][2:] for p in _STRIPPED.paths() if len(p) == 2 and p[0] == "f:metadata")
"""The metadata fields of _STRIPPED (all scalars in ObjectMeta's schema: whatever their value, each is
one leaf of the set, which the strip removes)."""


class CreatedFields:
    """The FieldsV1 a create's writer gets, by the object it creates: objects made from one template
    (a controller's replicas, a benchmark's pods) own the same fields, and the typed walk that finds
    them is most of a create's managedFields cost (~0.4 ms for a defaulted pod, against ~10 us for
    the key). The key is the object's JSON text without the stripped metadata fields (their values
    never reach the set) and with its strings outside lists reduced to empty or not (_marked), with
    the schema it was walked with; a hit answers the very FieldsV1 dict
    computed first, which nobody writes into (a stored object is immutable, as the store's
    ValueInterner already relies on). Bounded: the table starts over when full."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._table: dict[tuple[int, bool, bytes], tuple[Schema, Definitions, Mapping[str, Any] | None]] = {}

    def fields(
        self, typer: Typer, obj: Mapping[str, Any], schema: Schema, ignored: FieldSet
    ) -> Mapping[str, Any] | None:
        """The FieldsV1 the writer of `obj` owns when creating it (None: no field). TypedValueError
        as the walk raises it (never remembered)."""
        key: tuple[int, bool, bytes] | None = None
        meta = obj.get("metadata")
        if type(meta) is dict:
            try:
                text = orjson.dumps(_marked({**obj, "metadata": {k: v for k, v in meta.items()
                                                                  if k not in _STRIPPED_META}}))
            except TypeError:  # orjson.JSONEncodeError: a value beyond JSON or 64-bit integers: walked each time
                text = None
            if text is not None:
                key = (id(schema), typer.builtin_kind, text)
                hit = self._table.get(key)
                if hit is not None and hit[0] is schema and hit[1] is typer.defs:
                    return hit[2]
        taken = _created_set(typer, obj, schema, ignored)
        wire = None if taken.empty() else fieldset_to_fieldsv1(taken)
        if key is not None:
            if len(self._table) >= self._size:
                self._table.clear()
            self._table[key] = (schema, typer.defs, wire)
        return wire


def _marked(value: Any) -> Any:
    """CreatedFields' key of `value`: each string outside lists as "" or "s" (empty or not), the rest as
    it is. What a create's set depends on is kept: the maps' keys (fields, labels, annotations), each
    value's JSON type (the walk's shapes), whether a value is its Go zero value (a string's zero is "";
    numbers and booleans are kept whole), and lists whole (an associative list's keys and a set's values
    are in the set). A string's own text never reaches the set outside a list: so the objects a
    controller makes from one template (Events naming their pod, uids, times, messages) share one walk."""
    t = type(value)
    if t is str:
        return "s" if value else ""
    if t is dict:
        return {k: _marked(v) for k, v in value.items()}
    return value


def _created_set(typer: Typer, obj: Mapping[str, Any], schema: Schema, ignored: FieldSet) -> FieldSet:
    """What _record_update gives the writer of a create (nothing live, nobody managing)."""
    cmp = typer.compare({}, obj, schema).exclude(ignored)
    return cmp.modified.union(cmp.added).difference(cmp.removed).recursive_difference(ignored).difference(_STRIPPED)


class ApplyConflict(APIError):
    """409 Conflict: fields another manager owns with a different value."""

    def __init__(self, entries: Sequence[tuple[ManagerKey, Path]]) -> None:
        by_manager: dict[str, tuple[ManagerKey, list[Path]]] = {}
        for key, path in entries:
            by_manager.setdefault(key.identifier(), (key, []))[1].append(path)
        ordered = [by_manager[ident] for ident in sorted(by_manager)]
        self.entries = [(key, path) for key, paths in ordered for path in paths]
        self.conflicts: list[tuple[str, str]] = [(key.manager, path_text(path)) for key, path in self.entries]
        if len(self.entries) == 1:
            key, path = self.entries[0]
            message = f"Apply failed with 1 conflict: conflict with {key.describe()}: {path_text(path)}"
        else:
            lines: list[str] = []
            for key, paths in ordered:
                lines.append(f"conflicts with {key.describe()}:")
                lines.extend(f"- {path_text(p)}" for p in paths)
            message = f"Apply failed with {len(self.entries)} conflicts: " + "\n".join(lines)
        super().__init__(409, "Conflict", message, details={"causes": self.causes()})

    def causes(self) -> list[dict[str, str]]:
        return [
            {"type": "FieldManagerConflict", "message": f"conflict with {key.describe()}", "field": path_text(path)}
            for key, path in self.entries
        ]


def _default_ignored(subresource: str) -> tuple[str, ...]:
    return ("status",) if not subresource else ("spec",) if subresource == "status" else ()


def _take_changes(
    typer: Typer,
    live: Any,
    new: Any,
    schema: Schema,
    managed: Managed,
    skip: ManagerKey | None,
    force: bool,
    ignored: FieldSet,
) -> tuple[Managed, FieldSet, FieldSet]:
    """Other managers lose the fields `new` changes or removes (merge.Updater.update); without
    force a changed field another manager owns is a conflict. Returns the new sets and the
    changed (added or modified) and removed fields."""
    cmp = typer.compare(live, new, schema).exclude(ignored)
    changed = cmp.modified.union(cmp.added)
    conflicts: list[tuple[ManagerKey, Path]] = []
    out: Managed = {}
    for key, vs in managed.items():
        rest = vs.fields
        if key != skip:
            lost = rest.intersection(changed)
            if not lost.empty():
                conflicts.extend((key, p) for p in lost.paths())
                rest = rest.difference(lost)
            if not cmp.removed.empty():
                rest = rest.difference(cmp.removed)
        if rest is vs.fields:
            if not rest.empty():
                out[key] = vs  # untouched: keeps the FieldsV1 it was read from
        elif not rest.empty():
            out[key] = VersionedSet(rest, vs.api_version, vs.applied)
    if conflicts and not force:
        raise ApplyConflict(conflicts)
    return out, changed, cmp.removed


def _record_update(
    typer: Typer,
    live: Any,
    new: Any,
    schema: Schema,
    managed: Managed,
    times: Times,
    key: ManagerKey,
    api_version: str,
    ignored: FieldSet,
    now: str,
) -> Managed:
    """A non-apply write: `key` takes the fields it changed; its time moves only when it took any."""
    out, changed, removed = _take_changes(typer, live, new, schema, managed, None, True, ignored)
    taken = changed.difference(removed).recursive_difference(ignored).difference(_STRIPPED)
    if not taken.empty():
        previous = out.get(key)
        fields = taken.union(previous.fields) if previous else taken
        out[key] = VersionedSet(fields, api_version, False)
        times[key] = now
    return cap_update_managers(out, times)


def _prune(typer: Typer, merged: Any, schema: Schema, managed: Managed, last: FieldSet) -> Any:
    """Remove what the applier applied last time and no longer does, unless someone owns it."""
    last_named = typer.ensure_named(last, schema)
    pruned = typer.remove_items(merged, last_named, schema)
    owned = FieldSet()
    for vs in managed.values():
        owned = owned.union(vs.fields)
    merged_set = typer.ensure_named(typer.field_set(merged, schema), schema)
    pruned_set = typer.ensure_named(typer.field_set(pruned, schema), schema)
    drop = merged_set.difference(pruned_set.union(typer.ensure_named(owned, schema)))
    pruned = typer.remove_items(merged, drop, schema)
    # Only what this applier owned before may go; unowned fields (defaults) stay.
    pruned_set = typer.ensure_named(typer.field_set(pruned, schema), schema)
    return typer.remove_items(merged, merged_set.difference(pruned_set).intersection(last_named), schema) or {}


def _apply_once(
    typer: Typer,
    live: dict[str, Any],
    config: dict[str, Any],
    config_set: FieldSet,
    schema: Schema,
    managed: Managed,
    key: ManagerKey,
    api_version: str,
    force: bool,
    ignored: FieldSet,
) -> tuple[Any, Managed]:
    merged = typer.merge(live, config, schema)
    last = managed.get(key)
    managed = {**managed, key: VersionedSet(config_set, api_version, True)}
    if last is not None and not last.fields.empty():
        merged = _prune(typer, merged, schema, managed, last.fields)
    managed, _, _ = _take_changes(typer, live, merged, schema, managed, key, force, ignored)
    if key in managed:
        mine = managed[key].fields.difference(_STRIPPED)
        if mine.empty():
            del managed[key]
        else:
            managed[key] = VersionedSet(mine, api_version, True)
    return merged, managed


def _allowed_by_last_applied(
    typer: Typer, live: Mapping[str, Any], schema: Schema, api_version: str
) -> FieldSet | None:
    """Fields a client-side `kubectl apply` set that still hold their last-applied value: the
    server lets `kubectl apply --server-side` take them over without a conflict."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, Mapping) else None
    if not text:
        return None
    try:
        last = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return None
    cmp = typer.compare(last, live, schema)
    return typer.field_set(last, schema).difference(cmp.modified).difference(cmp.added).difference(cmp.removed)


def _set_last_applied(obj: dict[str, Any], applied: Mapping[str, Any]) -> None:
    """Keep the client-side apply annotation in step after a "kubectl" server-side apply."""
    config = json_copy(dict(applied))
    config_annotations = (config.get("metadata") or {}).get("annotations")
    if isinstance(config_annotations, dict):
        config_annotations.pop(LAST_APPLIED, None)
    annotations = dict(obj["metadata"].get("annotations") or {})
    annotations[LAST_APPLIED] = go_json(config) + "\n"
    # Dropped rather than failing the write when it would not fit (upstream's SetLastApplied).
    if sum(len(k.encode()) + len(str(v).encode()) for k, v in annotations.items()) > _ANNOTATIONS_LIMIT:
        del annotations[LAST_APPLIED]
    obj["metadata"]["annotations"] = annotations


def _drop_nulls(value: Any) -> Any:
    """What the object is once decoded into its type: a null field is no field."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _gvk(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def _without(obj: dict[str, Any], paths: Sequence[str]) -> dict[str, Any]:
    for dotted in paths:
        *parents, last = dotted.split(".")
        node: Any = obj
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return obj


def _is_reset(entries: Any) -> bool:
    """`managedFields: []` or `[{}]` in a write asks for the field management to be dropped."""
    return isinstance(entries, list) and (not entries or (len(entries) == 1 and entries[0] == {}))


def apply(
    live: Mapping[str, Any] | None,
    applied: Mapping[str, Any],
    *,
    manager: str,
    force: bool,
    schema: Schema,
    defs: Definitions,
    api_version: str,
    now: str,
    ignore_paths: Sequence[str] | None = None,
    subresource: str = "",
    kind: str = "",
    builtin_kind: bool = True,
) -> dict[str, Any]:
    """The object after `manager` applies `applied` to `live` (None: the object is created).

    `ignore_paths` (dotted) are not applied nor owned through this endpoint; by default
    `status` for the main resource and `spec` for the status subresource. `kind`, when given,
    must match the configuration's. `builtin_kind`: see typedvalue.Typer. Raises ApplyConflict,
    or APIError (400 for a bad configuration, 500 for one that does not fit the schema)."""
    typer = Typer(defs, builtin_kind=builtin_kind)
    config_kind = str(applied.get("kind") or "")
    if applied.get("apiVersion") != api_version or (kind and config_kind != kind):
        raise bad_request(f"invalid object type: {_gvk(str(applied.get('apiVersion') or ''), config_kind)}")
    meta = applied.get("metadata")
    if isinstance(meta, Mapping) and meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    ignored_paths = _default_ignored(subresource) if ignore_paths is None else tuple(ignore_paths)
    ignored = FieldSet.of(*(field_path(p) for p in ignored_paths))
    config = _without(json_copy(dict(applied)), ignored_paths)
    live_obj: dict[str, Any] = json_copy(dict(live)) if live else {}
    live_meta = live_obj.get("metadata")
    live_entries = live_meta.pop("managedFields", None) if isinstance(live_meta, dict) else None
    try:
        managed, times = decode_managed_fields(live_entries)
    except ValueError as exc:
        raise APIError(500, "", f"failed to decode managed fields: {exc}") from None
    try:
        config_set = typer.field_set(config, schema, strict=True).recursive_difference(ignored)
    except TypedValueError as exc:
        config_meta = config.get("metadata") or {}
        where = f"{config_meta.get('namespace', '')}/{config_meta.get('name', '')}; {_gvk(api_version, config_kind)}"
        raise APIError(500, "", f"failed to create typed patch object ({where}): {exc}") from None
    if not managed and live_obj:
        # An object nobody tracked yet: what it holds belongs to "before-first-apply".
        bfa = ManagerKey.of(BEFORE_FIRST_APPLY, "Update", api_version, subresource)
        managed = _record_update(typer, {}, live_obj, schema, managed, times, bfa, api_version, ignored, now)
    key = ManagerKey.of(manager, "Apply", api_version, subresource)
    args = (typer, live_obj, config, config_set, schema, managed, key, api_version)
    try:
        result, managed = _apply_once(*args, force, ignored)
    except ApplyConflict as conflict:
        allowed = _allowed_by_last_applied(typer, live_obj, schema, api_version) if manager == "kubectl" else None
        if allowed is None:
            raise
        remaining = [(k, p) for k, p in conflict.entries if not allowed.has(p)]
        if remaining:
            raise ApplyConflict(remaining) from None
        result, managed = _apply_once(*args, True, ignored)
    times[key] = now
    result = _drop_nulls(result)
    result.setdefault("metadata", {})
    annotations = result["metadata"].get("annotations") or {}
    if manager == "kubectl" and annotations.get(LAST_APPLIED):
        _set_last_applied(result, applied)
    entries = encode_managed_fields(managed, times)
    if entries:
        result["metadata"]["managedFields"] = entries
    return dict(result)


def update_managed_fields(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    manager: str,
    operation: str = "Update",
    schema: Schema,
    defs: Definitions,
    api_version: str,
    now: str,
    subresource: str = "",
    ignore_paths: Sequence[str] | None = None,
    builtin_kind: bool = True,
    created: CreatedFields | None = None,
) -> dict[str, Any]:
    """`new` (the object a create, update or patch stores) with its managedFields brought up to
    date: `manager` takes the fields that changed from `old` (None on create). `created`: the
    caller's memo of creates' sets (CreatedFields), used for a create nobody manages yet.

    managedFields written in `new` replace the live ones (how clients migrate ownership);
    `[]` or `[{}]` drops field management; a subresource write cannot change them. An object
    that has no managedFields stays untracked until it is applied to."""
    typer = Typer(defs, builtin_kind=builtin_kind)
    # Only the two metadata maps change here (managedFields taken out, put back): copies of them
    # and of the top level, not of the whole objects; the walks below only read. The result
    # shares everything else with `new` (the caller's own copy, which it replaces by the result).
    result = dict(new)
    meta = result.get("metadata")
    if not isinstance(meta, dict):
        return result
    meta = result["metadata"] = dict(meta)
    written = meta.pop("managedFields", None)
    live_obj: dict[str, Any] = dict(old) if old else {}
    live_meta = live_obj.get("metadata")
    live_entries = None
    if isinstance(live_meta, dict):
        live_meta = live_obj["metadata"] = dict(live_meta)
        live_entries = live_meta.pop("managedFields", None)
    managed: Managed = {}
    times: Times = {}
    if subresource or not _is_reset(written):
        try:
            managed, times = decode_managed_fields(None if subresource else written)
        except ValueError:
            managed = {}
        if not managed:
            try:
                managed, times = decode_managed_fields(live_entries, stored=True)
            except ValueError:
                managed, times = {}, {}
    creating = old is None or not (live_meta or {}).get("uid")
    if not managed and not creating:
        return result
    ignored_paths = _default_ignored(subresource) if ignore_paths is None else tuple(ignore_paths)
    ignored = FieldSet.of(*(field_path(p) for p in ignored_paths))
    key = ManagerKey.of(manager, operation, api_version, subresource)
    if created is not None and old is None and not managed:
        try:
            wire = created.fields(typer, result, schema, ignored)
        except TypedValueError:
            return result
        if wire is not None:
            meta["managedFields"] = encode_managed_fields(
                {key: VersionedSet(FieldSet(), api_version, False, wire)}, {key: now})
        return result
    try:
        managed = _record_update(typer, live_obj, result, schema, managed, times, key, api_version, ignored, now)
    except TypedValueError:
        # Like upstream's UpdateNoErrors: a write never fails over its bookkeeping.
        if live_entries:
            meta["managedFields"] = live_entries
        return result
    entries = encode_managed_fields(managed, times)
    if entries:
        meta["managedFields"] = entries
    return result
