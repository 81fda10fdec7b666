"""Go's renderings of values in the API server's messages: %q strings, field.Error values, %+v maps.

Why a module of its own: the texts a client sees (`Invalid value: "x": ...`, the value of a
strategic-merge patch in a strict-decoding error) are produced by Go's fmt verbs. Python's repr
and json.dumps differ in small ways (escapes, float forms, map order), and those differences
show up in exact-text tests and in tools that match on messages. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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
    """`%v` of a float64 (strconv 'g' with the shortest representation, Go's exponent form)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exp = text.split("e")
        sign = "-" if exp.startswith("-") else "+"
        digits = exp.lstrip("+-").rjust(2, "0")
        return f"{mantissa}e{sign}{digits}"
    return text


def field_value(value: Any) -> str:
    """A field.Error's bad value as ErrorBody prints it: %q for strings, %v for numbers and bools,
    `"null"` for nil (ErrorBody swaps nil for the string "null"), Go's %#v-like text otherwise."""
    if value is None:
        return '"null"'
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{go_quote(str(k))}:{_interface_text(v)}" for k, v in value.items())
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, Sequence):
        return "[]interface {}{" + ", ".join(_interface_text(v) for v in value) + "}"
    return str(value)


def _interface_text(value: Any) -> str:
    """%#v of a value held in an interface{} (inside a map or slice)."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    return field_value(value)


def go_map_text(value: Any) -> str:
    """`%+v` of a decoded JSON value: `map[a:1 b:[x y]]`, keys sorted, strings unquoted, nil `<nil>`."""
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
        return "map[" + " ".join(f"{k}:{go_map_text(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, Sequence):
        return "[" + " ".join(go_map_text(v) for v in value) + "]"
    return str(value)
