"""CRD validation rules (x-kubernetes-validations) evaluated on custom resource writes, and compiled
when a CRD is written.

Upstream (k8s.io/apiextensions-apiserver v0.37.2 pkg/apiserver/schema/cel/validation.go): a Validator
parallels the structural schema with each node's compiled rules; a write walks the object with it,
`self` each non-null value (object properties, list items, map values), `oldSelf` the value at the
same place in the old object where one is correlatable (object properties and map values by key,
items of an `x-kubernetes-list-type: map` list by their keys; none for atomic and set lists). A
transition rule (one that reads oldSelf) is evaluated only with an old value, or with
`optionalOldSelf` (oldSelf then an optional). A false rule is a field error at the node's path (or
its `fieldPath`), of its `reason` (Invalid, Forbidden, Required, Duplicate), with its
messageExpression's value, else its message, else `failed rule: <rule>`; an object's or list's value
is not printed. A rule that fails is `<err> evaluating rule: <message or rule>`. On an update, a
failing rule that does not read oldSelf on a part of the object that is as before (its nearest
correlatable node deep-equal to the old) is a warning, not an error (CRDValidationRatcheting, GA).

Compiled once per CRD version (crds.py, at each catalog change), as upstream's NewValidator is built with
the strategy. Rules inside allOf/anyOf/oneOf/not are refused at CRD creation (structural.py: `must be
empty to be structural`, as upstream without AllowNestedXValidations), so the walk has none to meet.
Written-down differences (README): no cost estimation nor runtime cost budget (`estimated rule cost
exceeds budget` and `call cost exceeds limit` are never answered); a date-time, date, duration or byte
string that does not parse stays a string; Go's random order of an object's properties is the object's
order here (a CRD's compile errors: the schema's). Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from nodeagent.apiserver.schema.celtypes import SchemaTypes
from nodeagent.apiserver.schema.gotext import field_value
from nodeagent.apiserver.schema.model import Definitions, Schema
from nodeagent.cel import admission
from nodeagent.cel import checker as C
from nodeagent.cel import crdrules as cel_rules

Errors = list[tuple[str, str]]
MAX_MESSAGE_BYTES = 5 * 1024
"""celconfig.MaxEvaluatedMessageExpressionSizeBytes."""
SELF_TYPE = "selfType0"
"""The rule node's type name (upstream: `selfType` and the clock's nanoseconds)."""


@dataclass(frozen=True)
class Rule:
    """One x-kubernetes-validations entry, compiled."""

    rule: str
    message: str
    reason: str
    field_path: str
    optional_old_self: bool
    program: cel_rules.Program | None
    message_program: cel_rules.Program | None = None
    error: str = ""
    """A compile error (a CRD stored before its rules were checked): answered on every write."""

    def error_string(self) -> str:
        """ruleErrorString: the message if set, else the rule."""
        return self.message.strip() or self.rule.strip()

    def default_message(self) -> str:
        return self.message.strip() if self.message else f"failed rule: {self.error_string()}"


@dataclass(frozen=True)
class Node:
    """A schema node with rules at it or below it."""

    schema: Schema
    rules: tuple[Rule, ...] = ()
    properties: Mapping[str, Node] = field(default_factory=dict)
    items: Node | None = None
    additional: Node | None = None
    resource_root: bool = False


def _rules_of(schema: Schema) -> list[Mapping[str, Any]]:
    found = schema.extra.get("x-kubernetes-validations") or []
    return [r for r in found if isinstance(r, Mapping)] if isinstance(found, list) else []


def _normalized_path(json_path: str, schema: Schema, defs: Definitions) -> str:
    """ValidFieldPath's field path (`.a.b`, `['k']`) as a field.Path text relative to the node, '' if invalid."""
    out = ""
    s = defs.resolve(schema)
    pos = 0
    token = re.compile(r"\.([^.\[\]]+)|\[\s*'((?:[^'\\]|\\.)*)'\s*\]")
    while pos < len(json_path):
        m = token.match(json_path, pos)
        if m is None:
            return ""
        name = m.group(1) if m.group(1) is not None else m.group(2).replace("\\'", "'").replace("\\\\", "\\")
        if s.properties:
            if name not in s.properties:
                return ""
            out = f"{out}.{name}" if out else name
            s = defs.resolve(s.properties[name])
        elif s.additional_properties is not None:
            out = f"{out}[{name}]"
            s = defs.resolve(s.additional_properties)
        else:
            return ""
        pos = m.end()
    return out


