"""A ValidatingAdmissionPolicy's type check: the warnings kube-controller-manager's
validatingadmissionpolicy-status controller writes into status.typeChecking.

Upstream (k8s.io/apiserver pkg/admission/plugin/policy/validating/typechecking.go, v1.37.2): the kinds
to check are those of matchConstraints.resourceRules (a rule with a wildcard group or version is left
out, wildcard and subresource resources are skipped, group/version/resource sorted, at most 10 kinds
through the REST mapper), each kind's schema turned into CEL types (common.SchemaDeclType with the
resource root's apiVersion/kind/metadata; the root named after the kind), `params` typed by the
paramKind's schema (dyn without one), `request` and `namespaceObject` by their hand-built types,
`authorizer` declared, and `variables` a message type whose fields are the variables' output types.
Each validation's expression and messageExpression is checked against every kind; a kind's issues
become `<group>/<version>, Kind=<kind>: <cel-go issues text>\\n`, the kinds' texts joined by newlines,
as an ExpressionWarning with the field path.

Here: the kinds and schemas are the embedded API server's own (its catalog, the served definitions,
CRDs included), the checker is nodeagent/cel/checker.py. Written-down differences: the root type is
named `<Kind>0` where upstream appends the nanoseconds of the clock (`Deployment123456789`), so the
names in type texts differ by those digits only; a quantity property is left out of its message type
as upstream leaves it (its OpenAPI v3 schema has no type: `undefined field 'limits'` on both sides) and
an int-or-string is dyn on both, but an object schema without properties (RawExtension, FieldsV1,
preserve-unknown-fields) is dyn here where upstream's is a message with no fields (an `undefined
field` upstream, nothing here); and a function whose overloads are not written in checker.py is dyn
(no issue). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeagent.apiserver.catalog import Catalog, Resource
from nodeagent.apiserver.schema.builtin.dsl import QUANTITY
from nodeagent.apiserver.schema.model import Definitions, Schema
from nodeagent.cel import checker as C
from nodeagent.cel import kubetypes, syntax

Obj = Mapping[str, Any]
MAX_TYPES = 10
"""maxTypesToCheck: at most this many kinds per policy."""
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


class _Types:
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
        return self.of(Schema(ref=definition), _type_name(kind), root=True) or C.DYN


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


@dataclass(frozen=True)
class Warning_:
    """One ExpressionWarning."""

    field_ref: str
    warning: str


class TypeChecker:
    """Checks policies against the kinds and schemas `catalog` and `defs_of()` serve."""

    def __init__(self, catalog: Catalog, defs_of: Callable[[], Definitions]) -> None:
        self.catalog = catalog
        self.defs_of = defs_of

    def kinds(self, policy: Obj) -> list[Resource]:
        """typesToCheck: the served kinds matchConstraints' rules name, sorted by group, version, kind."""
        rules = ((policy.get("spec") or {}).get("matchConstraints") or {}).get("resourceRules") or []
        found: dict[tuple[str, str, str], Resource] = {}
        for rule in rules:
            groups = [str(g) for g in rule.get("apiGroups") or []]
            versions = [str(v) for v in rule.get("apiVersions") or []]
            if any("*" in g for g in groups) or any("*" in v for v in versions):
                continue
            resources = sorted(str(r) for r in rule.get("resources") or [] if "*" not in r and "/" not in r)
            count = 0
            for group in sorted(groups):
                for version in sorted(versions):
                    for resource in resources:
                        res = self.catalog.find(group, version, resource)
                        if res is None:
                            continue
                        found[(res.group, res.version, res.kind)] = res
                        count += 1
                        if count == MAX_TYPES:
                            return [found[k] for k in sorted(found)]
        return [found[k] for k in sorted(found)]

    def check(self, policy: Obj) -> list[Warning_]:
        """Check's warnings, in upstream's order (validations in order, expression then messageExpression)."""
        spec = policy.get("spec") or {}
        kinds = self.kinds(policy)
        if not kinds:
            return []
        defs = self.defs_of()
        param_kind = spec.get("paramKind")
        params: tuple[C.Type, dict[str, dict[str, C.Type]]] | None = None
        if param_kind:
            params = (C.DYN, {})
            res = self.catalog.for_kind(str(param_kind.get("apiVersion") or ""), str(param_kind.get("kind") or ""))
            if res is not None and res.definition in defs:
                types = _Types(defs)
                params = (types.root(res.definition, res.kind), types.structs)
        envs = [(res, self._env(res, defs, params, spec.get("variables") or [])) for res in kinds]
        out: list[Warning_] = []
        for i, validation in enumerate(spec.get("validations") or []):
            for key in ("expression", "messageExpression"):
                expression = validation.get(key)
                if not expression:
                    continue
                text = "\n".join(t for t in (self._text(res, env, str(expression)) for res, env in envs) if t)
                if text:
                    out.append(Warning_(f"spec.validations[{i}].{key}", text))
        return out

    def _env(self, res: Resource, defs: Definitions,
             params: tuple[C.Type, dict[str, dict[str, C.Type]]] | None, variables: Sequence[Obj]) -> C.Env:
        types = _Types(defs)
        obj = types.root(res.definition, res.kind) if res.definition in defs \
            else C.DYN
        structs: dict[str, Mapping[str, C.Type]] = dict(types.structs)
        if params is not None:
            structs.update(params[1])
        env = kubetypes.env(obj, None if params is None else params[0], structs=structs)
        kubetypes.variable_types(env, [(str(v.get("name") or ""), str(v.get("expression") or "")) for v in variables])
        return env

    def _text(self, res: Resource, env: C.Env, expression: str) -> str:
        try:
            result = C.check(expression, env)
        except syntax.ParseError:
            return ""
        if not result.issues:
            return ""
        return f"{res.group}/{res.version}, Kind={res.kind}: {C.issues_text(expression, result.issues)}\n"


def _type_name(kind: str) -> str:
    return f"{kind}0"
