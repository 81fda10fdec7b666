"""Value validation and defaulting of custom resources against their structural schema.

Why here: the API server checks a custom resource's values with kube-openapi's validator and
turns its results into field errors (`spec.replicas: Invalid value: "string": spec.replicas in
body must be of type integer: "string"`); note the two paths, the field's full path and the
validator's own name inside the message. Defaulting applies `default` where a field is absent
(or null and not nullable), top-down, as apiextensions' structural defaulting does. The checks
run in kube-openapi's order: type, allOf/anyOf/oneOf/not, string, format, number, array, enum,
object. Pure: no I/O.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from nodeagent.apiserver.schema.decoding import join
from nodeagent.apiserver.schema.gotext import field_value, go_float, openapi_type
from nodeagent.apiserver.schema.model import Definitions, Schema

Errors = list[tuple[str, str]]

_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def _types(s: Schema) -> list[str]:
    if s.int_or_string:
        return ["integer", "string"]
    return [s.type] if s.type else []


def _type_ok(value: Any, types: list[str]) -> bool:
    actual = openapi_type(value)
    if not types or actual in types:
        return True
    if actual == "number" and "integer" in types and _json_integer(float(value)):
        return True
    return actual == "integer" and "number" in types


@lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern[str] | None:
    try:
        return re.compile(text)
    except re.error:
        return None


def _sub(raw: Any) -> Schema:
    from nodeagent.apiserver.schema.crd import schema_from_openapi_v3

    return schema_from_openapi_v3(raw if isinstance(raw, Mapping) else {})


def validate_values(obj: Any, schema: Schema, defs: Definitions, path: str = "") -> Errors:
    """Field errors of a custom resource's values, as (field path, detail). `path` prefixes the
    field paths (not the validator's names in the messages), as upstream's fldPath does."""
    errors: Errors = []
    _validate(obj, schema, defs, "", path, errors)
    return errors


def _validate(value: Any, schema: Schema | None, defs: Definitions, name: str, prefix: str, out: Errors) -> None:
    s = defs.resolve(schema)
    field = join(prefix, name)
    types = _types(s)
    if value is None:
        if types and not s.nullable:
            msg = f'{name} in body must be of type {",".join(types)}: "null"'
            out.append((field, f'Invalid value: "null": {msg}'))
        _enum(value, s, field, out)
        return
    if not _type_ok(value, types):
        actual = openapi_type(value)
        msg = f'{name} in body must be of type {",".join(types)}: "{actual}"'
        out.append((field, f'Invalid value: "{actual}": {msg}'))
        if isinstance(value, int | float) and not isinstance(value, bool):
            _number(value, s, name, field, out)  # the number validator applies to any number (1e20 for an integer)
        return
    _composition(value, s, defs, name, prefix, out)
    if isinstance(value, str):
        _string(value, s, name, field, out)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _number(value, s, name, field, out)
    elif isinstance(value, list):
        _array(value, s, defs, name, prefix, field, out)
    _enum(value, s, field, out)
    if isinstance(value, dict):
        _object(value, s, defs, name, prefix, field, out)


def _composition(value: Any, s: Schema, defs: Definitions, name: str, prefix: str, out: Errors) -> None:
    extra = s.extra
    if not extra:
        return
    where = prefix
    for raw in extra.get("allOf") or []:
        found: Errors = []
        _validate(value, _sub(raw), defs, name, prefix, found)
        if found:
            out.extend(found)
            out.append((where, f'Invalid value: "": {name} in body must validate all the schemas (allOf)'))
            break
    any_of = extra.get("anyOf") or []
    intstr = s.int_or_string and any_of == _INT_OR_STRING
    if any_of and not intstr and all(_errors_of(value, _sub(raw), defs, name, prefix) for raw in any_of):
        out.append((where, f'Invalid value: "": {name} in body must validate at least one schema (anyOf)'))
    one_of = extra.get("oneOf") or []
    if one_of and sum(not _errors_of(value, _sub(raw), defs, name, prefix) for raw in one_of) != 1:
        out.append((where, f'Invalid value: "": {name} in body must validate one and only one schema (oneOf)'))
    if isinstance(extra.get("not"), Mapping) and not _errors_of(value, _sub(extra["not"]), defs, name, prefix):
        out.append((where, f'Invalid value: "": {name} in body must not validate the schema (not)'))


def _errors_of(value: Any, schema: Schema, defs: Definitions, name: str, prefix: str) -> Errors:
    found: Errors = []
    _validate(value, schema, defs, name, prefix, found)
    return found


def _string(value: str, s: Schema, name: str, field: str, out: Errors) -> None:
    """kube-openapi's stringValidator (maxLength, minLength, pattern: it stops at the first that fails),
    then its formatValidator."""
    if s.max_length is not None and len(value) > s.max_length:
        unit = "byte" if s.max_length == 1 else "bytes"
        out.append((field, f"Too long: may not be more than {s.max_length} {unit}"))
    elif s.min_length is not None and len(value) < s.min_length:
        out.append(
            (field, f"Invalid value: {field_value(value)}: {name} in body should be at least {s.min_length} chars long")
        )
    elif s.pattern:
        compiled = _pattern(s.pattern)
        if compiled is not None and not compiled.search(value):
            out.append((field, f"Invalid value: {field_value(value)}: {name} in body should match '{s.pattern}'"))
    if s.format == "date-time" and not _is_date_time(value):
        out.append(
            (
                field,
                f"Invalid value: {field_value(value)}: {name} in body must be of type date-time: {field_value(value)}",
            )
        )


def _is_date_time(value: str) -> bool:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in value.upper() or " " in value


_MAX_JSON_FLOAT = float(2**53 - 1)
_EPSILON = 1e-9
_INT_RANGES = {"int32": (-(2**31), 2**31), "": (-(2**63), 2**63), "int64": (-(2**63), 2**63)}
_FLOAT32_MAX = 3.4028234663852886e38


def _json_integer(f: float) -> bool:
    """go-openapi's swag.IsFloat64AJSONInteger: an integral float within +-(2^53-1), or one within a
    relative 1e-9 of the integer below it (positive values only: Go's uint64 of a negative float on amd64
    is no nearby integer)."""
    if math.isnan(f) or math.isinf(f) or abs(f) > _MAX_JSON_FLOAT:
        return False
    if f.is_integer():
        return True
    if f < 0:
        return False
    g = float(int(f))
    if g == 0:
        return False
    return abs(f - g) / (f + g) < _EPSILON


def _range_error(value: float, typ: str, fmt: str, prefix: str, name: str) -> str | None:
    """IsValueValidAgainstRange: whether `value` (the object's or a bound of the schema's) converts to the
    schema's numeric type and format without loss (strconv of its 'f' text); the error's text, else None."""
    ok = True
    if typ == "integer":
        low, high = _INT_RANGES.get(fmt, _INT_RANGES[""])
        integral = isinstance(value, int) or (math.isfinite(value) and float(value).is_integer())
        ok = integral and low <= int(value) < high
    elif typ == "number" and fmt == "float":
        ok = not math.isfinite(value) or abs(value) <= _FLOAT32_MAX
    if ok:
        return None
    kind = f"{typ} with format {fmt}" if fmt else f"{typ} (default format)"
    return f"{prefix} value must be of type {kind} in {name}"


def _multiple_of(value: float, factor: float, native: bool) -> bool:
    """MultipleOfNativeType (an integer value and factor: exact) or MultipleOf (as floats, 1/factor*value
    for a factor under 1, and go-openapi's integer test of the quotient)."""
    if native and isinstance(value, int):
        return value % int(factor) == 0
    quotient = (1 / factor * value) if factor < 1 else (value / factor)
    return _json_integer(quotient)


def _number(value: float, s: Schema, name: str, field: str, out: Errors) -> None:
    """kube-openapi's numberValidator: the value's range for the schema's type and format, then multipleOf,
    minimum and maximum, each after a check that the bound itself fits the type (an integer schema's
    `maximum: 10.5` is reported on every number checked against it, as kube-apiserver does)."""
    shown = field_value(value)
    typ = s.type if s.type in ("integer", "number") and not s.int_or_string else ""
    fmt = s.format if (typ, s.format) in (("integer", "int32"), ("integer", "int64"), ("number", "float"),
                                          ("number", "double")) else ""

    def shown_as(native: bool) -> str:  # a bound that does not fit the type: compared (and shown) as floats
        return shown if native else field_value(float(value))

    def bound(v: float, prefix: str) -> bool:
        err = _range_error(v, typ, fmt, prefix, name)
        if err is not None:
            out.append(("<nil>", f'Invalid value: "": {err}'))
        return err is None

    bound(value, "Checked")
    multiple = s.extra.get("multipleOf") if s.extra else None
    if isinstance(multiple, int | float) and not isinstance(multiple, bool) and multiple > 0:
        native = bound(multiple, "MultipleOf")
        if not _multiple_of(value, multiple, native):
            out.append((field, f"Invalid value: {shown_as(native)}: {name} in body should be a multiple of "
                               f"{go_float(float(multiple))}"))
    if s.minimum is not None:
        low = shown_as(bound(s.minimum, "Minimum boundary"))
        if s.exclusive_minimum and value <= s.minimum:
            out.append((field, f"Invalid value: {low}: {name} in body should be greater than {go_float(s.minimum)}"))
        elif value < s.minimum:
            out.append((field, f"Invalid value: {low}: {name} in body should be greater than or equal to "
                               f"{go_float(s.minimum)}"))
    if s.maximum is not None:
        high = shown_as(bound(s.maximum, "Maximum boundary"))
        if s.exclusive_maximum and value >= s.maximum:
            out.append((field, f"Invalid value: {high}: {name} in body should be less than {go_float(s.maximum)}"))
        elif value > s.maximum:
            out.append((field, f"Invalid value: {high}: {name} in body should be less than or equal to "
                               f"{go_float(s.maximum)}"))


def _array(value: list[Any], s: Schema, defs: Definitions, name: str, prefix: str, field: str, out: Errors) -> None:
    if s.min_items is not None and len(value) < s.min_items:
        out.append((field, f"Invalid value: {len(value)}: {name} in body should have at least {s.min_items} items"))
    if s.max_items is not None and len(value) > s.max_items:
        unit = "item" if s.max_items == 1 else "items"
        out.append((field, f"Too many: {len(value)}: must have at most {s.max_items} {unit}"))
    if s.items is not None:
        for i, item in enumerate(value):
            _validate(item, s.items, defs, f"{name}[{i}]", prefix, out)


def _enum(value: Any, s: Schema, field: str, out: Errors) -> None:
    if not s.enum or any(_same(value, allowed) for allowed in s.enum):
        return
    allowed_text = ", ".join(
        '"' + (a if isinstance(a, str) else _compact(a)).replace("\\", "\\\\").replace('"', '\\"') + '"' for a in s.enum
    )
    out.append((field, f"Unsupported value: {field_value(value)}: supported values: {allowed_text}"))


def _compact(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _object(
    value: dict[str, Any], s: Schema, defs: Definitions, name: str, prefix: str, field: str, out: Errors
) -> None:
    for key in s.required:
        if key not in value:
            out.append((join(field, key), "Required value"))
    if s.min_properties is not None and len(value) < s.min_properties:
        out.append(
            (field, f"Invalid value: {len(value)}: {name} in body should have at least {s.min_properties} properties")
        )
    if s.max_properties is not None and len(value) > s.max_properties:
        unit = "item" if s.max_properties == 1 else "items"
        out.append((field, f"Too many: {len(value)}: must have at most {s.max_properties} {unit}"))
    for key, item in value.items():
        child = s.properties.get(key, s.additional_properties)
        if child is not None:
            _validate(item, child, defs, join(name, key), prefix, out)


# --- defaulting -------------------------------------------------------------------------------


def defaults(obj: Any, schema: Schema, defs: Definitions) -> Any:
    """A copy of obj with the schema's `default`s applied: a field that is absent, or null where
    the schema is not nullable, takes a deep copy of its default; then the walk continues below
    (so defaults inside defaults apply too)."""
    return _default(obj, schema, defs)


def _default(value: Any, schema: Schema | None, defs: Definitions) -> Any:
    s = defs.resolve(schema)
    if isinstance(value, dict):
        out = dict(value)
        for key, prop in s.properties.items():
            p = defs.resolve(prop)
            if p.default is not None and (key not in out or (out[key] is None and not p.nullable)):
                out[key] = copy.deepcopy(p.default)
        additional = defs.resolve(s.additional_properties) if s.additional_properties is not None else None
        for key, item in out.items():
            if key in s.properties:
                out[key] = _default(item, s.properties[key], defs)
            elif additional is not None:
                if item is None and additional.default is not None and not additional.nullable:
                    item = copy.deepcopy(additional.default)
                out[key] = _default(item, additional, defs)
        return out
    if isinstance(value, list) and s.items is not None:
        items = defs.resolve(s.items)
        result = []
        for item in value:
            if item is None and items.default is not None and not items.nullable:
                item = copy.deepcopy(items.default)
            result.append(_default(item, items, defs))
        return result
    return value
