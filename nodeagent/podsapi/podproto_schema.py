"""The notation the Pod protobuf tables are written in, and its parser.

Why a notation: the tables (podproto_types_*.py) transcribe about 130 messages of k8s.io/api's
generated.proto; one line per field (`4 terminationGracePeriodSeconds int64?`) keeps them
reviewable against the .proto and the Go struct side by side. It is the API server's decoder
notation (nodeagent/apiserver/protobuf_schema.py) plus what an encoder must know and a decoder
need not: which message fields are Go pointers. Kept apart from it because the node side does
not import the API server (it runs against a real cluster too).

A field is `NUMBER jsonName TYPE`, fields separated by newlines or `;`. TYPE is
- a scalar (`string`, `bytes`, `int32`, `int64`, `bool`), a builtin (`Time`, `MicroTime`,
  `Quantity`, `IntOrString`, `FieldsV1`) or a message name, optionally `package.Name`;
- prefixed `[]` for a repeated field, `{}` for a map<string, TYPE>, `^` for a Go struct embedded
  inline (a nested message on the wire, its fields in the parent's JSON object);
- suffixed `?` (scalar) or `*` (message or builtin) for a Go pointer: written only when set;
  `!` for a scalar without `omitempty` (kept for reading against the Go struct; the encoder
  writes every non-pointer field anyway, as gogo-generated Marshal does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

SCALARS = frozenset({"string", "bytes", "int32", "int64", "bool"})
BUILTINS = frozenset({"Time", "MicroTime", "Quantity", "IntOrString", "FieldsV1"})


@dataclass(frozen=True)
class Field:
    """One field: wire number, JSON name, element type, label ("", "[]", "{}", "^"), presence ("", "?", "*", "!")."""

    number: int
    name: str
    kind: str
    label: str = ""
    presence: str = ""

    @property
    def pointer(self) -> bool:
        return self.presence in ("?", "*")


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
        presence = typ[-1] if typ[-1] in "?!*" else ""
        typ = typ.rstrip("?!*")
        if presence in ("?", "!") and typ not in SCALARS:
            raise ValueError(f"'?' and '!' are for scalars: {line.strip()!r}")
        if presence == "*" and typ in SCALARS:
            raise ValueError(f"'*' is for messages: {line.strip()!r}")
        if number in fields:
            raise ValueError(f"field number {number} repeated in {spec!r}")
        fields[number] = Field(number, name, typ, label, presence)
    # Ascending field numbers: the order gogo-generated Marshal writes them in.
    return MappingProxyType(dict(sorted(fields.items())))


def package(specs: Mapping[str, str]) -> Package:
    """Parse a package: message name -> field lines."""
    return MappingProxyType({name: message(spec) for name, spec in specs.items()})
