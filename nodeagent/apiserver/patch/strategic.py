"""Strategic merge patch, as the API server applies it (StrategicMergeMapPatch in
k8s.io/apimachinery/pkg/util/strategicpatch/patch.go).

Why: kubectl's default patch type, `kubectl apply` (client side) and `kubectl edit` send
it. It is a JSON merge patch whose lists follow the field's patch strategy from the schema
(`patch_strategy`/`patch_merge_key`, upstream's struct tags): "merge" lists merge items by
merge key (or as a set of scalars), other lists are replaced. Directives: `$patch`
(replace/delete/merge) in maps and list items, `$deleteFromPrimitiveList/<field>`,
`$setElementOrder/<field>` and `$retainKeys`. Fields the schema does not know are handled as
when upstream has no patch metadata: maps merge, lists replace. Errors carry upstream's texts
and Status (interpretStrategicMergePatchError in endpoints/handlers/patch.go). Pure: inputs
are never modified.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.jsoncopy import json_copy
from nodeagent.apiserver.patch.errors import PatchError
from nodeagent.apiserver.patch.jsonpatch import prune_nulls
from nodeagent.apiserver.patch.order import (
    DIRECTIVE,
    SMPError,
    bad_arg_type,
    dedup,
    element_kind,
    find_by_key,
    go_eq,
    go_kind,
    no_merge_key,
    normalize_order,
    partition,
    remove_directives,
)
from nodeagent.apiserver.schema.gotext import go_s, go_v, json_kind
from nodeagent.apiserver.schema.model import Definitions, Schema

DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER = "$setElementOrder"
RETAIN_KEYS = "$retainKeys"

BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
_SLICE = "[]interface {}"
_MAP = "map[string]interface {}"


def strategic_merge_patch(doc: Mapping[str, Any], patch: Any, schema: Schema, defs: Definitions, *,
                          share: bool = False) -> dict[str, Any]:
    """Apply a strategic merge patch (the decoded request body) to `doc` of type `schema`.

    `share`: the result shares with `doc` the parts the patch does not name (only the maps on the
    way to what it names are copied), for a caller that never writes into the result (a status
    write: nothing but the merge changes it); the merge itself still works on copies only."""
    if patch is None:  # a JSON null body decodes to an empty map upstream
        return dict(doc) if share else json_copy(dict(doc))
    if not isinstance(patch, Mapping):
        raise PatchError.bad_request(
            f"json: cannot unmarshal {json_kind(patch)} into Go value of type map[string]interface {{}}")
    try:
        original = _copy_named(doc, patch) if share else json_copy(dict(doc))
        return _Merger(defs).map(original, json_copy(dict(patch)), schema)
    except SMPError as err:
        text = str(err)
        if err.kind == "bad":
            raise PatchError.bad_request(text) from None
        if err.kind == "invalid":
            raise PatchError.rejected(text) from None
        raise PatchError.internal(text) from None


def _copy_named(doc: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """`doc` copied where the merge may write: the map itself, maps the patch descends into (a map
    in the patch), deep copies of the values it sets or changes in any other way (lists, the
    targets of $setElementOrder/ and $deleteFromPrimitiveList/ directives); the rest shared."""
    out = dict(doc)
    for pkey, pval in patch.items():
        key = pkey.partition("/")[2] if pkey.startswith("$") else pkey
        if key not in out:
            continue
        value = out[key]
        if isinstance(pval, Mapping) and type(value) is dict and pkey == key:
            out[key] = _copy_named(value, pval)
        else:
            out[key] = json_copy(value)
    return out


def _split_strategy(schema: Schema | None) -> str:
    """extractRetainKeysPatchStrategy: the strategy other than retainKeys ("" when none)."""
    raw = schema.patch_strategy if schema is not None else ""
    strategies = raw.split(",") if raw else []
    if len(strategies) == 1:
        return "" if strategies[0] == "retainKeys" else strategies[0]
    if len(strategies) == 2 and "retainKeys" in strategies:
        return strategies[1] if strategies[0] == "retainKeys" else strategies[0]
    if strategies:
        raise SMPError(f"unexpected patch strategy: {go_v(strategies)}")
    return ""


def _type_name(schema: Schema) -> str:
    """LookupPatchMeta.Name() of an item schema: the Go kind of upstream's element type."""
    if schema.properties:
        return "struct"
    if schema.additional_properties is not None:
        return "map"
    kinds = {"string": "string", "integer": "int64", "number": "float64", "boolean": "bool"}
    return kinds.get(schema.type, "interface")


