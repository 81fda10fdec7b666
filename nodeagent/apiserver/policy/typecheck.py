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
from nodeagent.apiserver.schema.celtypes import SchemaTypes
from nodeagent.apiserver.schema.model import Definitions
from nodeagent.cel import checker as C
from nodeagent.cel import kubetypes, syntax

Obj = Mapping[str, Any]
MAX_TYPES = 10
"""maxTypesToCheck: at most this many kinds per policy."""
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
                types = SchemaTypes(defs)
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
        types = SchemaTypes(defs)
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
