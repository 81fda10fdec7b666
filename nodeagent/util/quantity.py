"""Kubernetes resource quantities: parse, compare and format, exactly as apimachinery does.

Everything inside nodeagent counts resources as integers in canonical units:
millicores for `cpu`, base units (bytes, counts) for everything else, rounded up as
the kubelet rounds up (a request of 0.5m cpu is 1m). Only this module knows suffixes.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_RE = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")

CPU = "cpu"


class QuantityError(ValueError):
    """Raised with the offending text; callers add the field path."""

    def __init__(self, text: object) -> None:
        self.text = text
        super().__init__(f"invalid quantity {_show(text)}")


def _show(text: object) -> str:
    return f'"{text}"' if isinstance(text, str) else repr(text)


def parse(text: object) -> Fraction:
    """Parse a quantity ("100Mi", "0.5", "2e3", 4) into an exact Fraction."""
    if isinstance(text, bool):
        raise QuantityError(text)
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(text)
        return Fraction(str(text))
    if not isinstance(text, str):
        raise QuantityError(text)
    return _parse_text(text) if len(text) <= _MEMO_LEN else _parse_str(text)


def _parse_str(text: str) -> Fraction:
    m = _RE.match(text.strip())
    if m is None or text != text.strip():
        raise QuantityError(text)
    number = Fraction(m.group(1))
    suffix = m.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    exponent = int(suffix[1:])
    if abs(exponent) > 30:
        raise QuantityError(text)
    return number * Fraction(10) ** exponent


# A cluster spells few distinct quantities ("1Gi", "500m") many times over (every claim status,
# every pod's requests): parsing is pure and Fractions are immutable, so a bounded memo of short
# texts is safe. Errors are not memoized (lru_cache does not keep exceptions).
_MEMO_LEN = 40
_parse_text = lru_cache(maxsize=4096)(_parse_str)


def canonical(resource: str, text: object) -> int:
    """Quantity in canonical integer units for `resource` (millicores for cpu), rounded up."""
    if isinstance(text, str) and len(text) <= _MEMO_LEN:
        return _canonical_text(resource, text)
    return _canonical(resource, parse(text))


@lru_cache(maxsize=4096)
def _canonical_text(resource: str, text: str) -> int:
    return _canonical(resource, _parse_text(text))


def _canonical(resource: str, value: Fraction) -> int:
    if resource == CPU:
        value *= 1000
    return math.ceil(value)


def parse_nonnegative(resource: str, text: object) -> int:
    value = canonical(resource, text)
    if value < 0:
        raise QuantityError(text)
    return value


def format_canonical(resource: str, value: int) -> str:
    """Format canonical units back to the shortest exact quantity string."""
    if resource == CPU:
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    return format_bytes(value)


def format_bytes(value: int) -> str:
    if value == 0:
        return "0"
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)


def is_integer_quantity(text: object) -> bool:
    """True when the quantity is a whole number (extended resources must be integers)."""
    return parse(text).denominator == 1


# --- formats: a quantity's canonical text depends on the format it came with ----------------------
# apimachinery's Quantity keeps a Format (BinarySI, DecimalSI, DecimalExponent) from the text it was
# parsed from, or from the code that built it, and String() canonicalizes in that format: the same
# 4000000000 is "4G" as DecimalSI and "3906250Ki" as BinarySI. Fields the system computes (an
# allocation's consumedCapacity) are written that way, so nodeagent must track the format too.

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"


class Amount(int):
    """An integer quantity in base units that remembers its upstream Format (like resource.Quantity),
    so the value can be written back exactly as Kubernetes would write it."""

    fmt: str

    def __new__(cls, value: int, fmt: str = DECIMAL_SI) -> Amount:
        obj = super().__new__(cls, value)
        obj.fmt = fmt
        return obj


def format_of(text: object) -> str:
    """The Format ParseQuantity gives a text: binary suffix -> BinarySI, exponent -> DecimalExponent,
    anything else (decimal suffix or none) -> DecimalSI."""
    if not isinstance(text, str):
        return DECIMAL_SI
    m = _RE.match(text.strip())
    suffix = (m.group(2) or "") if m is not None else ""
    if suffix in _BINARY:
        return BINARY_SI
    if suffix[:1] in ("e", "E"):
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def amount(text: object) -> Amount:
    """A quantity text in base units (rounded up, as canonical() does for non-cpu) with its Format."""
    return Amount(canonical("", text), format_of(text))


_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def quantity_string(value: int, fmt: str = DECIMAL_SI) -> str:
    """Quantity.String() of an integer quantity in `fmt` (apimachinery's CanonicalizeBytes).

    BinarySI: the value as a whole number of the largest power of 1024 that divides it, except
    that |value| < 1024 falls back to DecimalSI. DecimalSI/DecimalExponent: the mantissa with
    trailing zeros moved into an exponent that is a multiple of 3, then an SI suffix (or "eN")."""
    if value == 0:
        return "0"
    if fmt == BINARY_SI and abs(value) >= 1024:
        mantissa, power = value, 0
        while mantissa % 1024 == 0 and power < len(_BINARY_SUFFIX) - 1:
            mantissa //= 1024
            power += 1
        return f"{mantissa}{_BINARY_SUFFIX[power]}"
    mantissa, exponent = value, 0
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    extra = exponent % 3
    mantissa, exponent = mantissa * 10**extra, exponent - extra
    if fmt == DECIMAL_EXPONENT or exponent not in _DECIMAL_SUFFIX:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"


class Fractional(Fraction):
    """A quantity with a fractional part (0.5, 250m) in base units, exactly, with its upstream Format:
    consumable capacity sums quantities exactly as apimachinery's Quantity.Add does, and a consumed
    amount of 1500m must be written back as "1500m", not rounded up to 2."""

    __slots__ = ("fmt",)
    fmt: str

    def __new__(cls, value: Fraction, fmt: str = DECIMAL_SI) -> Fractional:
        obj = super().__new__(cls, value)
        obj.fmt = fmt
        return obj


Exact = Amount | Fractional
"""A quantity in base units as written: an Amount when whole, else a Fractional."""


def exact(text: object) -> Exact:
    """A quantity text exactly, with its Format: an Amount when it is a whole number (the common
    case, and what every int-based caller expects), a Fractional otherwise."""
    value = parse(text)
    fmt = format_of(text)
    if value.denominator == 1:
        return Amount(value.numerator, fmt)
    return Fractional(value, fmt)


def exact_value(value: Fraction | int, fmt: str = DECIMAL_SI) -> Exact:
    """`value` as an Exact in `fmt` (NewQuantity / NewMilliQuantity with that format)."""
    frac = Fraction(value)
    if frac.denominator == 1:
        return Amount(frac.numerator, fmt)
    return Fractional(frac, fmt)


def ceil_value(value: Fraction | int) -> int:
    """Quantity.Value(): the value rounded up to a whole number."""
    return -(-Fraction(value).numerator // Fraction(value).denominator)


def milli_value(value: Fraction | int) -> int:
    """Quantity.MilliValue(): the value in thousandths, rounded up."""
    return ceil_value(Fraction(value) * 1000)


def is_milli(value: Fraction | int) -> bool:
    """safeMilliValue succeeds: the value is a whole number of thousandths (lossless as milli)."""
    return (Fraction(value) * 1000).denominator == 1


def exact_string(value: Fraction | int, fmt: str = DECIMAL_SI) -> str:
    """Quantity.String() of an exact value: quantity_string for a whole number; a fractional one in
    the smallest of m, u, n (or e-3, e-6, e-9) that makes its mantissa whole (BinarySI cannot
    hold a fraction and canonicalizes as DecimalSI), rounded up to nano as apimachinery does."""
    frac = Fraction(value)
    if frac.denominator == 1:
        return quantity_string(frac.numerator, fmt)
    for exponent in (-3, -6, -9):
        scaled = frac * 10**-exponent
        if scaled.denominator == 1 or exponent == -9:
            mantissa = ceil_value(scaled)
            break
    while exponent < 0 and mantissa % 1000 == 0:
        mantissa //= 1000
        exponent += 3
    if fmt == DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"
