"""CEL's `string(x)` conversion in cel-go's words.

Why: the CEL package nodeagent evaluates with (common-expression-language, a Rust implementation)
converts to string in its own way, so a CRD rule's or an admission policy's message built with
string() differed from kube-apiserver's (cel-go v0.29.2, common/types *.ConvertToType(StringType)):

- timestamp: Go's time.RFC3339Nano (`2026-01-01T00:00:00Z`, the fraction without trailing zeros, the
  offset it was parsed with); the package printed `+00:00` and kept trailing zeros;
- duration: strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s" (`90s`, `-1.5s`); the package printed
  Go's Duration.String() (`1m30s`) and a negative one as a wrapped huge value;
- double: fmt's %g (`1e+20`, `1e-07`); the package printed fixed notation;
- bytes: the UTF-8 text, refused with cel-go's error when invalid; int, uint, bool, string as usual.

The executed program calls FUNCTION where the expression calls `string(` (rewrite); the expression's
checks (declared functions, types) are made on the text as written. Intended difference: values
reach Python as datetime/timedelta, so digits below a microsecond are lost (a `1ns` duration prints
`0s`); Kubernetes' own timestamps have at most microseconds.
"""

from __future__ import annotations

import datetime
import math
import re
from decimal import Decimal
from typing import Any

FUNCTION = "__nodeagent_string"
_STRING_LITERAL = re.compile(r"""[rR]?[bB]?(?:'\'\'(?:\\.|[^\\])*?'\'\'|\"\"\"(?:\\.|[^\\])*?\"\"\""""
                             r"""|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")""")
_CALL = re.compile(r"(?<![\w.])string(\s*\()")
_SECOND_NS = 1_000_000_000


def rewrite(expression: str) -> str | None:
    """`expression` with every call of the string() conversion (outside string literals) calling
    FUNCTION; None when it calls none."""
    blank = _STRING_LITERAL.sub(lambda m: " " * len(m.group(0)), expression)
    starts = [m.start() for m in _CALL.finditer(blank)]
    if not starts:
        return None
    out, last = [], 0
    for start in starts:
        out.append(expression[last:start])
        out.append(FUNCTION)
        last = start + len("string")
    out.append(expression[last:])
    return "".join(out)


def go_string(value: Any) -> str:
    """string(value) as cel-go converts it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _percent_g(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("invalid UTF-8 in bytes, cannot convert to string") from None
    if isinstance(value, datetime.datetime):
        return _rfc3339_nano(value)
    if isinstance(value, datetime.timedelta):
        return _duration(value)
    raise TypeError(f"type conversion error from '{_cel_type(value)}' to 'string'")


def _cel_type(value: Any) -> str:
    if value is None:
        return "null_type"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def _digits(x: float) -> tuple[str, int]:
    """The shortest decimal digits that read back as |x| and the decimal point's position (strconv's
    digs.d and digs.dp): 0.0125 -> ("125", -1), 1e20 -> ("1", 21), 0 -> ("0", 1)."""
    _, digits, exponent = Decimal(repr(abs(x))).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    exponent += len(text) - len(text.rstrip("0"))
    text = text.rstrip("0").lstrip("0")
    if not text:
        return "0", 1
    return text, len(text) + exponent


def _percent_g(x: float) -> str:
    """fmt.Sprintf("%g", x): strconv's shortest digits, in %e form when the exponent is below -4 or
    at least 6 (strconv's 'g' takes the precision 6 for that choice when the digits are the shortest)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    digits, point = _digits(x)
    exp = point - 1
    if digits != "0" and (exp < -4 or exp >= 6):
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return sign + _fixed(digits, point)


def _fixed(digits: str, point: int) -> str:
    """The digits with the decimal point at `point`, no exponent, no trailing zeros."""
    if digits == "0":
        return "0"
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def _duration(value: datetime.timedelta) -> str:
    """strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"; Seconds() = sec + nsec/1e9 with Go's
    truncating division."""
    nanos = (value.days * 86_400 + value.seconds) * _SECOND_NS + value.microseconds * 1000
    sec = abs(nanos) // _SECOND_NS * (1 if nanos >= 0 else -1)
    nsec = nanos - sec * _SECOND_NS
    seconds = float(sec) + float(nsec) / 1e9
    if seconds == 0:
        return "0s"
    digits, point = _digits(seconds)
    return ("-" if seconds < 0 else "") + _fixed(digits, point) + "s"


def _rfc3339_nano(value: datetime.datetime) -> str:
    """time.RFC3339Nano: `2006-01-02T15:04:05.999999999Z07:00` (Z for a zero offset)."""
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    offset = value.utcoffset()
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    minutes = abs(minutes)
    return f"{text}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


FUNCTIONS = {FUNCTION: go_string}
"""Registered beside the Kubernetes functions in every context that runs a rewritten program."""


def executable(program: Any, text: str) -> Any:
    """The program to run for `text` (already compiled as `program` and checked): recompiled with
    the string() calls rewritten when it has any (and the optional-selection forms rewritten again
    when the package needed that for `text`); the program as it is if the rewritten text does not
    compile, which is then the package's own conversion."""
    rewritten = rewrite(text)
    if rewritten is None:
        return program
    import cel

    from nodeagent.cel import optional as cel_optional

    for candidate in (rewritten, cel_optional.rewrite(rewritten)):
        if candidate is None:
            continue
        try:
            return cel.compile(candidate)
        except (ValueError, TypeError, RuntimeError):
            continue
    return program
