"""Strict field validation: the unknown and duplicate fields of a request body, with upstream's texts.

Why here: `?fieldValidation=Strict|Warn|Ignore` turns what the API server's decoders notice into a
400 (Strict) or one warning per field (Warn). Built-in kinds are decoded into Go structs
(sigs.k8s.io/json: errors in document order, an unknown field hides its own duplicates);
custom resources into maps and then pruned against their structural schema (duplicates first,
then root metadata, then pruned paths sorted, then embedded metadata). Both shapes are derived
here from one Schema walk, so every kind gets the same wording. Pure: no I/O.

Paths are upstream's: `spec.containers[0].resource`, map keys joined with `.` like fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nodeagent.apiserver.schema.decoding import (
    BodyDecodeError,
    Pairs,
    decode_json,
    decode_yaml,
    join,
    pairs_of,
    yaml_duplicates_error,
)
from nodeagent.apiserver.schema.gotext import go_quote, go_v
from nodeagent.apiserver.schema.model import ANY, Definitions, Schema

__all__ = [
    "OBJECT_META",
    "BodyDecodeError",
    "apply_strict_error_message",
    "decode_json",
    "decode_yaml",
    "decoding_error_message",
    "patch_strict_error",
    "prune",
    "strict_error_message",
    "strict_errors",
    "strict_warnings",
    "typed_strict_errors",
    "unknown_fields",
]

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
"""The definition used for `metadata` of resources (roots and x-kubernetes-embedded-resource)."""

_META_FIELDS = (
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields",
)  # fmt: skip
_FALLBACK_META = Schema(type="object", properties={name: ANY for name in _META_FIELDS})


def _object_meta(defs: Definitions) -> Schema:
    # Without the full definition only ObjectMeta's own fields are checked, not their insides.
    return defs.resolve(defs.get(OBJECT_META)) if OBJECT_META in defs else _FALLBACK_META


def _child(s: Schema, key: str, defs: Definitions, resource: bool) -> Schema | None:
    """The schema of field `key` of object schema s; None when the field is unknown."""
    if resource:
        if key == "metadata":
            return _object_meta(defs)
        if key in ("apiVersion", "kind") and key not in s.properties:
            return ANY
    return defs.field(s, key)


def _holds_fields(s: Schema) -> bool:
    return s.type in ("object", "")


def unknown_fields(
    obj: Any, schema: Schema, defs: Definitions, *, resource: bool = True, sorted_keys: bool = False,
    unchanged: Any = None,
) -> list[str]:
    """Paths of the fields of obj its schema does not declare, in document order.

    `resource`: the root is a Kubernetes object, so apiVersion, kind and metadata (checked
    against ObjectMeta) are known even if the schema does not list them; nested objects marked
    x-kubernetes-embedded-resource are treated the same. Subtrees that keep unknown fields
    (x-kubernetes-preserve-unknown-fields, untyped values) are not reported.

    `sorted_keys`: read each object's keys in sorted order, as upstream does for what it
    re-encodes from a Go map before the strict decode: YAML bodies and patched objects.

    `unchanged`: an object whose parts obj shares (the same Python objects at the same paths,
    as a status patch's result shares the spec with the stored object): those parts are not
    walked, for a caller to whom fields already in that object are not news."""
    out: list[str] = []
    _walk_unknown(obj, schema, defs, "", resource, out, sorted_keys, unchanged)
    return out


def _walk_unknown(
    value: Any, schema: Schema | None, defs: Definitions, path: str, resource: bool, out: list[str], ordered: bool,
    same: Any,
) -> None:
    """One node; only containers are visited (a scalar holds no fields), nor parts that are `same`."""
    s = defs.resolve(schema)
    if isinstance(value, dict):
        if not _holds_fields(s):
            return
        res = resource or s.embedded_resource
        same_map = same if type(same) is dict else None
        for key in sorted(value) if ordered else value:
            child = _child(s, key, defs, res)
            if child is None:
                out.append(join(path, key))
                continue
            v = value[key]
            if isinstance(v, (dict, list)):
                prev = same_map.get(key) if same_map is not None else None
                if v is not prev:
                    _walk_unknown(v, child, defs, join(path, key), False, out, ordered, prev)
    elif isinstance(value, list) and s.type in ("array", ""):
        item_s = s.items
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                _walk_unknown(item, item_s, defs, f"{path}[{i}]", False, out, ordered, None)


def typed_strict_errors(
    body: bytes, schema: Schema, defs: Definitions, *, resource: bool = True
) -> tuple[Any, list[str]]:
    """Decode a JSON body of a built-in kind and list its strict errors as the typed decoder does:
    one sequence in document order, `unknown field "p"` at a field's first occurrence (its own
    duplicates and insides not reported) and `duplicate field "p"` at each repeat, each text once."""
    value, duplicates = decode_json(body)
    if not duplicates:
        unknown = unknown_fields(value, schema, defs, resource=resource)
        return value, [f"unknown field {go_quote(path)}" for path in unknown]
    errors: list[str] = []
    _walk_typed(pairs_of(body), schema, defs, "", resource, errors)
    return value, errors


def _walk_typed(
    node: Any, schema: Schema | None, defs: Definitions, path: str, resource: bool, errors: list[str]
) -> None:
    s = defs.resolve(schema)
    if isinstance(node, Pairs):
        if not _holds_fields(s):
            return
        res = resource or s.embedded_resource
        seen: set[str] = set()
        for key, item in node:
            child_path = join(path, key)
            child = _child(s, key, defs, res)
            if child is None:
                _emit(errors, f"unknown field {go_quote(child_path)}")
                continue
            if key in seen:
                _emit(errors, f"duplicate field {go_quote(child_path)}")
            seen.add(key)
            _walk_typed(item, child, defs, child_path, False, errors)
    elif isinstance(node, list) and s.type in ("array", ""):
        for i, item in enumerate(node):
            _walk_typed(item, s.items, defs, f"{path}[{i}]", False, errors)


def _emit(errors: list[str], text: str) -> None:
    if text not in errors:
        errors.append(text)


# --- messages -------------------------------------------------------------------------------


def strict_errors(unknown: Sequence[str], duplicates: Sequence[str], *, yaml: bool = False,
                  quoted: bool = True) -> list[str]:
    """The strict-decoding error texts in the order of maps and custom resources: duplicates, then
    unknown fields. With yaml=True, duplicates are decode_yaml's lines, reported as yaml.v2's one
    `yaml: unmarshal errors:` entry."""
    out: list[str] = []
    if yaml:
        if duplicates:
            out.append(yaml_duplicates_error(list(duplicates)))
    else:
        out.extend(f"duplicate field {go_quote(path)}" for path in duplicates)
    out.extend(unknown_field_text(path, quoted) for path in unknown)
    return out


def unknown_field_text(path: str, quoted: bool = True) -> str:
    """`unknown field "p"`: strconv.Quote'd by the typed decoder (sigs.k8s.io/json), as written (`%s`)
    by the custom-resource decoder's pruning, so a control character in a key stays in the latter."""
    return f"unknown field {go_quote(path)}" if quoted else f'unknown field "{path}"'