def compile_node(schema: Schema, defs: Definitions, resource_root: bool = True) -> Node | None:
    """The validator of `schema` (None without any rule at or under it)."""
    s = defs.resolve(schema)
    rules: list[Rule] = []
    raw = _rules_of(s)
    if raw:
        types = SchemaTypes(defs)
        self_type = types.of(s, SELF_TYPE, root=resource_root) or C.DYN
        for r in raw:
            rules.append(_compile_rule(r, s, defs, self_type, types.structs))
    props: dict[str, Node] = {}
    for name, sub in s.properties.items():
        node = compile_node(sub, defs, defs.resolve(sub).embedded_resource)
        if node is not None:
            props[name] = node
    items = None if s.items is None else compile_node(s.items, defs, defs.resolve(s.items).embedded_resource)
    additional = None if s.additional_properties is None else \
        compile_node(s.additional_properties, defs, defs.resolve(s.additional_properties).embedded_resource)
    if not rules and not props and items is None and additional is None:
        return None
    return Node(s, tuple(rules), props, items, additional, resource_root)


def _compile_rule(raw: Mapping[str, Any], s: Schema, defs: Definitions, self_type: C.Type,
                  structs: Mapping[str, Mapping[str, C.Type]]) -> Rule:
    text = str(raw.get("rule") or "")
    optional = raw.get("optionalOldSelf") is True
    base = dict(rule=text, message=str(raw.get("message") or ""), reason=str(raw.get("reason") or ""),
                field_path=_normalized_path(str(raw.get("fieldPath") or ""), s, defs), optional_old_self=optional)
    if not text.strip():
        return Rule(**base, program=None)  # type: ignore[arg-type]
    try:
        program = cel_rules.compile_rule(text, self_type, structs, optional_old_self=optional)
    except admission.CompileError as err:
        return Rule(**base, program=None, error=err.detail)  # type: ignore[arg-type]
    message_program = None
    expression = str(raw.get("messageExpression") or "")
    if expression:
        try:
            message_program = cel_rules.compile_rule(expression, self_type, structs, optional_old_self=optional,
                                                     message=True)
        except admission.CompileError:
            message_program = None
    return Rule(**base, program=program, message_program=message_program)  # type: ignore[arg-type]


