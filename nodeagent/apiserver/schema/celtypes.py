"""A structural schema as CEL types: common.SchemaDeclType with MaybeAssignTypeName, for the type checker.

Why in schema/: two users, the ValidatingAdmissionPolicy type check (policy/typecheck.py: each matched
kind's schema) and the CRD validation rules (crdrules.py: `self` of each schema node with rules); the
latter is under the registry, which the policy package imports, so the conversion sits below both.
Written-down differences: see policy/typecheck.py. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import QUANTITY
from nodeagent.apiserver.schema.model import Definitions, Schema
from nodeagent.cel import checker as C

__all__ = ["RESERVED", "SchemaTypes", "escape", "type_name"]

RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
                      "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"})
"""celReservedSymbols: property names escaped as `__name__` (k8s.io/apiserver pkg/cel/escaping.go)."""


def escape(name: str) -> str | None:
    """apiservercel.Escape: a property name as the CEL field it becomes (None when it cannot be one)."""
    if not name or name[0].isdigit():
        return None
    if name in RESERVED:
        return f"__{name}__"
    out = []
    i = 0
    while i < len(name):
        if name.startswith("__", i):
            out.append("__underscores__")
            i += 2
            continue
        c = name[i]
        if c.isascii() and (c.isalnum() or c == "_"):
            out.append(c)
        elif c in ".-/":
            out.append({".": "__dot__", "-": "__dash__", "/": "__slash__"}[c])
        else:
            return None
        i += 1
    return "".join(out)


class SchemaTypes:
    """Schema -> CEL type, registering the message types' fields (common.SchemaDeclType + MaybeAssignTypeName)."""

    def __init__(self, defs: Definitions) -> None:
        self.defs = defs
        self.structs: dict[str, dict[str, C.Type]] = {}

    def of(self, schema: Schema | None, name: str, root: bool = False, depth: int = 0) -> C.Type | None:
        """The CEL type; None for a schema upstream's SchemaDeclType gives no type (its property is left out)."""
        if schema is not None and schema.ref == QUANTITY and not root:
            return None  # a quantity's OpenAPI v3 schema is a oneOf without a type: no DeclType upstream
        s = self.defs.resolve(schema)
        if s.int_or_string or depth > 40:
            return C.DYN
        if s.type == "array":
            if s.items is None:
                return C.DYN
            item = self.of(s.items, f"{name}.@idx", self.defs.resolve(s.items).embedded_resource, depth + 1)
            return None if item is None else C.list_of(item)
        if s.type == "object" or (root and not s.type):
            if s.additional_properties is not None and not s.properties:
                value = self.of(s.additional_properties, f"{name}.@elem",
                                self.defs.resolve(s.additional_properties).embedded_resource, depth + 1)
                return None if value is None else C.map_of(C.STRING, value)
            if not s.properties and not root:
                return C.DYN  # preserve-unknown-fields or an untyped object: dyn here (see the module docstring)
            fields: dict[str, C.Type] = {}
            props = dict(s.properties)
            if root:
                _with_type_and_meta(props, self.defs)
            for prop, sub in props.items():
                field = escape(prop)
                typed = None if field is None else self.of(sub, f"{name}.{field}",
                                                           self.defs.resolve(sub).embedded_resource, depth + 1)
                if field is not None and typed is not None:
                    fields[field] = typed
                    if prop in RESERVED:  # recognizeKeywordAsFieldName: `x.namespace` finds `__namespace__`
                        fields[prop] = typed
            self.structs[name] = fields
            return C.struct(name)
        return _SCALARS.get((s.type, s.format), _SCALARS.get((s.type, ""), C.DYN))

    def root(self, definition: str, kind: str) -> C.Type:
        """A kind's object type, named after the kind."""
        return self.of(Schema(ref=definition), type_name(kind), root=True) or C.DYN


_SCALARS = {("string", ""): C.STRING, ("string", "byte"): C.BYTES, ("string", "duration"): C.DURATION,
            ("string", "date"): C.TIMESTAMP, ("string", "date-time"): C.TIMESTAMP, ("boolean", ""): C.BOOL,
            ("number", ""): C.DOUBLE, ("integer", ""): C.INT}


def _with_type_and_meta(props: dict[str, Schema], defs: Definitions) -> None:
    """common.WithTypeAndObjectMeta: a resource root always has apiVersion, kind and metadata.name/generateName."""
    md = defs.resolve(props.get("metadata"))
    if defs.resolve(props.get("kind")).type == "string" and defs.resolve(props.get("apiVersion")).type == "string" \
            and md.type == "object" and defs.resolve(md.properties.get("name")).type == "string" and \
            defs.resolve(md.properties.get("generateName")).type == "string":
        return
    string = Schema(type="string")
    props["kind"] = string
    props["apiVersion"] = string
    props["metadata"] = Schema(type="object", properties={"name": string, "generateName": string})


def type_name(kind: str) -> str:
    """A kind's root type name: `<Kind>0` (upstream appends the clock's nanoseconds)."""
    return f"{kind}0"