def strict_warnings(unknown: Sequence[str], duplicates: Sequence[str], *, yaml: bool = False,
                    quoted: bool = True) -> list[str]:
    """What fieldValidation=Warn adds as warnings: one per field (and one per YAML line)."""
    if yaml:
        return list(duplicates) + [unknown_field_text(path, quoted) for path in unknown]
    return strict_errors(unknown, duplicates, quoted=quoted)


def decoding_error_message(kind: str, version: str, errors: Sequence[str]) -> str:
    """The 400 BadRequest message of a create or update under Strict, for ordered error texts."""
    return f"{kind} in version {go_quote(version)} cannot be handled as a {kind}: strict decoding error: " + ", ".join(
        errors
    )


def strict_error_message(
    kind: str, version: str, unknown: Sequence[str], duplicates: Sequence[str], *, yaml: bool = False
) -> str:
    """`Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.foo"`
    (duplicates first, as for custom resources; typed bodies use typed_strict_errors' order)."""
    return decoding_error_message(kind, version, strict_errors(unknown, duplicates, yaml=yaml))


def patch_strict_error(patched: Any, errors: Sequence[str], *, strategic: bool = False) -> tuple[str, str]:
    """The (field, detail) of the 422 a patch gets under Strict: `patch: Invalid value: "<patched>":
    strict decoding error: ...`. `patched` is the patched JSON text for JSON and merge patches, or
    the strategic patch's decoded map (printed as Go's %+v) when strategic=True. Wrap it with
    errors.invalid("", "", "", [pair]) for upstream's ` "" is invalid: ...`."""
    shown = go_v(patched) if strategic else str(patched)
    return "patch", f"Invalid value: {go_quote(shown)}: strict decoding error: " + ", ".join(errors)


