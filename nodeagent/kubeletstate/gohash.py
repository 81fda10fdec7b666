"""The kubelet's checkpoint checksum, and Go's encoding/json output, for values described as Go values.

Why: node agents verify the kubelet's checkpoint files with the kubelet's own code, whose checksum
(pkg/kubelet/checkpointmanager/checksum) is fnv32a over `dump.ForHash(obj)`: go-spew's `%#v`
rendering with SortKeys, SpewKeys, DisableMethods, DisablePointerAddresses and
DisableCapacities (k8s.io/utils/dump). That rendering depends on Go types (their names are
printed, a nil slice differs from an empty one), so values are described here as typed Go
values and rendered by the rules of go-spew's formatState.format:

- a value prints its type as `(T)` unless its container said not to (map keys and values,
  slice items: spew's ignoreNextType); struct fields always print theirs;
- a pointer prints `(*T)` and then its target without the type, or `<*>` where types are
  suppressed; strings print raw (no quotes), slices `[a b]`, maps `map[k:v]` with sorted keys,
  structs `{Field:(T)value ...}`; nil slices and maps print `<nil>`.

The Go programs in tests/fixtures/kubelet-checkpoints check the result against the real code.
Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FNV32_OFFSET = 0x811C9DC5
FNV32_PRIME = 0x01000193


def fnv32a(data: bytes) -> int:
    """hash/fnv New32a."""
    h = FNV32_OFFSET
    for byte in data:
        h ^= byte
        h = (h * FNV32_PRIME) & 0xFFFFFFFF
    return h


@dataclass(frozen=True)
class Scalar:
    """A Go string, integer or bool of the named type (`string`, `int`, `uint64`, `checksum.Checksum`)."""

    type: str
    value: str | int | bool


@dataclass(frozen=True)
class Slice:
    """A Go slice; `items` None for a nil slice."""

    type: str
    items: Sequence[GoValue] | None


@dataclass(frozen=True)
class Map:
    """A Go map with string or integer keys; `entries` None for a nil map."""

    type: str
    entries: Mapping[str, GoValue] | Mapping[int, GoValue] | None


@dataclass(frozen=True)
class Struct:
    """A Go struct value of type `type` (package-qualified as reflect prints it, `state.Block`)."""

    type: str
    fields: Sequence[tuple[str, GoValue]]


@dataclass(frozen=True)
class Pointer:
    """A non-nil pointer to `target` (a nil pointer is `NilPointer`)."""

    target: GoValue


@dataclass(frozen=True)
class NilPointer:
    type: str  # the pointer type, `*types.UID`


GoValue = Scalar | Slice | Map | Struct | Pointer | NilPointer


def type_of(value: GoValue) -> str:
    if isinstance(value, Pointer):
        return "*" + type_of(value.target)
    return value.type


def spew(value: GoValue) -> str:
    """go-spew's `%#v` of the value with the kubelet's hash configuration."""
    out: list[str] = []
    _format(value, out, ignore_type=False)
    return "".join(out)


def _format(value: GoValue, out: list[str], *, ignore_type: bool) -> None:
    if isinstance(value, Pointer):
        out.append("<*>" if ignore_type else f"(*{type_of(value.target)})")
        _format(value.target, out, ignore_type=True)
        return
    if isinstance(value, NilPointer):
        out.append("<nil>" if ignore_type else f"({value.type})<nil>")
        return
    if not ignore_type:
        out.append(f"({value.type})")
    if isinstance(value, Scalar):
        v = value.value
        out.append(("true" if v else "false") if isinstance(v, bool) else str(v))
    elif isinstance(value, Slice):
        if value.items is None:
            out.append("<nil>")
            return
        out.append("[")
        for i, item in enumerate(value.items):
            if i:
                out.append(" ")
            _format(item, out, ignore_type=True)
        out.append("]")
    elif isinstance(value, Map):
        if value.entries is None:
            out.append("<nil>")
            return
        out.append("map[")
        entries: Mapping[Any, GoValue] = value.entries
        for i, key in enumerate(sorted(entries)):
            if i:
                out.append(" ")
            out.append(f"{key}:")
            _format(entries[key], out, ignore_type=True)
        out.append("]")
    else:
        out.append("{")
        for i, (name, field) in enumerate(value.fields):
            if i:
                out.append(" ")
            out.append(f"{name}:")
            _format(field, out, ignore_type=False)
        out.append("}")


def checksum(value: GoValue, *, rename: tuple[str, str] | None = None) -> int:
    """checksum.New(value): fnv32a of the spew rendering; `rename` replaces the first
    occurrence of a type name first, as the cpu and memory managers do for their legacy layout."""
    text = spew(value)
    if rename is not None:
        text = text.replace(rename[0], rename[1], 1)
    return fnv32a(text.encode())


def string_checksum(text: str) -> int:
    """checksum.New(s) of a Go string (the `dataChecksum` of the v4 cpu / v3 memory layouts)."""
    return checksum(Scalar("string", text))


_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def go_json(value: Any) -> str:
    """encoding/json.Marshal of a value built from dicts (in field order; sort map keys before),
    lists, strings, ints and bools: compact, with Go's HTML-safe escapes."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if any(ch in text for ch in _GO_ESCAPES):
        for ch, escaped in _GO_ESCAPES.items():
            text = text.replace(ch, escaped)
    return text
