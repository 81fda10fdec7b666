"""The patch error type and the Go-side renderings that upstream's patch error texts are made of.

Why its own module: JSON patch, merge patch and strategic merge patch all answer with the
Status the API server sends for a bad patch (k8s.io/apiserver endpoints/handlers/patch.go),
and upstream's texts embed Go values printed with `%v` / `%s` and Go type names
(`map: map[image:x] does not contain declared merge key: name`). Clients and tests match on
those texts, so they are rendered here once. Pure: no I/O.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from nodeagent.apiserver.errors import APIError

REJECTED = "the server rejected our request due to an error in our request"
"""What upstream's NewGenericServerResponse(422) says: the API server answers a failed json-patch
operation (a `test` that does not hold, a path that is missing) with this fixed text and reason
Invalid, dropping the library's own message; we keep that message in `PatchError.detail`."""


class PatchError(APIError):
    """A patch the server refuses, carrying the Status upstream answers with.

    `code`/`reason`/`message` are the Status fields (reason "" is upstream's StatusReasonUnknown,
    used when a strategic-merge error is not one of the typed ones and reaches the client as a
    plain 500). `detail` is the patch library's own text (evanphx/json-patch, strategicpatch),
    identical to `message` except for the generic 422 answer.
    """

    def __init__(self, code: int, reason: str, message: str, *, detail: str = "") -> None:
        super().__init__(code, reason, message)
        self.detail = detail or message

    @classmethod
    def bad_request(cls, text: str) -> PatchError:
        return cls(400, "BadRequest", text)

    @classmethod
    def rejected(cls, text: str) -> PatchError:
        return cls(422, "Invalid", REJECTED, detail=text)

    @classmethod
    def internal(cls, text: str) -> PatchError:
        return cls(500, "", text)


def json_kind(value: Any) -> str:
    """The JSON kind encoding/json names in `json: cannot unmarshal <kind> into Go value ...`."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def go_type(value: Any) -> str:
    """reflect.TypeOf(value).String() for a decoded JSON value (ints kept as int64, as the
    API server decodes patches with PreserveInts)."""
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def go_v(value: Any) -> str:
    """fmt's `%v` of a decoded JSON value: maps with sorted keys, slices space-separated."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(go_v(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_v(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def go_s(value: Any) -> str:
    """fmt's `%s` of an interface value: strings as they are, anything else flagged as Go does."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, list | dict):
        return go_v(value)
    return f"%!s({go_type(value)}={go_v(value)})"


def go_q(text: str) -> str:
    """fmt's `%q` for the plain strings that appear in json-patch paths."""
    return json.dumps(text, ensure_ascii=False)


def _go_float(value: float) -> str:
    # fmt's %v is strconv's 'g' with the shortest digits, which switches to exponent form
    # when the decimal exponent is below -4 or at least 6 (1e+06, 1.5e-05).
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(str(d) for d in digits).rstrip("0") or "0"
    assert isinstance(exponent, int)
    point = len(digits) + exponent  # position of the decimal point relative to the digits
    exp10 = point - 1
    prefix = "-" if sign else ""
    if exp10 < -4 or exp10 >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"
