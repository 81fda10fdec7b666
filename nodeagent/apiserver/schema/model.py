"""The schema model: an OpenAPI-v3-shaped description of a type, with the Kubernetes extensions.

Why one model: the API server derives everything that depends on a kind's shape from its
OpenAPI schema (strict field validation, pruning, strategic-merge-patch merge keys,
server-side apply list types, `kubectl explain`). Built-in kinds are written in this model
by hand (schema/builtin*.py); CRDs convert their `openAPIV3Schema` into it. Pure: no I/O.

A `Schema` is immutable. `ref` names a definition in a `Definitions` table (so recursive
types such as JSONSchemaProps need no cycles); always go through `Definitions.resolve`
before reading a schema's other fields.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, init=False)
class Schema:
    """One node of a type description.

    - `type`: "object", "array", "string", "integer", "number", "boolean", or "" for any value.
    - `properties` for objects with known fields; `additional_properties` for maps (a schema
      for every value); an object with neither and `preserve_unknown_fields` keeps anything.
    - `items` for arrays.
    - List semantics (x-kubernetes-list-type / -list-map-keys; patch strategy and merge key
      for strategic merge patch, as upstream's struct tags give them): `list_type` is
      "atomic" (default), "set" or "map"; `patch_strategy` is "", "merge", "replace",
      "retainKeys" or "merge,retainKeys"; `patch_merge_key` the key of merged lists.
    - `map_type` (x-kubernetes-map-type): "granular" (default) or "atomic".
    - `int_or_string`: x-kubernetes-int-or-string (quantities, ports by name or number).
    - `embedded_resource`: x-kubernetes-embedded-resource (apiVersion/kind/metadata inside).
    - Value checks (CRDs): enum, minimum/maximum, lengths, pattern, item counts, nullable.
    - `extra`: further OpenAPI keywords kept verbatim for the published document.
    """

    type: str = ""
    format: str = ""
    description: str = ""
    properties: Mapping[str, Schema] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    items: Schema | None = None
    additional_properties: Schema | None = None
    ref: str = ""
    enum: tuple[Any, ...] = ()
    default: Any = None
    int_or_string: bool = False
    preserve_unknown_fields: bool = False
    embedded_resource: bool = False
    list_type: str = ""
    list_map_keys: tuple[str, ...] = ()
    map_type: str = ""
    patch_strategy: str = ""
    patch_merge_key: str = ""
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    min_length: int | None = None
    max_length: int | None = None
    pattern: str = ""
    min_items: int | None = None
    max_items: int | None = None
    min_properties: int | None = None
    max_properties: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __init__(
        self, type: str = "", format: str = "", description: str = "",
        properties: Mapping[str, Schema] | None = None, required: tuple[str, ...] = (), items: Schema | None = None,
        additional_properties: Schema | None = None, ref: str = "", enum: tuple[Any, ...] = (), default: Any = None,
        int_or_string: bool = False, preserve_unknown_fields: bool = False, embedded_resource: bool = False,
        list_type: str = "", list_map_keys: tuple[str, ...] = (), map_type: str = "", patch_strategy: str = "",
        patch_merge_key: str = "", nullable: bool = False, minimum: float | None = None,
        maximum: float | None = None, exclusive_minimum: bool = False, exclusive_maximum: bool = False,
        min_length: int | None = None, max_length: int | None = None, pattern: str = "",
        min_items: int | None = None, max_items: int | None = None, min_properties: int | None = None,
        max_properties: int | None = None, extra: Mapping[str, Any] | None = None,
    ) -> None:
        """The fields above, in their order (properties and extra default to a new empty dict).

        Written out instead of the dataclass's generated __init__ (init=False above), which sets
        each of the 31 fields with its own object.__setattr__ call as a frozen dataclass must: the
        built-in definitions alone make ~3,300 nodes at every start (schema/builtin), 8.4 us each
        that way against 2.7 us with one update of the instance's dict (issue 25: restart to
        ready, ~19 ms CPU). tests/unit/apiserver/test_schema_model_init.py holds this signature to the fields."""
        self.__dict__.update(
            type=type, format=format, description=description,
            properties={} if properties is None else properties, required=required, items=items,
            additional_properties=additional_properties, ref=ref, enum=enum, default=default,
            int_or_string=int_or_string, preserve_unknown_fields=preserve_unknown_fields,
            embedded_resource=embedded_resource, list_type=list_type, list_map_keys=list_map_keys,
            map_type=map_type, patch_strategy=patch_strategy, patch_merge_key=patch_merge_key, nullable=nullable,
            minimum=minimum, maximum=maximum, exclusive_minimum=exclusive_minimum,
            exclusive_maximum=exclusive_maximum, min_length=min_length, max_length=max_length, pattern=pattern,
            min_items=min_items, max_items=max_items, min_properties=min_properties,
            max_properties=max_properties, extra={} if extra is None else extra,
        )


ANY = Schema()
"""Any JSON value (what an unknown part of an object is treated as)."""


class Definitions:
    """Named schemas (OpenAPI `definitions` / `components.schemas`), e.g.
    `io.k8s.api.core.v1.PodSpec`; refs in a Schema name entries of this table."""

    def __init__(self, entries: Mapping[str, Schema] | None = None) -> None:
        self._entries: dict[str, Schema] = dict(entries or {})
        # resolve() results by the identity of the node asked about (kept alive by the entry):
        # every walk (strict fields, managedFields, patches) resolves the same few hundred nodes
        # over and over, and an overlay builds a new Schema each time
        self._resolved: dict[int, tuple[Schema, Schema]] = {}
        self.walk_memo: dict[Any, Any] = {}
        """For the walks over objects (apply.typedvalue's field schemas): answers derived from these
        entries, emptied with the resolve cache when an entry is added or replaced."""
        self._names: dict[int, str] | None = None

    def add(self, name: str, schema: Schema) -> None:
        self._entries[name] = schema
        self._resolved.clear()
        self.walk_memo.clear()
        self._names = None

    def name_of(self, resolved: Schema) -> str:
        """The name of the entry an object schema resolved from ("" none or unknown): found by its
        properties mapping, which a ref's overlay (resolve) shares with its target. A mapping two
        entries share names neither (no answer rather than the wrong one)."""
        names = self._names
        if names is None:
            names = {}
            shared: set[int] = set()
            for name, entry in self._entries.items():
                if entry.properties:
                    key = id(entry.properties)
                    if key in names:
                        shared.add(key)
                    names[key] = name
            for key in shared:
                names[key] = ""
            self._names = names
        return names.get(id(resolved.properties), "") if resolved.properties else ""

    def get(self, name: str) -> Schema:
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def items(self) -> Iterator[tuple[str, Schema]]:
        return iter(self._entries.items())

    def merged(self, other: Definitions) -> Definitions:
        out = Definitions(self._entries)
        for name, schema in other.items():
            out.add(name, schema)
        return out

    def resolve(self, schema: Schema | None) -> Schema:
        """Follow `ref` (a ref's own list/patch annotations win over the target's, as a field's
        struct tags do upstream); None and unknown refs are ANY."""
        if schema is None:
            return ANY
        if not schema.ref:
            return schema
        hit = self._resolved.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        out = self._resolve(schema)
        if len(self._resolved) >= 20_000:  # bounded: callers may hand in short-lived nodes
            self._resolved.clear()
        self._resolved[id(schema)] = (schema, out)
        return out

    def _resolve(self, schema: Schema) -> Schema:
        seen = 0
        while schema.ref:
            target = self._entries.get(schema.ref)
            if target is None:
                return ANY
            schema = _overlay(schema, target)
            seen += 1
            if seen > 64:
                return ANY
        return schema

    def field(self, schema: Schema | None, name: str) -> Schema | None:
        """The resolved schema of field `name` of an object schema; for a map its value schema;
        None when the object has no such field (unknown) and keeps no unknown fields."""
        s = self.resolve(schema)
        if name in s.properties:
            return self.resolve(s.properties[name])
        if s.additional_properties is not None:
            return self.resolve(s.additional_properties)
        if s.preserve_unknown_fields or not s.type:
            return ANY
        return None

    def item(self, schema: Schema | None) -> Schema:
        """The resolved item schema of an array schema (ANY when unknown)."""
        return self.resolve(self.resolve(schema).items)


_LIST_ATTRS = ("list_type", "list_map_keys", "map_type", "patch_strategy", "patch_merge_key", "description")


def _overlay(ref: Schema, target: Schema) -> Schema:
    """The target with the referring node's annotations (list semantics, description) on top."""
    changes: dict[str, Any] = {a: getattr(ref, a) for a in _LIST_ATTRS if getattr(ref, a)}
    if not changes:
        return target
    from dataclasses import replace

    return replace(target, **changes)
