"""The type errors kube-apiserver's typed decoding reports for a built-in kind's request body.

Why: kube-apiserver decodes a body of a built-in kind into its Go struct (sigs.k8s.io/json, Go's
encoding/json), so a value of the wrong JSON type anywhere (`"metadata": "x"`, a number among
labels, a string where a list of owner references belongs) is a 400 BadRequest before any
strategy runs, with encoding/json's text: `json: cannot unmarshal number into Go struct field
ObjectMeta.metadata.labels of type string`. Our registry works on plain dicts, so without this
walk such a body reached code that assumed the declared shape and answered 500. The walk follows
the kind's schema (schema/builtin) as the decoder follows the struct: keys in document order,
unknown keys skipped, null accepted anywhere, the first error reported (encoding/json keeps
decoding after a type error and returns the first one).

Go type names come from the definition names (`io.k8s.api.core.v1.ObjectMeta` -> `v1.ObjectMeta`)
and the field formats (int32, int64, float64); upstream's named string types (types.UID,
v1.FinalizerName) are in `_NAMED`, any other is reported as `string` (an intended, documented
approximation: the message names the same field and JSON kind). Types with their own JSON
decoding are left to their own checks (Quantity, IntOrString, RawExtension, FieldsV1), except
metav1.Time, which decodes through a string as upstream's UnmarshalJSON does. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.schema.gotext import go_float, json_kind
from nodeagent.apiserver.schema.gotext import go_quote as go_quote_text
from nodeagent.apiserver.schema.model import Definitions, Schema

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_OWN_DECODING = frozenset({
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    META + "FieldsV1",
    META + "Patch",
})
_THROUGH_STRING = frozenset({META + "Time", META + "MicroTime"})
# (struct, field) -> the Go type upstream declares where it is a named string type
_NAMED = {
    ("ObjectMeta", "uid"): "types.UID",
    ("OwnerReference", "uid"): "types.UID",
    ("NamespaceSpec", "finalizers"): "[]v1.FinalizerName",
    ("Preconditions", "uid"): "types.UID",
    # core/v1's map[ResourceName]resource.Quantity fields are the named v1.ResourceList
    **{(struct, key): "v1.ResourceList" for struct, keys in (
        ("ResourceQuotaSpec", ("hard",)), ("ResourceQuotaStatus", ("hard", "used")),
        ("ResourceRequirements", ("limits", "requests")), ("VolumeResourceRequirements", ("limits", "requests")),
        ("NodeStatus", ("capacity", "allocatable")), ("PodSpec", ("overhead",)),
        ("LimitRangeItem", ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")),
        ("PersistentVolumeSpec", ("capacity",)), ("PersistentVolumeClaimStatus", ("capacity", "allocatedResources")),
        ("ContainerStatus", ("allocatedResources",)),
    ) for key in keys},
}
SNIFF_STRUCT = 'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
_INT_RANGES = {"int32": (-(2**31), 2**31), "int64": (-(2**63), 2**63)}


class _Found(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def sniff_error(value: Any) -> str | None:
    """The error of the version/kind sniff (json.Unmarshal into {APIVersion, Kind}) every decode
    starts with: a body that is not an object, or an apiVersion/kind that is not a string."""
    if value is None or (isinstance(value, dict) and not _sniff_fields_bad(value)):
        return None
    if not isinstance(value, dict):
        return f"json: cannot unmarshal {json_kind(value)} into Go value of type {SNIFF_STRUCT}"
    for key in ("apiVersion", "kind"):
        v = value.get(key)
        if v is not None and not isinstance(v, str):
            return f"json: cannot unmarshal {json_kind(v)} into Go struct field .{key} of type string"
    return None


def _sniff_fields_bad(value: dict[str, Any]) -> bool:
    return any(value.get(k) is not None and not isinstance(value.get(k), str) for k in ("apiVersion", "kind"))


def type_error(value: Any, schema: Schema, defs: Definitions, struct: str,
               stored: Mapping[str, Any] | None = None) -> str | None:
    """The first `json: cannot unmarshal ...` error decoding `value` into the kind whose Go struct
    is named `struct` (e.g. "Namespace") with the schema `schema`; None when the types fit.
    `stored`: the stored object `value` was made from (a patch's result): a top-level field that is
    still stored's own value (the same object: a status patch keeps the spec) decoded when it was
    stored, so it is not walked again; nor a metadata field that is (its managedFields and their
    times, when another metadata field changed). Well-typed parts left out move no error: the
    first one found is the same."""
    try:
        if stored is not None and isinstance(value, dict):
            value = {k: v for k, v in value.items() if v is not stored.get(k)}
            md, stored_md = value.get("metadata"), stored.get("metadata")
            if type(md) is dict and type(stored_md) is dict:
                value["metadata"] = {k: v for k, v in md.items() if v is not stored_md.get(k)}
        _struct(value, defs.resolve(schema), defs, struct, "")
    except _Found as found:
        return found.text
    return None


def _struct(value: dict[str, Any], s: Schema, defs: Definitions, struct: str, path: str) -> None:
    if not s.properties:
        return
    for key, item in value.items():
        field = s.properties.get(key)
        if field is None or item is None:
            continue
        _value(item, field, defs, struct, f"{path}.{key}" if path else key, _NAMED.get((struct, key)))


def _value(value: Any, field: Schema, defs: Definitions, struct: str, path: str, named: str | None) -> None:
    """Decode `value` into a field (or an element of one) at `path` of the Go struct `struct`."""
    if value is None:
        return
    ref = field.ref
    if ref in _OWN_DECODING:
        return
    s = defs.resolve(field)
    if ref in _THROUGH_STRING:
        if not isinstance(value, str):
            _fail(value, struct, path, "string")
        wrong = time_parse_error(value, micro=ref == META + "MicroTime")
        if wrong is not None:
            raise _Found(wrong)
        return
    if s.int_or_string or (s.preserve_unknown_fields and not s.properties) or s.embedded_resource:
        if s.type == "object" and ref and not isinstance(value, dict):
            _fail(value, struct, path, _go_name(ref))
        return
    if s.type == "object" and s.additional_properties is None:
        if not isinstance(value, dict):
            _fail(value, struct, path, _go_name(ref) if ref else "map[string]interface {}")
        if ref:
            _struct(value, s, defs, _go_name(ref).rpartition(".")[2], path)
        return
    if s.type == "object":
        if not isinstance(value, dict):
            _fail(value, struct, path, named or f"map[string]{_type_name(s.additional_properties, defs)}")
        for item in value.values():
            _value(item, s.additional_properties or Schema(), defs, struct, path, None)
        return
    if s.type == "array":
        if not isinstance(value, list):
            _fail(value, struct, path, named or f"[]{_type_name(s.items, defs)}")
        elem = named[2:] if named and named.startswith("[]") else None
        for item in value:
            _value(item, s.items or Schema(), defs, struct, path, elem)
        return
    _scalar(value, s, struct, path, named)


def _scalar(value: Any, s: Schema, struct: str, path: str, named: str | None) -> None:
    if s.type == "string" and not isinstance(value, str):
        _fail(value, struct, path, named or "string")
    elif s.type == "boolean" and not isinstance(value, bool):
        _fail(value, struct, path, "bool")
    elif s.type == "integer":
        go = "int32" if s.format == "int32" else "int64"
        if isinstance(value, bool) or not isinstance(value, int | float):
            _fail(value, struct, path, go)
        low, high = _INT_RANGES[go]
        if isinstance(value, float) or not low <= value < high:
            # strconv.ParseInt refuses a fraction, an exponent or an overflow: Value is "number <literal>"
            literal = go_float(value) if isinstance(value, float) else str(value)
            raise _Found(f"json: cannot unmarshal number {literal} into Go struct field {struct}.{path} of type {go}")
    elif s.type == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
        _fail(value, struct, path, "float64")


def _fail(value: Any, struct: str, path: str, go_type: str) -> None:
    raise _Found(f"json: cannot unmarshal {json_kind(value)} into Go struct field {struct}.{path} of type {go_type}")


def _go_name(ref: str) -> str:
    """`io.k8s.api.core.v1.ObjectMeta` -> `v1.ObjectMeta` (the package's last element and the type)."""
    parts = ref.split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 else ref


def _type_name(field: Schema | None, defs: Definitions) -> str:
    """The Go type of a map value or list element, for the message of a map or list of the wrong type."""
    if field is None:
        return "interface {}"
    if field.ref:
        if field.ref in _THROUGH_STRING:
            return _go_name(field.ref)
        if field.ref == "io.k8s.apimachinery.pkg.api.resource.Quantity":
            return "resource.Quantity"
        if field.ref == "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
            return "intstr.IntOrString"
        return _go_name(field.ref)
    s = defs.resolve(field)
    if s.type == "string":
        return "string"
    if s.type == "boolean":
        return "bool"
    if s.type == "integer":
        return "int32" if s.format == "int32" else "int64"
    if s.type == "number":
        return "float64"
    if s.type == "array":
        return "[]" + _type_name(s.items, defs)
    if s.type == "object" and s.additional_properties is not None:
        return "map[string]" + _type_name(s.additional_properties, defs)
    return "interface {}"


RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"
_DIGITS = "0123456789"
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def time_parse_error(text: str, *, micro: bool = False) -> str | None:
    """time.Parse(RFC3339 or metav1's RFC3339Micro, text)'s error, None when it parses: metav1.Time
    and MicroTime decode their string this way, and Go walks the layout element by element, so its
    text names the first element that did not match (`cannot parse "x" as "2006"`)."""
    layout = RFC3339_MICRO if micro else RFC3339
    q = go_quote_text
    elements: list[tuple[str, str]] = [("2006", "-"), ("01", "-"), ("02", "T"), ("15", ":"), ("04", ":"), ("05", "")]
    rest = text
    numbers: list[int] = []
    ranges = {"01": ("month", 1, 12), "15": ("hour", 0, 23), "04": ("minute", 0, 59), "05": ("second", 0, 59)}
    for elem, literal in elements:
        width = 4 if elem == "2006" else 2
        taken = _leading_digits(rest, width, fixed=elem != "15")
        if taken is None:
            return f"parsing time {q(text)} as {q(layout)}: cannot parse {q(rest)} as {q(elem)}"
        numbers.append(int(rest[:taken]))
        rest = rest[taken:]
        if elem in ranges and not ranges[elem][1] <= numbers[-1] <= ranges[elem][2]:
            return f"parsing time {q(text)}: {ranges[elem][0]} out of range"
        if elem == "05":
            if micro:
                if not (rest[:1] == "." and len(rest) >= 7 and all(c in _DIGITS for c in rest[1:7])):
                    return f"parsing time {q(text)} as {q(layout)}: cannot parse {q(rest)} as \".000000\""
                rest = rest[7:]
            elif len(rest) >= 2 and rest[0] in ".," and rest[1] in _DIGITS:
                n = 2
                while n < len(rest) and rest[n] in _DIGITS:
                    n += 1
                rest = rest[n:]
        if literal and not rest.startswith(literal):
            return f"parsing time {q(text)} as {q(layout)}: cannot parse {q(rest)} as {q(literal)}"
        rest = rest[len(literal):]
    if rest.startswith("Z"):
        rest = rest[1:]
    elif len(rest) < 6 or rest[3] != ":" or rest[0] not in "+-" or any(
            c not in _DIGITS for c in rest[1:3] + rest[4:6]):
        return f"parsing time {q(text)} as {q(layout)}: cannot parse {q(rest)} as \"Z07:00\""
    else:
        rest = rest[6:]
    if rest:
        return f"parsing time {q(text)}: extra text: {q(rest)}"
    year, month, day = numbers[0], numbers[1], numbers[2]
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= _DAYS[month - 1] + (1 if month == 2 and leap else 0):
        return f"parsing time {q(text)}: day out of range"
    return None


def _leading_digits(text: str, width: int, *, fixed: bool) -> int | None:
    """How many leading digits an element takes: `width` of them (the year: any 4 characters
    atoi reads), or for the hour one or two; None when they are not there."""
    if width == 4:
        return 4 if len(text) >= 4 and all(c in _DIGITS for c in text[:4]) else None
    if not text[:1] or text[0] not in _DIGITS:
        return None
    if len(text) < 2 or text[1] not in _DIGITS:
        return None if fixed else 1
    return 2
