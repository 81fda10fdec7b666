"""A CRD version's selectableFields (KEP-4358, GA in 1.32): their checks, their values, their OpenAPI.

Why one module: the same jsonPath is checked when the CRD is written (apiextensions'
ValidateCustomResourceSelectableFields over cel.ValidFieldPath, with its error texts), read from
every custom resource a field selector looks at (customresource strategy's selectableFields: the
value as fmt.Sprint prints it, "" when absent), and published as `x-kubernetes-selectable-fields`
on the version's definitions (the openapi builder's buildSelectableFields). The selector's name of
a field is its jsonPath without the leading dot. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodeagent.apiserver.schema.gotext import field_value, go_v
from nodeagent.apiserver.schema.model import Schema
from nodeagent.kinds.model import path

MAX_SELECTABLE_FIELDS = 8
EXTENSION = "x-kubernetes-selectable-fields"
_TYPES = ("string", "boolean", "integer")
_TYPE_DETAIL = ("must point to a field of type string, boolean or integer. Enum string fields and strings with "
                "formats are allowed.")

Errors = list[tuple[str, str]]


def names(fields: Any) -> tuple[str, ...]:
    """The field selector's names of a version's selectableFields (strings.TrimPrefix(jsonPath, "."))."""
    out = []
    for f in fields if isinstance(fields, list) else ():
        path = str(f.get("jsonPath") or "") if isinstance(f, Mapping) else ""
        out.append(path[1:] if path.startswith(".") else path)
    return tuple(out)


def published(definition: Schema, fields: Sequence[str]) -> Schema:
    """A version's published definition (the kind's or its List's) with the extension that lists its
    selectable fields (none for a version without them), as the openapi builder adds it to both."""
    if not fields:
        return definition
    return dataclasses.replace(definition, extra={**definition.extra, EXTENSION: [{"fieldPath": f} for f in fields]})


def getter(name: str) -> Callable[[Mapping[str, Any]], str]:
    """The value a field selector compares for `name` (a jsonPath without its dot): the field's
    value as fmt.Sprint prints it (ints as they are, booleans true/false), "" when it is missing
    (jsonpath with AllowMissingKeys) or null."""
    return path(*name.split("."), text=go_v)


def validate(fields: Any, schema: Mapping[str, Any], path: str) -> Errors:
    """ValidateCustomResourceSelectableFields: each jsonPath a valid field path of the schema (no array
    notation), not in metadata, of type string, boolean or integer, none twice, at most 8 distinct.
    (Upstream lets a CRD that already had more than 8 keep them unchanged on update; nodeagent never
    stored such a CRD, so that allowance has nothing to apply to.)"""
    errors: Errors = []
    seen: set[tuple[tuple[bool, str], ...]] = set()
    for i, item in enumerate(fields if isinstance(fields, list) else ()):
        where = f"{path}[{i}].jsonPath"
        json_path = item.get("jsonPath") if isinstance(item, Mapping) else None
        if not isinstance(json_path, str) or not json_path:
            errors.append((where, "Required value"))
            continue
        try:
            steps, found = valid_field_path(json_path, schema)
        except ValueError as err:
            errors.append((where, f"Invalid value: {field_value(json_path)}: is an invalid path: {err}"))
            continue
        if steps and steps[0] == (True, "metadata"):
            errors.append((where, f"Invalid value: {field_value(json_path)}: must not point to fields in metadata"))
        if not isinstance(found, Mapping) or found.get("type") not in _TYPES:
            errors.append((where, f"Invalid value: {field_value(json_path)}: {_TYPE_DETAIL}"))
        key = tuple(steps)
        if key in seen:
            errors.append((where, f"Duplicate value: {field_value(json_path)}"))
        seen.add(key)
    if len(seen) > MAX_SELECTABLE_FIELDS:
        errors.append((path, f"Too many: {len(seen)}: must have at most {MAX_SELECTABLE_FIELDS} items"))
    return errors


def valid_field_path(json_path: str, schema: Mapping[str, Any]) -> tuple[list[tuple[bool, str]], Any]:
    """cel.ValidFieldPath with WithFieldPathAllowArrayNotation(false): the steps (named property or map
    key, name) and the schema found; ValueError with upstream's text when the path is not one."""
    steps: list[tuple[bool, str]] = []
    cur: Any = schema
    tokens = iter(_tokens(json_path))
    for tok in tokens:
        if tok == "[":
            raise ValueError("array notation is not allowed")
        if tok != ".":
            raise ValueError(f"expected [ or . but got: {tok}")
        name = next(tokens, None)
        if name is None:
            raise ValueError("unexpected end of JSON path")
        node = cur if isinstance(cur, Mapping) else {}
        props, additional = node.get("properties"), node.get("additionalProperties")
        if isinstance(props, Mapping):
            if name not in props:
                raise ValueError("does not refer to a valid field")
            steps.append((True, name))
            cur = props[name]
        elif additional is not None and additional is not False:
            steps.append((False, name))
            cur = additional if isinstance(additional, Mapping) else None
        else:
            raise ValueError("does not refer to a valid field")
    return steps, cur


def _tokens(text: str) -> list[str]:
    """The scanner of cel.ValidFieldPath: '.', '[' and ']' alone, a single-quoted string whole (up to
    a quote not after a backslash), anything else up to the next delimiter."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "'":
            j = i + 1
            while j < len(text) and not (text[j] == "'" and text[j - 1] != "\\"):
                j += 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text[i] in ".[]":
            out.append(text[i])
            i += 1
        else:
            j = i
            while j < len(text) and text[j] not in ".[]":
                j += 1
            out.append(text[i:j])
            i = j
    return out
