"""List ordering and list helpers of strategic merge patch (the parts of
k8s.io/apimachinery/pkg/util/strategicpatch that decide where merged items land).

Why its own module: the order of a merged list is observable (containers, env, ports) and
upstream's rule is subtle: items named by the patch keep the patch's (or
`$setElementOrder`'s) relative order, items only on the server keep theirs, and the two are
interleaved using the live list's order, so a new item is placed before the server-only
items that follow it. Comparisons are Go interface equality (type and value). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nodeagent.apiserver.schema.gotext import go_type, go_v

DIRECTIVE = "$patch"


class SMPError(Exception):
    """A strategic merge patch failure; `kind` picks the Status: "bad" (400 BadRequest),
    "invalid" (the generic 422) or "internal" (a plain 500, how upstream answers errors
    strategicpatch does not type)."""

    def __init__(self, text: str, kind: str = "internal") -> None:
        super().__init__(text)
        self.kind = kind


NO_LIST_OF_LISTS = "lists of lists are not supported"
_COMPOSITE_KINDS = {"[]interface {}": "slice", "map[string]interface {}": "map"}


def go_kind(value: Any) -> str:
    """The dynamic Go type of a decoded JSON value, for interface equality and list checks:
    its type name, with "nil", "slice" and "map" for the ones that are not scalars."""
    if value is None:
        return "nil"
    name = go_type(value)
    return _COMPOSITE_KINDS.get(name, name)


def go_eq(left: Any, right: Any) -> bool:
    """Go's `==` on two interface{} values: same dynamic type and equal value."""
    if type(left) is str and type(right) is str:  # merge keys: the common case, no type names needed
        return left == right
    return go_kind(left) == go_kind(right) and left == right


def bad_arg_type(expected: str, actual: Any) -> SMPError:
    return SMPError(f"expected a {expected}, but received a {go_type(actual)}")


def no_merge_key(item: dict[str, Any], merge_key: str) -> SMPError:
    return SMPError(f"map: {go_v(item)} does not contain declared merge key: {merge_key}")


def element_kind(*lists: Sequence[Any]) -> str:
    """sliceElementType: every element of every list has one type, which is not a list."""
    kind = ""
    for items in lists:
        for item in items:
            current = go_kind(item)
            if not kind:
                if current == "slice":
                    raise SMPError(NO_LIST_OF_LISTS, "invalid")
                kind = current
            elif current != kind:
                raise SMPError(f"list element types are not identical: {go_v([list(x) for x in lists])}")
    if not kind:
        raise SMPError("no elements in any of the given slices")
    return kind


def find_by_key(items: Sequence[Any], merge_key: str, value: Any) -> int:
    """Index of the first map whose merge key equals `value`, or -1."""
    for idx, item in enumerate(items):
        if not isinstance(item, dict):
            raise SMPError(f"value for key {idx} is not a map")
        if merge_key in item and go_eq(item[merge_key], value):
            return idx
    return -1


def partition(merged: Sequence[Any], by: Sequence[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """Split `merged` into the items present in `by` and the server-only rest."""
    named: list[Any] = []
    server_only: list[Any] = []
    for item in merged:
        if not merge_key:
            present = any(go_eq(item, other) for other in by)
        else:
            if not isinstance(item, dict):
                raise bad_arg_type("map[string]interface {}", item)
            if merge_key not in item:
                raise no_merge_key(item, merge_key)
            present = find_by_key(by, merge_key, item[merge_key]) >= 0
        (named if present else server_only).append(item)
    return named, server_only


def normalize_order(named: list[Any], server_only: list[Any], named_order: Sequence[Any],
                    server_order: Sequence[Any], merge_key: str, kind: str) -> list[Any]:
    """normalizeElementOrder: sort each part by its own reference order, then interleave."""
    named = _sort_by(named, named_order, merge_key, kind)
    server_only = _sort_by(server_only, server_order, merge_key, kind)
    return _interleave(server_only, named, server_order, merge_key, kind)


def _index(items: Sequence[Any], value: Any, merge_key: str, kind: str) -> int:
    def key_of(item: Any) -> Any:
        if kind == "map":
            return item.get(merge_key) if isinstance(item, dict) else None
        return item

    wanted = key_of(value)
    for idx, item in enumerate(items):
        if go_eq(key_of(item), wanted):
            return idx
    return -1


def _sort_by(items: list[Any], order: Sequence[Any], merge_key: str, kind: str) -> list[Any]:
    to_delete: list[Any] = []
    if kind == "map":
        for group in (items, order):
            for item in group:
                if not isinstance(item, dict):
                    raise bad_arg_type("map[string]interface {}", item)
                if merge_key not in item:
                    raise no_merge_key(item, merge_key)
        to_delete = [item for item in items if item.get(DIRECTIVE) == "delete"]
        items = [item for item in items if item.get(DIRECTIVE) != "delete"]

    def less(a: Any, b: Any) -> bool:
        ia, ib = _index(order, a, merge_key, kind), _index(order, b, merge_key, kind)
        # upstream's comparator answers "less" whenever either item is not in the order list
        return ia < ib if ia >= 0 and ib >= 0 else True

    out = list(items)
    for i in range(1, len(out)):  # insertion sort: sort.SliceStable on short lists
        j = i
        while j > 0 and less(out[j], out[j - 1]):
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return out + to_delete


def _interleave(left: list[Any], right: list[Any], server_order: Sequence[Any], merge_key: str,
                kind: str) -> list[Any]:
    """mergeSortedSlice: take a server-only item (left) before a patch item (right) only when
    both are in the live list and it comes first there."""
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = _index(server_order, left[i], merge_key, kind)
            ri = _index(server_order, right[j], merge_key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def dedup(items: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if not any(go_eq(item, seen) for seen in out):
            out.append(item)
    return out


def remove_directives(value: Any) -> tuple[Any, bool]:
    """removeDirectives: drop every map carrying `$patch` from a value taken wholesale, so a
    directive never lands in a stored object; the bool says whether to keep the value."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        for key in list(value):
            kept, keep = remove_directives(value[key])
            if keep:
                value[key] = kept
            else:
                del value[key]
        return value, True
    if isinstance(value, list):
        out = []
        for item in value:
            kept, keep = remove_directives(item)
            if keep:
                out.append(kept)
        return out, True
    return value, True