def compile_errors(schema: Schema, defs: Definitions, path: str, resource_root: bool = True,
                   uncorrelatable: str = "") -> Errors:
    """The CRD's field errors of rules that do not compile, under `path` (the openAPIV3Schema's path):
    `<path>.x-kubernetes-validations[i].rule: Invalid value: <rule>: compilation failed: ...`, in
    upstream's order (additionalProperties, properties, items, then the node's own rules).
    `uncorrelatable`: the first enclosing list that is not a list-map (or map that is not
    correlatable), where oldSelf may not be used."""
    out: Errors = []
    s = defs.resolve(schema)
    if s.additional_properties is not None:
        out += compile_errors(s.additional_properties, defs, f"{path}.additionalProperties",
                              defs.resolve(s.additional_properties).embedded_resource, uncorrelatable)
    inner = uncorrelatable or ("" if s.map_type in ("", "granular", "atomic") else path)
    for name, sub in s.properties.items():
        out += compile_errors(sub, defs, f"{path}.properties[{name}]", defs.resolve(sub).embedded_resource, inner)
    if s.items is not None:
        out += compile_errors(s.items, defs, f"{path}.items", defs.resolve(s.items).embedded_resource,
                              uncorrelatable or ("" if s.list_type == "map" else path))
    raw = _rules_of(s)
    if not raw:
        return out
    types = SchemaTypes(defs)
    self_type = types.of(s, SELF_TYPE, root=resource_root) or C.DYN
    for i, r in enumerate(raw):
        text = str(r.get("rule") or "")
        if not text.strip():
            continue
        optional = r.get("optionalOldSelf")
        rule_path = f"{path}.x-kubernetes-validations[{i}]"
        uses_old = False
        try:
            program = cel_rules.compile_rule(text, self_type, types.structs, optional_old_self=optional is True)
        except admission.CompileError as err:
            out.append((rule_path + ".rule", f"Invalid value: {_rule_value(r)}: {err.detail}"))
        else:
            uses_old = program.uses_old_self
            expression = str(r.get("messageExpression") or "")
            if expression:
                try:
                    cel_rules.compile_rule(expression, self_type, types.structs, optional_old_self=optional is True,
                                           message=True)
                except admission.CompileError as err:
                    out.append((rule_path + ".messageExpression", f"Invalid value: {_rule_value(r)}: {err.detail}"))
        if uses_old:
            if uncorrelatable:
                out.append((rule_path + ".rule", f"Invalid value: {field_value(text)}: oldSelf cannot be used on the "
                                                 f"uncorrelatable portion of the schema within {uncorrelatable}"))
        elif isinstance(optional, bool):
            out.append((rule_path + ".optionalOldSelf",
                        f"Invalid value: {field_value(optional)}: may not be set if oldSelf is not used in rule"))
    return out


def _rule_value(raw: Mapping[str, Any]) -> str:
    """The ValidationRule as field.Error prints it (JSON of the internal type: its Go field names)."""
    import json

    reason = raw.get("reason")
    optional = raw.get("optionalOldSelf")
    value = {"Rule": str(raw.get("rule") or ""), "Message": str(raw.get("message") or ""),
             "MessageExpression": str(raw.get("messageExpression") or ""),
             "Reason": reason if reason else None, "FieldPath": str(raw.get("fieldPath") or ""),
             "OptionalOldSelf": optional if isinstance(optional, bool) else None}
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# --- evaluation -------------------------------------------------------------------------------------

_Corr = tuple[Any, Any]
"""A correlated (new, old) pair for ratcheting."""


@dataclass
class _Ratchet:
    """ratchetingOptions: the current correlated node (None: uncorrelatable) and the nearest correlated parent."""

    current: _Corr | None
    parent: _Corr | None
    schema: Schema | None

    def should_ratchet(self) -> bool:
        found = self.current if self.current is not None else self.parent
        return found is not None and _deep_equal(found[0], found[1], self.schema)


@dataclass
class Result:
    errors: Errors = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def validate(node: Node, obj: Any, old: Any, defs: Definitions) -> Result:
    """Every rule's verdict on `obj` (a create: `old` None)."""
    out = Result()
    corr = _Ratchet((obj, old), None, node.schema) if old is not None else _Ratchet(None, None, None)
    _validate(node, "", obj, old, corr, defs, out)
    return out


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _validate(node: Node, path: str, obj: Any, old: Any, corr: _Ratchet, defs: Definitions, out: Result) -> None:
    if obj is None:
        return
    _expressions(node, path, obj, old, corr, defs, out)
    if isinstance(obj, list):
        if node.items is not None:
            olds = _map_list(node.schema, old if isinstance(old, list) else [])
            for i, item in enumerate(obj):
                old_item = olds(item)
                child = _Ratchet((item, old_item), corr.current, node.items.schema) \
                    if corr.current is not None and old_item is not None else \
                    _Ratchet(None, corr.current if corr.current is not None else corr.parent, corr.schema)
                _validate(node.items, f"{path}[{i}]", item, old_item, child, defs, out)
    elif isinstance(obj, Mapping):
        old_map = old if isinstance(old, Mapping) else {}
        correlatable = node.schema.map_type in ("", "granular", "atomic")
        for key, value in obj.items():
            sub = node.properties.get(key) if node.properties else None
            sub_path = _join(path, key) if sub is not None else f"{path}[{key}]"
            if sub is None and node.properties:
                continue
            if sub is None:
                sub = node.additional
            if sub is None:
                continue
            old_value = old_map.get(key) if correlatable else None
            _validate(sub, sub_path, value, old_value, _key(corr, key, obj, old, sub.schema, node), defs, out)


