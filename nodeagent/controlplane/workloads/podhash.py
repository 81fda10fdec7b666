"""The `pod-template-hash` label value, computed as kube-controller-manager computes it.

Why exact: the deployment controller names a ReplicaSet `<deployment>-<hash>` and finds "its"
ReplicaSet by comparing templates; when the real kube-controller-manager takes over a
Deployment the embedded controller created (or the reverse), a different hash would make it
create a second ReplicaSet and roll the pods for nothing. Upstream's controller.ComputeHash is
FNV-32a over go-spew's `%#v` of the Go `v1.PodTemplateSpec` (hashutil.DeepHashObject: SortKeys,
SpewKeys, DisableMethods), then the collision count as 8 little-endian bytes, rendered with
rand.SafeEncodeString. spew prints every field of every Go struct with its Go type, so the JSON
template is first turned into the Go value the controller holds: its informer decodes protobuf,
so an empty list or map is a nil one, and a pointer field present in JSON is a non-nil pointer.
The Go type layout (field order, type names, json names) is nodeagent/apis/gotypes'
podtemplatespec.json, generated from k8s.io/api v0.37.2 by tests/fixtures/gotypes (whose `hash`
mode is these tests' oracle). Pure: no I/O beyond reading that packaged table once.

Not representable (NotRepresentable): a set metadata.creationTimestamp in a template (the Go
side holds a time.Location of the controller's machine).
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Mapping
from importlib import resources
from typing import Any

from nodeagent.kubeletstate.gohash import GoValue, Map, NilPointer, Pointer, Scalar, Slice, Struct, fnv32a, spew

ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
"""k8s.io/apimachinery/pkg/util/rand's alphabet (no vowels, no 0/1/3)."""

ROOT = "v1.PodTemplateSpec"


class NotRepresentable(ValueError):
    """A template value this module cannot turn into the Go value upstream hashes."""


@functools.cache
def go_types() -> Mapping[str, Mapping[str, Any]]:
    """The Go type layout of v1.PodTemplateSpec, keyed by reflect's type name."""
    text = resources.files("nodeagent.apis.gotypes").joinpath("podtemplatespec.json").read_text()
    table: dict[str, Mapping[str, Any]] = json.loads(text)
    return table


def safe_encode(text: str) -> str:
    """rand.SafeEncodeString: each byte to the alphabet, modulo its length."""
    return "".join(ALPHANUMS[b % len(ALPHANUMS)] for b in text.encode())


def compute_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """controller.ComputeHash(template, collisionCount)."""
    data = spew(to_go(ROOT, template)).encode()
    if collision_count is not None:
        data += struct.pack("<I", collision_count & 0xFFFFFFFF) + b"\0\0\0\0"
    return safe_encode(str(fnv32a(data)))


def to_go(go_type: str, value: Any) -> GoValue:
    """The Go value of `go_type` a protobuf-decoding client holds for this JSON value."""
    special = _SPECIAL.get(go_type)
    if special is not None:
        return special(value)
    info = go_types()[go_type]
    kind = info["kind"]
    if kind == "struct":
        obj = value if isinstance(value, Mapping) else {}
        fields: list[tuple[str, GoValue]] = []
        for name, ftype, json_name, *_ in info["fields"]:
            if json_name == ",inline":
                fields.append((name, to_go(ftype, obj)))
            elif json_name == "-":
                raise NotRepresentable(f"{go_type}.{name}: unexported field of a type without JSON mapping")
            else:
                fields.append((name, to_go(ftype, obj.get(json_name))))
        return Struct(go_type, fields)
    if kind == "ptr":
        return NilPointer(go_type) if value is None else Pointer(to_go(info["elem"], value))
    if kind in ("slice", "array"):
        if not value:
            return Slice(go_type, None)
        return Slice(go_type, [to_go(info["elem"], item) for item in value])
    if kind == "map":
        if not value:
            return Map(go_type, None)
        return Map(go_type, {str(k): to_go(info["elem"], v) for k, v in value.items()})
    if kind == "string":
        return Scalar(go_type, "" if value is None else str(value))
    if kind in ("int", "uint"):
        return Scalar(go_type, 0 if value is None else int(value))
    if kind == "bool":
        return Scalar(go_type, bool(value))
    raise NotRepresentable(f"{go_type}: Go kind {kind} not supported")


def _int_or_string(value: Any) -> GoValue:
    if isinstance(value, str):
        fields = [("Type", Scalar("intstr.Type", 1)), ("IntVal", Scalar("int32", 0)),
                  ("StrVal", Scalar("string", value))]
    else:
        fields = [("Type", Scalar("intstr.Type", 0)), ("IntVal", Scalar("int32", int(value or 0))),
                  ("StrVal", Scalar("string", ""))]
    return Struct("intstr.IntOrString", fields)


