"""JSON patch (RFC 6902) and JSON merge patch (RFC 7386) as the API server applies them.

Why written here rather than taken from a library: the API server applies both with
evanphx/json-patch v4, whose behaviour differs from the RFCs in ways clients can see
(negative array indices, `replace` of an absent object member adds it, `copy` from an absent
member copies null, merge patch prunes nulls from new subtrees) and whose error texts we keep
for logs. Status codes follow k8s.io/apiserver endpoints/handlers/patch.go: an undecodable
patch is 400 BadRequest, more than 10000 operations is 413, a failing operation is the
generic 422 Invalid. Pure: inputs are never modified.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from nodeagent.apiserver.jsoncopy import json_copy
from nodeagent.apiserver.patch.errors import PatchError
from nodeagent.apiserver.schema.gotext import go_quote, json_kind

MAX_OPERATIONS = 10000
_ABSENT = object()
_INT = re.compile(r"[+-]?[0-9]+")
_MISSING = "missing value"
_BAD_INDEX = "invalid index referenced"

Container = dict[str, Any] | list[Any]
_T = TypeVar("_T")


class _OpError(Exception):
    """One operation failed; the text is evanphx's error chain."""


def json_patch(doc: Any, patch: Any) -> Any:
    """Apply an RFC 6902 patch (the decoded request body) to `doc`; returns a new document."""
    if patch is None:
        return json_copy(doc)
    if not isinstance(patch, list):
        raise PatchError.bad_request(f"json: cannot unmarshal {json_kind(patch)} into Go value of type jsonpatch.Patch")
    for op in patch:
        if op is not None and not isinstance(op, Mapping):
            raise PatchError.bad_request(
                f"json: cannot unmarshal {json_kind(op)} into Go value of type jsonpatch.Operation")
    if len(patch) > MAX_OPERATIONS:
        raise PatchError(413, "RequestEntityTooLarge", "Request entity too large: The allowed maximum operations "
                         f"in a JSON patch is {MAX_OPERATIONS}, got {len(patch)}")
    root: list[Any] = [json_copy(doc)]  # a cell, so `replace ""` can swap the whole document
    try:
        for op in patch:
            _apply(root, op or {})
    except _OpError as err:
        raise PatchError.rejected(str(err)) from None
    return root[0]