def _key(corr: _Ratchet, key: str, obj: Mapping[str, Any], old: Any, schema: Schema, parent: Node) -> _Ratchet:
    if corr.current is None:
        return corr
    if corr.parent is None and parent.resource_root and key in ("apiVersion", "kind"):
        return _Ratchet(None, None, None)
    cur_new, cur_old = corr.current
    if isinstance(cur_new, Mapping) and isinstance(cur_old, Mapping) and key in cur_new and key in cur_old:
        return _Ratchet((cur_new[key], cur_old[key]), corr.current, schema)
    return _Ratchet(None, corr.current, corr.schema)


def _map_list(schema: Schema, old: Sequence[Any]) -> Any:
    """makeMapList: an item's old item by the list-map keys (always None for other lists)."""
    if schema.list_type != "map" or not schema.list_map_keys or not old:
        return lambda _item: None
    keys = schema.list_map_keys

    def key_of(item: Any) -> tuple[str, ...] | None:
        if not isinstance(item, Mapping):
            return None
        return tuple(repr(item.get(k)) for k in keys)

    index: dict[tuple[str, ...], Any] = {}
    for item in old:
        k = key_of(item)
        if k is not None and k not in index:
            index[k] = item
    return lambda item: index.get(key_of(item)) if key_of(item) is not None else None  # type: ignore[arg-type]