def _time(value: Any) -> GoValue:
    if value:
        raise NotRepresentable("metav1.Time: a set time decodes with the controller's local time.Location")
    zero = Struct("time.Time", [("wall", Scalar("uint64", 0)), ("ext", Scalar("int64", 0)),
                                ("loc", NilPointer("*time.Location"))])
    return Struct("v1.Time", [("Time", zero)])


def _quantity(value: Any) -> GoValue:
    """resource.ParseQuantity's result (the protobuf decoder calls it on the stored string)."""
    text = value if isinstance(value, str) else str(value) if value is not None else ""
    value_, scale, fmt, cached, dec = parse_quantity(text)
    dec_value: GoValue = NilPointer("*inf.Dec")
    if dec is not None:
        unscaled, dec_scale = dec
        words = [(abs(unscaled) >> (64 * i)) & (2**64 - 1) for i in range((abs(unscaled).bit_length() + 63) // 64)]
        big = Struct("big.Int", [("neg", Scalar("bool", unscaled < 0)),
                                 ("abs", Slice("big.nat", [Scalar("big.Word", w) for w in words] or None))])
        dec_value = Pointer(Struct("inf.Dec", [("unscaled", big), ("scale", Scalar("inf.Scale", dec_scale))]))
    return Struct("resource.Quantity", [
        ("i", Struct("resource.int64Amount", [("value", Scalar("int64", value_)),
                                              ("scale", Scalar("resource.Scale", scale))])),
        ("d", Struct("resource.infDecAmount", [("Dec", dec_value)])),
        ("s", Scalar("string", text if cached else "")),
        ("Format", Scalar("resource.Format", fmt)),
    ])


_SPECIAL = {"intstr.IntOrString": _int_or_string, "v1.Time": _time, "resource.Quantity": _quantity}

_BIN = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_INT64_MAX = 2**63 - 1


Parsed = tuple[int, int, str, bool, tuple[int, int] | None]


def parse_quantity(text: str) -> Parsed:
    """ParseQuantity(text) as (int64Amount value, its scale, Format, whether `s` caches the text,
    (unscaled, scale) of the inf.Dec when the value took that path); NotRepresentable when
    ParseQuantity fails."""
    if text == "":
        return 0, 0, "", False, None  # an empty Quantity (a nil one never reaches here)
    if text == "0":
        return 0, 0, "DecimalSI", True, None
    positive, num, denom, suffix = _split(text)
    if suffix in _DEC:
        base, exponent, fmt = 10, _DEC[suffix], "DecimalSI"
    elif suffix in _BIN:
        base, exponent, fmt = 2, _BIN[suffix], "BinarySI"
    elif len(suffix) > 1 and suffix[0] in "eE":
        base, exponent, fmt = 10, int(suffix[1:]), "DecimalExponent"
    else:
        raise NotRepresentable(f"quantity {text!r}: unknown suffix")
    mantissa, scale = 1, 0
    if fmt == "BinarySI":
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            shifted = num + denom
            amount = int(shifted)
            result = amount * mantissa
            if -_INT64_MAX - 1 <= result <= _INT64_MAX:
                if not positive:
                    result = -result
                if fmt == "BinarySI":
                    cached = exponent % 10 == 0 and (amount & 0x07) != 0
                else:
                    cached = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return result, scale, fmt, cached, None
    return 0, 0, *_dec_path(positive, num, denom, base, exponent, fmt)


def _dec_path(positive: bool, num: str, denom: str, base: int, exponent: int,
              fmt: str) -> tuple[str, bool, tuple[int, int]]:
    """ParseQuantity's inf.Dec path: the value rounded up to nano units (scale 9), capped at the
    int64 maximum for BinarySI; a BinarySI value between 0 and 1 turns DecimalSI."""
    unscaled, scale = int(num + denom), len(denom)  # Dec.SetString of the digits, sign apart
    if base == 10:
        scale -= exponent
    else:
        unscaled <<= exponent
    if unscaled != 0:
        if scale <= 9:
            unscaled *= 10 ** (9 - scale)
        else:
            q, r = divmod(unscaled, 10 ** (scale - 9))
            unscaled = q + (1 if r else 0)  # inf.RoundUp: away from zero
        scale = 9
    if fmt == "BinarySI" and unscaled > _INT64_MAX * 10**scale:
        unscaled, scale = _INT64_MAX, 0
    if fmt == "BinarySI" and 0 < unscaled < 10**scale:
        fmt = "DecimalSI"
    return fmt, False, (unscaled if positive else -unscaled, scale)


def _split(text: str) -> tuple[bool, str, str, str]:
    """parseQuantityString: (positive, integer digits without leading zeros, fraction digits, suffix)."""
    pos, end, positive = 0, len(text), True
    if text[:1] in ("-", "+"):
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos].isdigit():
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos].isdigit():
            pos += 1
        denom = text[start:pos]
    suffix = text[pos:]
    if suffix and not all(c in "eEinumkKMGTP0123456789+-" for c in suffix):
        raise NotRepresentable(f"quantity {text!r}: malformed")
    return positive, num, denom, suffix