def merge_patch(doc: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch: null deletes, objects merge, anything else replaces."""
    if patch is None or not isinstance(patch, dict | list):
        raise PatchError.bad_request("Invalid JSON Patch")
    if doc is None:
        raise PatchError.internal("Invalid JSON Document")
    patch = json_copy(patch)
    if isinstance(patch, list):
        return prune_nulls(patch)
    if not isinstance(doc, dict):
        return prune_nulls(patch)
    out = json_copy(doc)
    _merge_docs(out, patch)
    return out


# --- merge patch ---------------------------------------------------------------------------


def _merge_docs(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            doc.pop(key, None)
        elif doc.get(key) is None:
            doc[key] = prune_nulls(value)
        else:
            doc[key] = _merge(doc[key], value)


def _merge(current: Any, patch: Any) -> Any:
    if not isinstance(current, dict):
        return prune_nulls(patch)
    if not isinstance(patch, dict):
        return patch  # evanphx returns a non-object patch value unpruned here
    _merge_docs(current, patch)
    return current


def prune_nulls(value: Any) -> Any:
    """Drop null members of objects anywhere inside a value that is set wholesale, in place; nulls
    that are array elements stay. evanphx's pruneNulls, and strategicpatch's
    discardNullValuesFromPatch, which does the same for strategic merge patch."""
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for v in value.values():
            prune_nulls(v)
    elif isinstance(value, list):
        for v in value:
            prune_nulls(v)
    return value


# --- JSON patch ----------------------------------------------------------------------------


def _apply(root: list[Any], op: Mapping[str, Any]) -> None:
    kind = op.get("op")
    if kind == "add":
        path = _path(op, "add operation failed to decode path", keep_cause=False)
        con, key = _find(root[0], path, f'add operation does not apply: doc is missing path: "{path}": {_MISSING}')
        _wrap(lambda: _add(con, key, json_copy(op.get("value"))), f"error in add for path: '{path}'")
    elif kind == "remove":
        path = _path(op, "remove operation failed to decode path", keep_cause=False)
        con, key = _find(root[0], path, f'remove operation does not apply: doc is missing path: "{path}": {_MISSING}')
        _wrap(lambda: _remove(con, key), f"error in remove for path: '{path}'")
    elif kind == "replace":
        _replace(root, op)
    elif kind == "move":
        _move(root[0], op)
    elif kind == "test":
        _test(root[0], op)
    elif kind == "copy":
        _copy(root[0], op)
    else:
        raise _OpError(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")


def _replace(root: list[Any], op: Mapping[str, Any]) -> None:
    path = _path(op, "replace operation failed to decode path")
    value = json_copy(op.get("value"))
    if path == "":
        if not isinstance(value, dict | list):
            raise _OpError("replace operation value must be object or array")
        root[0] = value
        return
    con, key = _find(root[0], path, f"replace operation does not apply: doc is missing path: {path}: {_MISSING}")
    try:
        _get(con, key)
    except _OpError:
        raise _OpError(f"replace operation does not apply: doc is missing key: {path}: {_MISSING}") from None
    if isinstance(con, dict):
        con[key] = value  # an absent member is added: evanphx v4 only checks arrays
    else:
        con[_index(con, key, len(con))] = value


def _move(doc: Any, op: Mapping[str, Any]) -> None:
    source = _from(op, "move operation failed to decode from")
    con, key = _find(doc, source, f"move operation does not apply: doc is missing from path: {source}: {_MISSING}")
    value = _wrap(lambda: _get(con, key), f"error in move for path: '{key}'")
    _wrap(lambda: _remove(con, key), f"error in move for path: '{key}'")
    path = _path(op, "move operation failed to decode path")
    missing = f"move operation does not apply: doc is missing destination path: {path}: {_MISSING}"
    dest, dest_key = _find(doc, path, missing)
    _wrap(lambda: _add(dest, dest_key, value), f"error in move for path: '{path}'")


def _test(doc: Any, op: Mapping[str, Any]) -> None:
    path = _path(op, "test operation failed to decode path")
    expected = op.get("value", _ABSENT)
    failed = f"testing value {path} failed: test failed"
    if path == "":
        if expected is _ABSENT or not _equal(doc, expected):
            raise _OpError(failed)
        return
    con, key = _find(doc, path, f"test operation does not apply: is missing path: {path}: {_MISSING}")
    actual = _wrap(lambda: _get(con, key), f"error in test for path: '{path}'")
    if actual is None:
        if expected is _ABSENT or expected is None:
            return
        raise _OpError(failed)
    if expected is _ABSENT or not _equal(actual, expected):
        raise _OpError(failed)


def _copy(doc: Any, op: Mapping[str, Any]) -> None:
    source = _from(op, "copy operation failed to decode from")
    con, key = _find(doc, source, f"copy operation does not apply: doc is missing from path: {source}: {_MISSING}")
    value = _wrap(lambda: _get(con, key), f"error in copy for from: '{source}'")
    path = _path(op, "copy operation failed to decode path", keep_cause=False)
    missing = f"copy operation does not apply: doc is missing destination path: {path}: {_MISSING}"
    dest, dest_key = _find(doc, path, missing)
    _wrap(lambda: _add(dest, dest_key, json_copy(value)), "error while adding value during copy")


def _path(op: Mapping[str, Any], context: str, *, keep_cause: bool = True) -> str:
    return _string_field(op, "path", "operation missing path field", context, keep_cause)


def _from(op: Mapping[str, Any], context: str) -> str:
    return _string_field(op, "from", "operation, missing from field", context, True)


def _string_field(op: Mapping[str, Any], name: str, missing: str, context: str, keep_cause: bool) -> str:
    value = op.get(name)
    if isinstance(value, str):
        return value
    # add/remove/copy name only the sentinel, whatever the cause (evanphx's own wrapping)
    if value is None:
        cause = f"{missing}: {_MISSING}"
    else:
        cause = f"json: cannot unmarshal {json_kind(value)} into Go value of type string"
    raise _OpError(f"{context}: {cause if keep_cause else _MISSING}")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _find(doc: Any, path: str, missing: str) -> tuple[Container, str]:
    """The container holding the last token of `path` and that token, or `missing` raised
    (evanphx's findObject: the token before the first "/" is ignored, so "a/b" is "/b")."""
    parts = path.split("/")
    if len(parts) < 2 or not isinstance(doc, dict | list):
        raise _OpError(missing)
    current: Container = doc
    for part in parts[1:-1]:
        try:
            nxt = _get(current, _unescape(part))
        except _OpError:
            raise _OpError(missing) from None
        if not isinstance(nxt, dict | list):
            raise _OpError(missing)
        current = nxt
    return current, _unescape(parts[-1])


def _atoi(key: str) -> int:
    if not _INT.fullmatch(key):
        raise _OpError(f"strconv.Atoi: parsing {go_quote(key)}: invalid syntax")
    value = int(key)
    if not -(2**63) <= value < 2**63:
        raise _OpError(f"strconv.Atoi: parsing {go_quote(key)}: value out of range")
    return value


def _index(array: list[Any], key: str, size: int) -> int:
    """An array index for get/set/remove (size = len) or insert (size = len + 1); negative
    indices count from the end, as evanphx allows by default."""
    idx = _atoi(key)
    if idx >= size or idx < -size:
        raise _OpError(f"Unable to access invalid index: {idx}: {_BAD_INDEX}")
    return idx + size if idx < 0 else idx


def _get(con: Container, key: str) -> Any:
    if isinstance(con, dict):
        return con.get(key)
    return con[_index(con, key, len(con))]


def _add(con: Container, key: str, value: Any) -> None:
    if isinstance(con, dict):
        con[key] = value
        return
    if key == "-":
        con.append(value)
        return
    try:
        idx = _atoi(key)
    except _OpError as err:
        raise _OpError(f"value was not a proper array index: '{key}': {err}") from None
    size = len(con) + 1
    if idx >= size or idx < -size:
        raise _OpError(f"Unable to access invalid index: {idx}: {_BAD_INDEX}")
    con.insert(idx + size if idx < 0 else idx, value)


def _remove(con: Container, key: str) -> None:
    if isinstance(con, dict):
        if key not in con:
            raise _OpError(f"Unable to remove nonexistent key: {key}: {_MISSING}")
        del con[key]
        return
    del con[_index(con, key, len(con))]


def _wrap(action: Callable[[], _T], context: str) -> _T:
    try:
        return action()
    except _OpError as err:
        raise _OpError(f"{context}: {err}") from None


def _equal(left: Any, right: Any) -> bool:
    """evanphx compares scalars by their compact JSON text, so 1 and 1.0 differ, as do 1 and true."""
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_equal(v, right[k]) for k, v in left.items())
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_equal(a, b) for a, b in zip(left, right, strict=True))
    return type(left) is type(right) and left == right
