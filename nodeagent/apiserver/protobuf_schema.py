"""The notation the protobuf message tables are written in, and its parser.

Why a notation: the tables (protobuf_types_*.py) transcribe a few hundred fields of k8s.io/api's
generated.proto files; one line per field (`3 nodeName string?`) keeps them reviewable against
the .proto and the Go struct tags side by side, where nested Python literals would bury them.

A field is `NUMBER jsonName TYPE`, fields separated by newlines or `;`. TYPE is
- a scalar (`string`, `bytes`, `int32`, `int64`, `bool`), a builtin (`Time`, `MicroTime`,
  `Quantity`, `RawExtension`, `FieldsV1`) or a message name, optionally
  `package.Name` for another package's message;
- prefixed `[]` for a repeated field, `{}` for a map<string, TYPE>, `^` for a Go struct embedded
  inline (its JSON fields are merged into the parent's);
- suffixed (scalars only) `?` for a Go pointer (written whenever set, zero included) or `!` for a
  field without `omitempty` (always written, zero when absent); a bare scalar is an omitempty
  field, dropped when zero, as encoding/json does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

SCALARS = frozenset({"string", "bytes", "int32", "int64", "bool"})
BUILTINS = frozenset({"Time", "MicroTime", "Quantity", "RawExtension", "FieldsV1"})


@dataclass(frozen=True)
class Field:
    """One field of a message: JSON name, element type, label ("", "[]", "{}", "^"), presence ("", "?", "!")."""

    name: str
    kind: str
    label: str = ""
    presence: str = ""


Message = Mapping[int, Field]
Package = Mapping[str, Message]


def message(spec: str) -> Message:
    """Parse one message's field lines."""
    fields: dict[int, Field] = {}
    for line in spec.replace(";", "\n").splitlines():
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 3 or not parts[0].isdigit():
            raise ValueError(f"bad protobuf table line {line.strip()!r}")
        number, name, typ = int(parts[0]), parts[1], parts[2]
        label = ""
        for prefix in ("[]", "{}", "^"):
            if typ.startswith(prefix):
                label, typ = prefix, typ[len(prefix):]
        presence = typ[-1] if typ[-1] in "?!" else ""
        typ = typ.rstrip("?!")
        if presence and typ not in SCALARS:
            raise ValueError(f"presence marks are for scalars: {line.strip()!r}")
        if number in fields:
            raise ValueError(f"field number {number} repeated in {spec!r}")
        fields[number] = Field(name, typ, label, presence)
    return MappingProxyType(fields)


def package(specs: Mapping[str, str]) -> Package:
    """Parse a package: message name -> field lines."""
    return MappingProxyType({name: message(spec) for name, spec in specs.items()})