def _strip_prefix(key: str, prefix: str, error: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise SMPError(error, "bad")
    return rest


class _Merger:
    """mergeMap / mergeSlice with the server-side options (MergeParallelList and
    IgnoreUnmatchedNulls both on); works in place on deep copies."""

    def __init__(self, defs: Definitions) -> None:
        self.defs = defs

    def field(self, schema: Schema | None, key: str) -> Schema | None:
        return self.defs.field(schema, key)

    def map(self, original: dict[str, Any] | None, patch: dict[str, Any], schema: Schema | None) -> dict[str, Any]:
        if DIRECTIVE in patch:
            directive = patch[DIRECTIVE]
            if directive == "replace":
                del patch[DIRECTIVE]
                return patch
            if directive == "delete":
                return {}
            raise SMPError(f"unknown patch type: {go_s(directive)} in map: {go_v(patch)}")
        if original is None:
            original = {}
        self._retain_keys(original, patch)
        self._set_element_order(original, patch, schema)
        for key, value in list(patch.items()):
            self._merge_field(original, key, value, schema)
        return original

    def _merge_field(self, original: dict[str, Any], key: str, value: Any, schema: Schema | None) -> None:
        delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if delete_list:
            key = _strip_prefix(key, DELETE_FROM_PRIMITIVE_LIST, BAD_PRIMITIVE_LIST) or key
        if value is None:
            original.pop(key, None)
            return
        current = original.get(key)
        # mergeMap recurses only into a value of the same Go type (int64 and float64 differ).
        if key not in original or go_kind(current) != go_kind(value):
            if not delete_list:
                self._take(original, key, value)
            return
        fschema = self.field(schema, key)
        strategy = _split_strategy(fschema)
        if isinstance(current, dict):
            original[key] = value if strategy == "replace" else self.map(current, value, fschema)
        elif isinstance(current, list):
            if strategy == "merge" or delete_list:
                merge_key = fschema.patch_merge_key if fschema is not None else ""
                original[key] = self.slice(current, value, self.defs.item(fschema), merge_key, delete_list)
            else:
                original[key] = value
        else:
            self._take(original, key, value)

    @staticmethod
    def _take(original: dict[str, Any], key: str, value: Any) -> None:
        prune_nulls(value)  # a null inside a value taken wholesale means nothing
        kept, keep = remove_directives(value)
        if keep:
            original[key] = kept
        else:
            original.pop(key, None)

    def _retain_keys(self, original: dict[str, Any], patch: dict[str, Any]) -> None:
        """`$retainKeys`: fields of the original not listed are cleared; every field the patch
        sets must be listed."""
        if RETAIN_KEYS not in patch:
            return
        keep = patch.pop(RETAIN_KEYS)
        if not isinstance(keep, list):
            raise SMPError(BAD_RETAIN_KEYS, "bad")
        names = {k for k in keep if isinstance(k, str)}
        for key, value in patch.items():
            if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
                continue
            if key not in names:
                raise SMPError(BAD_RETAIN_KEYS, "bad")
        for key in [k for k in original if k not in names]:
            del original[key]

    def _set_element_order(self, original: dict[str, Any], patch: dict[str, Any], schema: Schema | None) -> None:
        """`$setElementOrder/<field>`: merge the field's list now and order it as listed, then
        server-only items by their live order (mergePatchIntoOriginal)."""
        for key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
            order = patch.pop(key)
            if not isinstance(order, list):
                raise bad_arg_type(_SLICE, order)
            name = _strip_prefix(key, SET_ELEMENT_ORDER, BAD_SET_ELEMENT_ORDER)
            in_original, in_patch = name in original, name in patch
            original_list: list[Any] = []
            patch_list: list[Any] = []
            if in_original:
                if not isinstance(original[name], list):
                    raise bad_arg_type(_SLICE, original[name])
                original_list = original[name]
            if in_patch:
                if not isinstance(patch[name], list):
                    raise bad_arg_type(_SLICE, patch[name])
                patch_list = patch[name]
            fschema = self.field(schema, name)
            strategy = _split_strategy(fschema)
            merge_key = fschema.patch_merge_key if fschema is not None else ""
            _check_order(patch_list, order, merge_key)
            if in_original and not in_patch:
                merged = original_list
            elif in_patch and not in_original:
                merged = remove_directives(json_copy(patch_list))[0]
            elif in_original:
                server_order = json_copy(original_list)
                if strategy == "merge":
                    merged = self.slice(original_list, patch_list, self.defs.item(fschema), merge_key, False)
                else:
                    merged = patch_list
                original_list = server_order
            else:
                continue
            named, server_only = partition(merged, order, merge_key)
            kind = element_kind(original_list, patch_list)
            original[name] = normalize_order(named, server_only, order, original_list, merge_key, kind)
            patch.pop(name, None)

    def slice(self, original: list[Any], patch: list[Any], item_schema: Schema, merge_key: str,
              delete_list: bool) -> list[Any]:
        """mergeSlice: scalars form a set (or lose the listed values for a delete list); maps
        merge by merge key with `$patch` items deleting or replacing."""
        if not original and not patch:
            return original
        kind = element_kind(original, patch)
        if kind != "map":
            if delete_list:
                return [item for item in original if not any(go_eq(item, gone) for gone in patch)]
            merged = dedup(original + patch)
            server_order = original
        else:
            if not merge_key:
                raise SMPError(f"cannot merge lists without merge key for {_type_name(item_schema)}")
            original, patch = _special_items(original, patch, merge_key)
            server_order = list(original)
            merged = self._merge_items(list(original), patch, merge_key, item_schema)
        named, server_only = partition(merged, patch, merge_key)
        return normalize_order(named, server_only, patch, server_order, merge_key, kind)

    def _merge_items(self, original: list[Any], patch: list[Any], merge_key: str, item_schema: Schema) -> list[Any]:
        for item in patch:
            if merge_key not in item:
                raise no_merge_key(item, merge_key)
            idx = find_by_key(original, merge_key, item[merge_key])
            if idx >= 0:
                original[idx] = self.map(original[idx], item, item_schema)
            else:
                original.append(item)
        return original


def _special_items(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """mergeSliceWithSpecialElements: apply `$patch: delete` items (every match goes),
    `$patch: replace` (the rest of the patch list becomes the list); returns the updated
    original and the plain patch items."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == "delete":
            if merge_key not in item:
                raise no_merge_key(item, merge_key)
            while (idx := find_by_key(original, merge_key, item[merge_key])) >= 0:
                original = original[:idx] + original[idx + 1:]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise SMPError("merging lists cannot yet be specified in the patch")
        else:
            raise SMPError(f"unknown patch type: {go_s(directive)} in map: {go_v(item)}")
    if replace:
        return plain, []
    return original, plain


def _check_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """validatePatchWithSetOrderList: the patch list's items appear in `order`, in that order."""
    if not order or not patch_list:
        return
    items = patch_list
    if merge_key:
        for item in patch_list:
            if not isinstance(item, dict):
                raise bad_arg_type(_MAP, item)
        items = [item for item in patch_list if item.get(DIRECTIVE) != "delete"]
    p = s = 0
    while p < len(items) and s < len(order):
        if isinstance(items[p], dict) and DIRECTIVE in items[p]:
            p += 1
            continue
        if _key_equal(items[p], order[s], merge_key):
            p += 1
        s += 1
    if p < len(items) and s >= len(order):
        raise SMPError(f"the order in patch list:\n{go_v(patch_list)}\n doesn't match "
                       f"{SET_ELEMENT_ORDER} list:\n{go_v(order)}")


def _key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return go_eq(left, right)
    for side in (left, right):
        if not isinstance(side, dict):
            raise bad_arg_type(_MAP, side)
        if merge_key not in side:
            raise no_merge_key(side, merge_key)
    return go_eq(left[merge_key], right[merge_key])