def apply_strict_error_message(duplicate_lines: Sequence[str]) -> str:
    """The 400 of a server-side apply whose YAML (or JSON) body repeats a key, under Strict."""
    return "error strict decoding YAML: error converting YAML to JSON: " + yaml_duplicates_error(list(duplicate_lines))


# --- pruning --------------------------------------------------------------------------------


def prune(obj: Any, schema: Schema, defs: Definitions, *, resource: bool = True) -> tuple[Any, list[str]]:
    """A copy of a custom resource without the fields its structural schema does not declare,
    and the pruned paths in upstream's order (root metadata, the rest sorted, embedded metadata).

    apiVersion and kind of the root and of embedded resources are kept; their metadata keeps
    ObjectMeta's fields. x-kubernetes-preserve-unknown-fields keeps unknown fields (declared
    ones below are still pruned). As upstream's coercion does next, null values of non-nullable
    fields without a default are dropped (not reported)."""
    acc = _Pruned()
    out = _prune(obj, schema, defs, "", resource, acc)
    return out, acc.root_meta + sorted(acc.fields) + sorted(acc.embedded_meta)


class _Pruned:
    def __init__(self) -> None:
        self.root_meta: list[str] = []
        self.fields: list[str] = []
        self.embedded_meta: list[str] = []


def _keeps_all(s: Schema) -> bool:
    return (s.preserve_unknown_fields or not s.type) and not s.properties and s.additional_properties is None


def _prune(value: Any, schema: Schema | None, defs: Definitions, path: str, resource: bool, acc: _Pruned) -> Any:
    s = defs.resolve(schema)
    if isinstance(value, list):
        return [_prune(item, s.items, defs, f"{path}[{i}]", False, acc) for i, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    res = resource or s.embedded_resource
    if not res and _keeps_all(s):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        child_path = join(path, key)
        if res and key in ("apiVersion", "kind"):
            out[key] = item
        elif res and key == "metadata":
            found = acc.root_meta if not path else acc.embedded_meta
            out[key] = _strip_unknown(item, _object_meta(defs), defs, child_path, found)
        elif key in s.properties or s.additional_properties is not None:
            child = defs.resolve(s.properties.get(key, s.additional_properties))
            if item is None and not child.nullable and child.default is None:
                continue
            out[key] = _prune(item, child, defs, child_path, False, acc)
        elif s.preserve_unknown_fields or (not s.type and not s.properties):
            out[key] = item
        else:
            acc.fields.append(child_path)
    return out


def _strip_unknown(value: Any, schema: Schema, defs: Definitions, path: str, found: list[str]) -> Any:
    """Typed-decoding semantics (for ObjectMeta): unknown fields dropped and reported, keys read
    in sorted order as upstream re-encodes the map before decoding it."""
    s = defs.resolve(schema)
    if isinstance(value, list):
        return [_strip_unknown(item, defs.item(s), defs, f"{path}[{i}]", found) for i, item in enumerate(value)]
    if not isinstance(value, dict) or not _holds_fields(s):
        return value
    out: dict[str, Any] = {}
    for key in sorted(value):
        child = defs.field(s, key)
        if child is None:
            found.append(join(path, key))
        else:
            out[key] = _strip_unknown(value[key], child, defs, join(path, key), found)
    return {key: out[key] for key in value if key in out}
