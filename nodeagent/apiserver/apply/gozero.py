"""A built-in object as kube-apiserver stores and answers it: with the fields its Go types always
write.

Why: kube-apiserver decodes every write into Go structs and encodes them back, so a field of a
plain (non-pointer) struct type is always there (`lastState: {}` in each container status,
`daemonEndpoints: {kubeletEndpoint: {Port: 0}}` in a Node's status) and a field without omitempty
holds its zero value (`lastProbeTime: null` in a pod condition, a Node's `nodeInfo.bootID: ""`),
whoever wrote the object and however little it sent. nodeagent stores JSON as written, so its
objects lacked them (a twin run against the real control plane showed both). This fills them in,
from the table of always-serialized fields per definition (goserialized.py, printed from client-go's
types at k8s.io/api v0.37.2), walking only the parts of the schema that hold such a field.

A `null` where Go has a struct or a non-null zero becomes that zero (Go's decoder leaves the field
zero). The object is not mutated: changed dicts and lists are new, the rest shared. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nodeagent.apiserver.apply import goserialized
from nodeagent.apiserver.schema.model import Definitions, Schema

Obj = dict[str, Any]


@dataclass
class _Plan:
    """What to do in an object of one definition."""

    zeros: list[tuple[str, Any, str]] = field(default_factory=list)
    """(field, zero value, the plain struct's definition or "") for each always-written field."""
    children: list[tuple[str, str, str]] = field(default_factory=list)
    """(field, "one" | "list" | "map", definition) for each field whose value may hold such fields."""


class ZeroFiller:
    """Per definition, the plan of fields to fill and children to walk (built once, on first use)."""

    def __init__(self, defs: Definitions) -> None:
        self.defs = defs
        self._plans: dict[str, _Plan | None] = {}

    def filler(self, definition: str) -> Callable[[Obj, Obj | None], Obj] | None:
        """The fill of an object of `definition` (given the stored version it replaces, whose parts
        the new one shares by identity are complete already), None when nothing in it is ever filled."""
        plan = self._plan(definition)
        if plan is None:
            return None
        return lambda obj, old: self._fill(plan, obj, old)

    def fill(self, definition: str, obj: Obj, old: Obj | None = None) -> Obj:
        plan = self._plan(definition)
        return obj if plan is None else self._fill(plan, obj, old)

    def _fill(self, plan: _Plan, obj: Obj, old: Any) -> Obj:
        out: Obj | None = None
        for name, zero, struct in plan.zeros:
            value = obj.get(name, _MISSING)
            if value is _MISSING or (value is None and zero is not None):
                if out is None:
                    out = dict(obj)
                out[name] = self.fill(struct, {}) if struct else copy.copy(zero)
        prior = old if type(old) is dict else None
        for name, shape, child in plan.children:
            value = (out if out is not None else obj).get(name)
            if value is None or (prior is not None and prior.get(name) is value):
                continue  # nothing there, or the stored version's own (filled when it was written)
            new = self._child(shape, child, value, prior.get(name) if prior is not None else None)
            if new is not value:
                if out is None:
                    out = dict(obj)
                out[name] = new
        return obj if out is None else out

    def _child(self, shape: str, definition: str, value: Any, old: Any) -> Any:
        plan = self._plans.get(definition)
        if plan is None:
            return value
        if shape == "one":
            return self._fill(plan, value, old) if type(value) is dict else value
        if shape == "list" and type(value) is list:
            olds: list[Any] = old if type(old) is list else []
            items = [v if type(v) is not dict or (i < len(olds) and olds[i] is v)
                     else self._fill(plan, v, olds[i] if i < len(olds) else None)
                     for i, v in enumerate(value)]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if shape == "map" and type(value) is dict:
            old_map: dict[str, Any] = old if type(old) is dict else {}
            entries = {k: v if type(v) is not dict or old_map.get(k) is v else self._fill(plan, v, old_map.get(k))
                       for k, v in value.items()}
            return value if all(entries[k] is v for k, v in value.items()) else entries
        return value

    # --- plans ---

    def _plan(self, definition: str) -> _Plan | None:
        if definition in self._plans:
            return self._plans[definition]
        self._plans[definition] = None  # a cycle ends here (JSONSchemaProps): filled nowhere inside
        schema = self.defs.get(definition) if definition in self.defs else None
        go = goserialized.serialized(definition)
        if schema is None or go is None:
            return None
        plan = _Plan()
        for name, prop in schema.properties.items():
            shape, target = self._shape(prop)
            if name in go:
                zero = go[name]
                struct = target if zero == {} and shape == "one" else ""
                plan.zeros.append((name, zero, struct))
            if target and self._plan(target) is not None:
                plan.children.append((name, shape, target))
        result = plan if plan.zeros or plan.children else None
        self._plans[definition] = result
        return result

    def _shape(self, prop: Schema) -> tuple[str, str]:
        """("one" | "list" | "map", the definition of the value or its items) or ("", "")."""
        resolved = self.defs.resolve(prop)
        if resolved.properties:
            return "one", self.defs.name_of(resolved)
        if resolved.items is not None:
            return "list", self.defs.name_of(self.defs.resolve(resolved.items))
        if resolved.additional_properties is not None:
            return "map", self.defs.name_of(self.defs.resolve(resolved.additional_properties))
        return "", ""


_MISSING = object()
