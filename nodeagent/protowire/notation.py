"""The notation the k8s.io/api protobuf message tables are written in, and its parser.

Why a notation: the tables transcribe k8s.io/api's generated.proto messages one line per field
(`4 terminationGracePeriodSeconds int64?`), reviewable against the .proto and the Go struct side by
side, and exact enough that both directions read them: the API server's request decoder
(nodeagent/apiserver/protobuf) and the Pods API's Pod encoder (nodeagent/podsapi/podproto.py).
Pure: no I/O.

A field is `NUMBER jsonName TYPE`, fields separated by newlines or `;`. TYPE is
- a scalar (`string`, `bytes`, `int32`, `int64`, `bool`, `double`), a builtin (`Time`, `MicroTime`,
  `Quantity`, `IntOrString`, `RawExtension`, `FieldsV1`, `StringList`: a Go `[]string` type of its own,
  a message of one repeated string field 1 on the wire and a JSON array, as authentication's and
  certificates' ExtraValue; apiextensions' `JSON`, `JSONSchemaPropsOrArray`, `JSONSchemaPropsOrBool`
  and `JSONSchemaPropsOrStringArray`, whose JSON is a value, a schema or an array..., see
  apiextensions.py; the three schema ones hold the field's own package's JSONSchemaProps) or a message
  name, optionally
  `package.Name` for another package's message;
- prefixed `[]` for a repeated field, `{}` for a map<string, TYPE>, `^` for a Go struct embedded
  inline (a nested message on the wire, its fields in the parent's JSON object);
- suffixed `?` (scalar) or `*` (message or builtin) for a Go pointer: written whenever set, zero
  included; `!` for a scalar without `omitempty` (always written, zero when absent); a bare scalar
  is an omitempty field, dropped when zero, as encoding/json does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

SCALARS = frozenset({"string", "bytes", "int32", "int64", "bool", "double"})
SCHEMA_OR = frozenset({"JSONSchemaPropsOrArray", "JSONSchemaPropsOrBool", "JSONSchemaPropsOrStringArray"})
"""apiextensions' wrappers of a JSONSchemaProps (in the field's own package) or an array or a boolean."""
BUILTINS = frozenset({"Time", "MicroTime", "Quantity", "IntOrString", "RawExtension", "FieldsV1", "StringList",
                      "JSON", *SCHEMA_OR})


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
            raise ValueError(f"presence marks are for scalars: {line.strip()!r}")
        if presence == "*" and typ in SCALARS:
            raise ValueError(f"'*' is for messages: {line.strip()!r}")
        if number in fields:
            raise ValueError(f"field number {number} repeated in {spec!r}")
        fields[number] = Field(number, name, typ, label, presence)
    # Declaration order: the Go struct's, so a decoder lists keys as encoding/json would (an
    # encoder sorts by number, the order gogo-generated Marshal writes them in).
    return MappingProxyType(fields)


def package(specs: Mapping[str, str]) -> Package:
    """Parse a package: message name -> field lines."""
    return MappingProxyType({name: message(spec) for name, spec in specs.items()})
