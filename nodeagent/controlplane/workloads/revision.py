"""ControllerRevisions of StatefulSets and DaemonSets: the revision's data (both) and the
StatefulSet's name hash, as upstream's controller/history, statefulset/stateful_set_utils.go and
daemon/update.go write them.

Why exact: the StatefulSet controller names the revision `<set>-<hash>` and labels its pods
`controller-revision-hash=<that name>`; the real controller taking over finds its revision (and
counts pods as updated) only if the hash is the same. Upstream's data is getPatch(set): the
object encoded to JSON, read back into maps, and `{"spec":{"template":..., "$patch":"replace"}}`
marshalled again (map keys sorted, numbers through float64); the StatefulSet's hash is
history.HashControllerRevision: FNV-32 (not 32a) over those bytes, then the collision count in
decimal, rendered with SafeEncodeString. (A DaemonSet's revision has the same data but is named
by controller.ComputeHash of its template: podhash.py.) The template is rendered here as
encoding/json renders the Go struct (its omitempty fields dropped when empty, omitzero ones when
zero, the others kept with their zero values), from the Go type layout podhash.py reads. Difference: a quantity is
written as stored (kube-apiserver stores canonical forms; Go would canonicalise here).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.controlplane.workloads import podhash
from nodeagent.kubeletstate.gohash import go_json

HASH_LABEL = "controller-revision-hash"
HISTORY_HASH_LABEL = "controller.kubernetes.io/hash"
"""history.ControllerRevisionHashLabel: a StatefulSet's revision carries its hash here (NewControllerRevision),
its pods the revision's name under HASH_LABEL; a DaemonSet's revision and pods use HASH_LABEL."""
FNV32_OFFSET, FNV32_PRIME = 0x811C9DC5, 0x01000193


def fnv32(data: bytes) -> int:
    """hash/fnv New32 (multiply, then xor)."""
    h = FNV32_OFFSET
    for byte in data:
        h = (h * FNV32_PRIME) & 0xFFFFFFFF
        h ^= byte
    return h


def go_json_value(go_type: str, value: Any) -> Any:
    """The value encoding/json writes for a Go value of `go_type` holding this JSON value, as
    plain data (dicts in no particular order)."""
    if go_type == "resource.Quantity":
        return str(value) if value is not None else "0"
    if go_type == "intstr.IntOrString":
        return value if isinstance(value, (int, str)) else 0
    if go_type == "v1.Time":
        return value or None
    info = podhash.go_types()[go_type]
    kind = info["kind"]
    if kind == "struct":
        obj = value if isinstance(value, Mapping) else {}
        out: dict[str, Any] = {}
        for _name, ftype, json_name, omit in info["fields"]:
            if json_name == ",inline":
                out.update(go_json_value(ftype, obj))
                continue
            if json_name == "-":
                continue
            raw = obj.get(json_name)
            if (omit and _empty(ftype, raw)) or (omit == "omitzero" and not raw):
                continue
            out[json_name] = go_json_value(ftype, raw)
        return out
    if kind == "ptr":
        return None if value is None else go_json_value(info["elem"], value)
    if kind in ("slice", "array"):
        return [go_json_value(info["elem"], v) for v in value] if value else None
    if kind == "map":
        return {str(k): go_json_value(info["elem"], v) for k, v in value.items()} if value else None
    if kind == "string":
        return "" if value is None else str(value)
    if kind in ("int", "uint"):
        return 0 if value is None else int(value)
    if kind == "bool":
        return bool(value)
    return value


def _empty(go_type: str, value: Any) -> bool:
    """encoding/json's isEmptyValue for the Go value: nil pointers, empty slices and maps, zero
    scalars; a struct never (Quantity, IntOrString and Time are structs)."""
    if go_type in ("resource.Quantity", "intstr.IntOrString", "v1.Time"):
        return False
    kind = podhash.go_types()[go_type]["kind"]
    if kind == "struct":
        return False
    if kind == "ptr":
        return value is None
    if kind in ("slice", "map", "array"):
        return not value
    return not value  # "", 0, false, None


def _sorted(value: Any) -> Any:
    """A value as it comes back from json.Unmarshal into interface{} and is marshalled again:
    object keys sorted."""
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def template_patch(template: Mapping[str, Any]) -> str:
    """getPatch (statefulset and daemon/update.go): the revision's data."""
    rendered = go_json_value(podhash.ROOT, template)
    rendered["$patch"] = "replace"
    return go_json(_sorted({"spec": {"template": rendered}}))


def hash_revision(data: str, collision_count: int | None = None) -> str:
    """history.HashControllerRevision over the revision's raw data."""
    payload = data.encode()
    if collision_count is not None:
        payload += str(collision_count).encode()
    return podhash.safe_encode(str(fnv32(payload)))