def _deep_equal(a: Any, b: Any, schema: Schema | None) -> bool:
    """CorrelatedObject.CachedDeepEqual: list-map items compared by key (order aside), other lists in order."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if len(a) != len(b):
            return False
        props = schema.properties if schema is not None else {}
        for k, v in a.items():
            if k not in b:
                return False
            sub = props.get(k) if props else (schema.additional_properties if schema is not None else None)
            if not _deep_equal(v, b[k], sub):
                return False
        return True
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        item_schema = schema.items if schema is not None else None
        if schema is not None and schema.list_type == "map" and schema.list_map_keys:
            olds = _map_list(schema, b)
            for item in a:
                found = olds(item)
                if found is None or not _deep_equal(item, found, item_schema):
                    return False
            return True
        return all(_deep_equal(x, y, item_schema) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    return bool(a == b)


def cel_value(value: Any, schema: Schema | None) -> Any:
    """UnstructuredToVal: a number schema's integers are doubles; date-time, date, duration and byte strings
    are timestamps, durations and bytes."""
    if schema is None:
        return value
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            sub = schema.properties.get(k) if schema.properties else schema.additional_properties
            out[k] = cel_value(v, sub)
        return out
    if isinstance(value, list):
        return [cel_value(v, schema.items) for v in value]
    if schema.type == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if schema.type == "string" and isinstance(value, str) and schema.format in _FORMATS:
        return _FORMATS[schema.format](value)
    return value


def _timestamp(text: str) -> Any:
    """A date-time string as a timestamp (strfmt's RFC 3339 layouts), else left a string."""
    try:
        found = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return text
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def _date(text: str) -> Any:
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return text


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _duration(text: str) -> Any:
    """A Go duration string (`1h30m`, `-1.5s`) as a duration, else left a string."""
    body = text[1:] if text[:1] in "+-" else text
    parts = _DURATION_PART.findall(body)
    if not body or "".join(n + u for n, u in parts) != body:
        return text if body != "0" else timedelta(0)
    seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    return timedelta(seconds=-seconds if text.startswith("-") else seconds)


def _bytes(text: str) -> Any:
    try:
        return base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        return text


_FORMATS: dict[str, Callable[[str], Any]] = {"date-time": _timestamp, "date": _date, "duration": _duration,
                                             "byte": _bytes}
"""UnstructuredToVal: a string of these formats is a timestamp, duration or bytes value in CEL."""


def _expressions(node: Node, path: str, obj: Any, old: Any, corr: _Ratchet, defs: Definitions, out: Result) -> None:
    if not node.rules:
        return
    sts = node.schema
    typ = sts.type
    self_value = cel_value(obj, sts)
    old_value = None if old is None else cel_value(old, sts)
    path = path or "<nil>"  # the root's field.Path is nil
    for rule in node.rules:
        if rule.error:
            out.errors.append((path, f"Invalid value: {field_value(typ)}: rule compile error: {rule.error}"))
            continue
        program = rule.program
        if program is None:
            continue
        if program.uses_old_self and old is None and not rule.optional_old_self:
            continue
        try:
            verdict = program.evaluate(self_value, old_value, old is not None, rule.optional_old_self)
        except admission.EvalError as err:
            text = str(err)
            if text.startswith("no such overload"):
                failure = (f"'{text}': call arguments did not match a supported operator, function or macro "
                           f"signature for rule: {rule.error_string()}")
            else:
                failure = f"{text} evaluating rule: {rule.error_string()}"
            out.errors.append((path, f"Invalid value: {field_value(typ)}: {failure}"))
            continue
        if verdict is True:
            continue
        at = path
        if rule.field_path:
            at = rule.field_path if path == "<nil>" else \
                (path + rule.field_path if rule.field_path.startswith("[") else f"{path}.{rule.field_path}")
        detail: str | None = None
        if rule.message_program is not None:
            detail = _message(rule.message_program, self_value, old_value, old is not None, rule.optional_old_self)
        if detail is None:
            detail = rule.default_message()
        shown = None if typ in ("object", "array") else obj
        error = (at, _field_error(shown, detail, rule.reason, typ in ("object", "array")))
        if not program.uses_old_self and corr.should_ratchet():
            out.warnings.append(f"{at}: {error[1]}" if at else error[1])
        else:
            out.errors.append(error)


def _message(program: cel_rules.Program, self_value: Any, old_value: Any, has_old: bool, optional: bool) -> str | None:
    """evalMessageExpression: the trimmed string, or None (the rule's message is used instead)."""
    try:
        value = program.evaluate(self_value, old_value, has_old, optional)
    except admission.EvalError:
        return None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or len(text.encode()) > MAX_MESSAGE_BYTES or "\n" in text:
        return None
    return text


def _field_error(value: Any, detail: str, reason: str, omit: bool) -> str:
    """fieldErrorForReason's ErrorBody."""
    if reason == "FieldValueForbidden":
        return f"Forbidden: {detail}"
    if reason == "FieldValueRequired":
        return f"Required value: {detail}"
    if reason == "FieldValueDuplicate":
        return "Duplicate value" if omit else f"Duplicate value: {field_value(value)}"
    return f"Invalid value: {detail}" if omit else f"Invalid value: {field_value(value)}: {detail}"


BLOCKING = ("Unsupported value", "Required value", "Too long", "Too many")
BLOCKED_TEXT = "some validation rules were not checked because the object was invalid; correct the existing " \
               "errors to complete validation"


def blocking(errors: Errors) -> bool:
    """hasBlockingErr: a value check's NotSupported, Required, TooLong, TooMany or TypeInvalid error."""
    from nodeagent.apiserver.errors import cause_reason

    return any(detail.startswith(BLOCKING) or cause_reason(detail) == "FieldValueTypeInvalid"
               for _, detail in errors)
