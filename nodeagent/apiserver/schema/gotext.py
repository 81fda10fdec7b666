"""Go's renderings of values in the API server's texts: %q strings, %v / %s values, float64
numbers, reflect type names, field.Error values and encoding/json's compact output.

Why a module of its own: the texts a client sees (`Invalid value: "x": ...`, the value of a
strategic-merge patch in a strict-decoding error, `map: map[image:x] does not contain declared
merge key: name`, a JSONPath cell, a FieldsV1 key) are produced by Go's fmt verbs and encoders.
Python's repr and json.dumps differ in small ways (escapes, float forms, map order), and those
differences show up in exact-text tests and in tools that match on messages, so every module
that writes such a text renders it here, the one way. Pure: no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(text: str) -> str:
    """`%q` of a Go string: printable runes kept, quotes and backslashes escaped, others as \\x/\\u."""
    out = ['"']
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def go_float(value: float) -> str:
    """`%v` of a float64: strconv's 'g' with the shortest digits, which switches to exponent form
    when the decimal exponent is below -4 or at least 6 (`1e+06`, `1.5e-05`).

    Python's repr gives the shortest round-trip digits, as Go's shortest formatting does."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign = "-" if value < 0 else ""
    parts = Decimal(repr(abs(value))).normalize().as_tuple()
    sig = "".join(str(d) for d in parts.digits)
    assert isinstance(parts.exponent, int)  # finite: NaN and infinities are handled above
    point = len(sig) + parts.exponent  # digits before the decimal point
    exp = point - 1
    if exp < -4 or exp >= 6:
        body = sig[0] + ("." + sig[1:] if len(sig) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{sig}"
    if point >= len(sig):
        return sign + sig + "0" * (point - len(sig))
    return f"{sign}{sig[:point]}.{sig[point:]}"


def _category(value: Any) -> str:
    """One JSON value's category, the key of the type-name tables below (bool before int: a bool is an int)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object" if isinstance(value, dict) else "other"


# `%s` of reflect.TypeOf(value) (ints kept as int64, as the API server decodes with PreserveInts;
# a nil interface has no type)
_GO_TYPES = {"null": "%!s(<nil>)", "bool": "bool", "int": "int64", "float": "float64", "string": "string",
             "list": "[]interface {}", "object": "map[string]interface {}", "other": "map[string]interface {}"}
# the JSON kind encoding/json names in `json: cannot unmarshal <kind> into Go value ...`
_JSON_KINDS = {"null": "null", "bool": "bool", "int": "number", "float": "number", "string": "string",
               "list": "array", "object": "object", "other": "null"}
# the OpenAPI type a value has, as kube-openapi's validation reports it
_OPENAPI_TYPES = {"null": "null", "bool": "boolean", "int": "integer", "float": "number", "string": "string",
                  "list": "array", "object": "object", "other": "object"}


def go_type(value: Any) -> str:
    """`%s` of reflect.TypeOf(value) for a decoded JSON value."""
    return _GO_TYPES[_category(value)]


def json_kind(value: Any) -> str:
    """The JSON kind encoding/json names in `json: cannot unmarshal <kind> into Go value ...`."""
    return _JSON_KINDS[_category(value)]


def openapi_type(value: Any) -> str:
    """The OpenAPI type of a decoded JSON value (`integer` for ints, `number` for floats)."""
    return _OPENAPI_TYPES[_category(value)]


def go_v(value: Any) -> str:
    """`%v` (and `%+v`) of a decoded JSON value: `map[a:1 b:[x y]]`, keys sorted, strings
    unquoted, nil `<nil>`."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{go_v(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(go_v(v) for v in value) + "]"
    return str(value)


def go_s(value: Any) -> str:
    """`%s` of an interface value: strings as they are, anything else flagged as Go does."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, list | dict):
        return go_v(value)
    return f"%!s({go_type(value)}={go_v(value)})"


def field_value(value: Any) -> str:
    """A field.Error's bad value as ErrorBody prints it: %q for strings, %v for numbers and bools,
    `"null"` for nil (ErrorBody swaps nil for the string "null"), Go's %#v-like text otherwise."""
    if value is None:
        return '"null"'
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{go_quote(str(k))}:{_interface_text(v)}" for k, v in value.items())
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, Sequence):
        return "[]interface {}{" + ", ".join(_interface_text(v) for v in value) + "}"
    return go_v(value)  # bools and numbers print as %v does


def _interface_text(value: Any) -> str:
    """%#v of a value held in an interface{} (inside a map or slice): as at the top level, but a
    nil element is a typed nil, not ErrorBody's "null"."""
    return "interface {}(nil)" if value is None else field_value(value)


def go_json(value: Any) -> str:
    """Compact JSON as Go's encoder writes it (sorted object keys, HTML characters and the
    JavaScript line separators escaped)."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    for raw, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, esc)
    return text
