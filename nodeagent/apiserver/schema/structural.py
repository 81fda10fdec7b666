"""The checks a CRD's openAPIV3Schema must pass: structurality and apiextensions' schema rules.

Why apart from crd.py: these walk the raw JSONSchemaProps (the model drops what a structural
schema forbids, such as `type` inside anyOf), and they are most of CRD validation's text.
Upstream sorts the structural errors by their text (its maps iterate randomly); the other
schema errors follow the walk, with properties visited in sorted order here. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.schema.gotext import field_value

Errors = list[tuple[str, str]]

_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]
_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)
_UNSUPPORTED = ("id", "additionalItems", "patternProperties", "definitions", "dependencies", "$ref")


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _subs(props: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = props.get(key)
    return [_m(v) for v in value] if isinstance(value, list) else []


def structural_errors(
    props: Mapping[str, Any], path: str = "spec.versions[0].schema.openAPIV3Schema", *, status_enabled: bool = False
) -> Errors:
    """Everything apiextensions reports about one openAPIV3Schema, as (field path, detail)."""
    errors: Errors = []
    if status_enabled and props.get("type") not in (None, "", "object"):
        errors.append(
            (
                path + ".type",
                f'Invalid value: {field_value(props.get("type"))}: only "object" is allowed '
                "as the type at the root of the schema if the status subresource is enabled",
            )
        )
    if props.get("nullable") is True:
        errors.append((path + ".nullable", "Forbidden: nullable cannot be true at the root"))
    structural: Errors = []
    _invariants(props, "root", path, structural)
    _completeness(props, props, path, path, structural)
    errors.extend(sorted(structural, key=lambda e: f"{e[0]}: {e[1]}"))
    _schema(props, path, errors, root=True, in_meta=False, default_reason="")
    return errors


# --- structurality (schema/validation.go, complete.go) --------------------------------------


def _invariants(s: Mapping[str, Any], level: str, path: str, out: Errors) -> None:
    typ = s.get("type") or ""
    items = s.get("items")
    if typ == "array" and items is None:
        out.append((path + ".items", "Required value: must be specified"))
    if isinstance(items, Mapping):
        _invariants(items, "item", path + ".items", out)
    for key, sub in _m(s.get("properties")).items():
        _invariants(_m(sub), "field", f"{path}.properties[{key}]", out)
    additional = s.get("additionalProperties")
    if additional is not None and additional is not False:
        if level == "root":
            out.append((path + ".additionalProperties", "Forbidden: must not be used at the root"))
        if isinstance(additional, Mapping):
            _invariants(additional, "field", path + ".additionalProperties", out)
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = s.get("x-kubernetes-embedded-resource") is True
    if int_or_string and preserve:
        out.append(
            (
                path + ".x-kubernetes-preserve-unknown-fields",
                "Invalid value: true: must be false if x-kubernetes-int-or-string is true",
            )
        )
    if int_or_string and embedded:
        out.append(
            (
                path + ".x-kubernetes-embedded-resource",
                "Invalid value: true: must be false if x-kubernetes-int-or-string is true",
            )
        )
    skip_any_of = s.get("anyOf") == _INT_OR_STRING
    all_of = _subs(s, "allOf")
    skip_first = bool(all_of) and all_of[0].get("anyOf") == _INT_OR_STRING
    _value_validation(s, skip_any_of, skip_first, path, out)
    if embedded and typ != "object":
        what = "Required value" if not typ else f"Invalid value: {field_value(typ)}"
        out.append((path + ".type", f"{what}: must be object if x-kubernetes-embedded-resource is true"))
    elif not typ and not int_or_string and not preserve:
        where = {"root": "at the root", "item": "for specified array items", "field": "for specified object fields"}
        out.append((path + ".type", f"Required value: must not be empty {where[level]}"))
    if embedded and additional is not None and additional is not False:
        out.append(
            (path + ".additionalProperties", "Forbidden: must not be used if x-kubernetes-embedded-resource is set")
        )
    if level == "root" and typ and typ != "object":
        out.append((path + ".type", f"Invalid value: {field_value(typ)}: must be object at the root"))
    properties = _m(s.get("properties"))
    check_meta = level == "root" or embedded
    for key in ("kind", "apiVersion"):
        if key in properties and check_meta and _m(properties[key]).get("type") != "string":
            out.append(
                (
                    f"{path}.properties[{key}].type",
                    f"Invalid value: {field_value(_m(properties[key]).get('type') or '')}: must be string",
                )
            )
    if "metadata" in properties:
        _metadata(_m(properties["metadata"]), check_meta, level == "root", f"{path}.properties[metadata]", out)
    if embedded and not preserve and not properties:
        out.append(
            (
                path + ".properties",
                "Required value: must not be empty if x-kubernetes-embedded-resource is true "
                "without x-kubernetes-preserve-unknown-fields",
            )
        )


def _metadata(s: Mapping[str, Any], check: bool, root: bool, path: str, out: Errors) -> None:
    if check and s.get("type") != "object":
        out.append((path + ".type", f"Invalid value: {field_value(s.get('type') or '')}: must be object"))
    if root:
        rest = {k: v for k, v in s.items() if k not in ("type", "default")}
        names = set(_m(rest.get("properties")))
        if names and names <= {"name", "generateName"}:
            rest.pop("properties")
        if any(v not in (None, False, "", [], {}) for v in rest.values()):
            out.append(
                (
                    path,
                    "Forbidden: must not specify anything other than name and generateName, "
                    "but metadata is implicitly specified",
                )
            )


def _value_validation(s: Mapping[str, Any], skip_any_of: bool, skip_first: bool, path: str, out: Errors) -> None:
    if not skip_any_of:
        for i, sub in enumerate(_subs(s, "anyOf")):
            _nested(sub, False, f"{path}.anyOf[{i}]", out)
    for i, sub in enumerate(_subs(s, "allOf")):
        _nested(sub, skip_first and i == 0, f"{path}.allOf[{i}]", out)
    for i, sub in enumerate(_subs(s, "oneOf")):
        _nested(sub, False, f"{path}.oneOf[{i}]", out)
    if isinstance(s.get("not"), Mapping):
        _nested(s["not"], False, path + ".not", out)
    pattern = s.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            re.compile(pattern)
        except re.error as err:
            out.append(
                (
                    path + ".pattern",
                    f"Invalid value: {field_value(pattern)}: must be a valid regular "
                    f"expression, but isn't: error parsing regexp: {err.msg}",
                )
            )


def _nested(v: Mapping[str, Any], skip_any_of: bool, path: str, out: Errors) -> None:
    _value_validation(v, skip_any_of, False, path, out)
    if isinstance(v.get("items"), Mapping):
        _nested(v["items"], False, path + ".items", out)
    for key, sub in _m(v.get("properties")).items():
        _nested(_m(sub), False, f"{path}.properties[{key}]", out)
    for key, detail in _NESTED_FORBIDDEN:
        if v.get(key) not in (None, False, "", [], {}):
            out.append((f"{path}.{key}", f"Forbidden: {detail}"))
    if "metadata" in _m(v.get("properties")):
        out.append((f"{path}.properties[metadata]", "Forbidden: must not be specified in a nested context"))


def _completeness(v: Mapping[str, Any], s: Mapping[str, Any] | None, s_path: str, v_path: str, out: Errors) -> None:
    """Every field or items a value validation (allOf, anyOf, oneOf, not) names must be declared."""
    for key, index in (("not", None), ("allOf", 0), ("anyOf", 0), ("oneOf", 0)):
        subs = [v[key]] if index is None and isinstance(v.get(key), Mapping) else _subs(v, key) if index == 0 else []
        for i, sub in enumerate(subs):
            sub_path = f"{v_path}.{key}" if index is None else f"{v_path}.{key}[{i}]"
            _nested_completeness(sub, s, s_path, sub_path, out)


def _nested_completeness(
    v: Mapping[str, Any], s: Mapping[str, Any] | None, s_path: str, v_path: str, out: Errors
) -> None:
    if s is None:
        out.append((s_path, f"Required value: because it is defined in {v_path}"))
        return
    _completeness(v, s, s_path, v_path, out)
    if isinstance(v.get("items"), Mapping):
        items = s.get("items")
        _nested_completeness(
            v["items"], items if isinstance(items, Mapping) else None, s_path + ".items", v_path + ".items", out
        )
    declared = _m(s.get("properties"))
    for key, sub in _m(v.get("properties")).items():
        if key not in declared:
            out.append(
                (f"{s_path}.properties[{key}]", f"Required value: because it is defined in {v_path}.properties[{key}]")
            )
        else:
            _nested_completeness(
                _m(sub), _m(declared[key]), f"{s_path}.properties[{key}]", f"{v_path}.properties[{key}]", out
            )


# --- OpenAPI schema rules (apis/apiextensions/validation) -----------------------------------


def _schema(s: Mapping[str, Any], path: str, out: Errors, *, root: bool, in_meta: bool, default_reason: str) -> None:
    typ = s.get("type")
    if isinstance(typ, str) and typ and typ not in _TYPES:
        supported = ", ".join(f'"{t}"' for t in _TYPES)
        out.append((path + ".type", f"Unsupported value: {field_value(typ)}: supported values: {supported}"))
    if "default" in s and default_reason:
        out.append((path + ".default", f"Forbidden: must not be set {default_reason}"))
    for key in _UNSUPPORTED:
        if s.get(key) not in (None, "", {}, []):
            out.append((f"{path}.{key}", f"Forbidden: {key} is not supported"))
    if typ == "null":
        out.append((path + ".type", "Forbidden: type cannot be set to null, use nullable as an alternative"))
    if isinstance(s.get("items"), list):
        out.append((path + ".items", "Forbidden: items must be a schema object and not an array"))
    if in_meta and s.get("x-kubernetes-embedded-resource") is True:
        out.append((path + ".x-kubernetes-embedded-resource", "Forbidden: must not be used inside of resource meta"))
    if s.get("uniqueItems") is True:
        out.append(
            (
                path + ".uniqueItems",
                "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    properties = _m(s.get("properties"))
    additional = s.get("additionalProperties")
    if additional is not None:
        if properties and (additional is False or isinstance(additional, Mapping)):
            out.append(
                (path + ".additionalProperties", "Forbidden: additionalProperties and properties are mutual exclusive")
            )
        if isinstance(additional, Mapping):
            reason = "inside additionalProperties applying to object metadata" if in_meta else default_reason
            _schema(additional, path + ".additionalProperties", out, root=False, in_meta=in_meta, default_reason=reason)
    for key in sorted(properties):
        sub_meta, reason = in_meta, default_reason
        if (root or s.get("x-kubernetes-embedded-resource") is True) and key in ("metadata", "kind", "apiVersion"):
            sub_meta = True
            if root:
                reason = f"in top-level {key}"
        _schema(
            _m(properties[key]), f"{path}.properties[{key}]", out, root=False, in_meta=sub_meta, default_reason=reason
        )
    if isinstance(s.get("not"), Mapping):
        _schema(s["not"], path + ".not", out, root=False, in_meta=in_meta, default_reason=default_reason)
    for key in ("allOf", "oneOf", "anyOf"):
        for i, sub in enumerate(_subs(s, key)):
            _schema(sub, f"{path}.{key}[{i}]", out, root=False, in_meta=in_meta, default_reason=default_reason)
    if isinstance(s.get("items"), Mapping):
        _schema(s["items"], path + ".items", out, root=False, in_meta=in_meta, default_reason=default_reason)
    _extensions(s, path, out)


def _extensions(s: Mapping[str, Any], path: str, out: Errors) -> None:
    typ = s.get("type") or ""
    items = s.get("items")
    item = _m(items)
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        out.append((path + ".x-kubernetes-preserve-unknown-fields", "Invalid value: false: must be true or undefined"))
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None and typ != "object":
        what = "Required value" if not typ else f"Invalid value: {field_value(typ)}"
        out.append((path + ".type", f"{what}: must be object if x-kubernetes-map-type is specified"))
    if map_type is not None and map_type not in ("atomic", "granular"):
        out.append(
            (
                path + ".x-kubernetes-map-type",
                f'Unsupported value: {field_value(map_type)}: supported values: "atomic", "granular"',
            )
        )
    list_type = s.get("x-kubernetes-list-type")
    if list_type is not None and typ != "array":
        what = "Required value" if not typ else f"Invalid value: {field_value(typ)}"
        out.append((path + ".type", f"{what}: must be array if x-kubernetes-list-type is specified"))
    elif list_type == "set" and item:
        if item.get("type") == "array" and item.get("x-kubernetes-list-type") not in (None, "atomic"):
            out.append(
                (
                    path + ".items.x-kubernetes-list-type",
                    f"Invalid value: {field_value(item['x-kubernetes-list-type'])}: "
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                )
            )
        if item.get("type") == "object" and item.get("x-kubernetes-map-type") != "atomic":
            # Upstream prints the items' list type here, which is unset for an object.
            out.append(
                (
                    path + ".items.x-kubernetes-map-type",
                    f"Invalid value: {field_value(item.get('x-kubernetes-list-type'))}: "
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                )
            )
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        out.append(
            (
                path + ".x-kubernetes-list-type",
                f'Unsupported value: {field_value(list_type)}: supported values: "atomic", "set", "map"',
            )
        )
    keys = s.get("x-kubernetes-list-map-keys") or []
    keys_text = "[]string{" + ", ".join(field_value(k) for k in keys) + "}"
    if keys:
        if list_type is None:
            out.append(
                (
                    path + ".x-kubernetes-list-type",
                    "Required value: must be map if x-kubernetes-list-map-keys is non-empty",
                )
            )
        elif list_type != "map":
            out.append(
                (
                    path + ".x-kubernetes-list-type",
                    f"Invalid value: {field_value(list_type)}: must be map if x-kubernetes-list-map-keys is non-empty",
                )
            )
    if list_type == "map":
        if not keys:
            out.append(
                (
                    path + ".x-kubernetes-list-map-keys",
                    "Required value: must not be empty if x-kubernetes-list-type is map",
                )
            )
        if items is None:
            out.append((path + ".items", "Required value: must have a schema if x-kubernetes-list-type is map"))
        elif item and item.get("type") != "object":
            out.append(
                (
                    path + ".items.type",
                    f"Invalid value: {field_value(item.get('type') or '')}: "
                    "must be object if parent array's x-kubernetes-list-type is map",
                )
            )
        elif item:
            item_props = _m(item.get("properties"))
            seen: set[str] = set()
            for key in keys:
                if key in item_props:
                    if _m(item_props[key]).get("type") in ("array", "object"):
                        out.append(
                            (
                                f"{path}.items.properties[{key}].type",
                                'Invalid value: "object": '
                                "must be a scalar type if parent array's x-kubernetes-list-type is map",
                            )
                        )
                else:
                    out.append(
                        (
                            path + ".x-kubernetes-list-map-keys",
                            f"Invalid value: {keys_text}: entries must all be names of item properties",
                        )
                    )
                if key in seen:
                    out.append(
                        (
                            path + ".x-kubernetes-list-map-keys",
                            f"Invalid value: {keys_text}: must not contain duplicate entries",
                        )
                    )
                seen.add(key)
    if list_type in ("set", "map") and item:
        if item.get("nullable") is True:
            out.append(
                (path + ".items.nullable", f"Forbidden: cannot be nullable when x-kubernetes-list-type is {list_type}")
            )
        if list_type == "map":
            required = set(item.get("required") or ())
            for key in keys:
                prop = _m(_m(item.get("properties")).get(key))
                if key not in _m(item.get("properties")):
                    continue
                if key not in required and "default" not in prop:
                    out.append(
                        (
                            f"{path}.items.properties[{key}].default",
                            "Required value: this property is in "
                            "x-kubernetes-list-map-keys, so it must have a default or be a required property",
                        )
                    )
                if prop.get("nullable") is True:
                    out.append(
                        (
                            f"{path}.items.properties[{key}].nullable",
                            "Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                        )
                    )
    for i, rule in enumerate(s.get("x-kubernetes-validations") or []):
        rule = _m(rule)
        rule_path = f"{path}.x-kubernetes-validations[{i}]"
        text, message = str(rule.get("rule") or "").strip(), str(rule.get("message") or "")
        if not text:
            out.append((rule_path + ".rule", "Required value: rule is not specified"))
        elif message and not message.strip():
            out.append(
                (rule_path + ".message", f"Invalid value: {field_value(message)}: must be non-empty if specified")
            )
        elif re.search(r"[\n\r]", message.strip()):
            out.append((rule_path + ".message", f"Invalid value: {field_value(message)}: must not contain line breaks"))
        elif re.search(r"[\n\r]", text) and not message.strip():
            out.append(
                (rule_path + ".message", "Required value: message must be specified if rule contains line breaks")
            )
