"""The swagger 2.0 document as gnostic's openapi.v2.Document message (the protobuf /openapi/v2).

Why: kubectl (and client-go's discovery) asks /openapi/v2 for
`application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and decodes the answer with gnostic's
generated Go types; a JSON answer fails with "proto: cannot parse invalid wire-format data"
(`kubectl create -f` of a v1 List hits it). Upstream (kube-openapi's handler) parses its JSON
document with gnostic and marshals the message; this module does the same mapping from the JSON
dict openapi.py builds: free-key objects become ordered (name, value) lists in document order,
`x-` keys become NamedAny vendor extensions carrying their value as YAML text (what gnostic writes
and what kube-openapi's proto reader YAML-decodes), `$ref` is `_ref`, `type` a list, `items` a list.

A key the swagger 2.0 schema does not allow is an error naming its JSON path (gnostic refuses the
document the same way), so a mistake in the document builder shows up instead of silently
vanishing from the protobuf. Pure: dict in, message (or bytes) out; only the generated message
classes are imported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import yaml

from nodeagent.apis.openapi.v2 import openapiv2_pb2 as pb


class OpenAPIProtoError(ValueError):
    """The JSON document has something swagger 2.0 (and so the protobuf schema) has no place for."""


# JSON key -> (message field, kind). Kinds: str, bool, float, int, strs (repeated string),
# any (Any as YAML), anys (repeated Any), ext (vendor extensions: never listed, any `x-` key).
_Fields = Mapping[str, tuple[str, str]]

_INFO: _Fields = {
    "title": ("title", "str"), "version": ("version", "str"), "description": ("description", "str"),
    "termsOfService": ("terms_of_service", "str"),
}
_EXTERNAL_DOCS: _Fields = {"description": ("description", "str"), "url": ("url", "str")}
_TAG: _Fields = {"name": ("name", "str"), "description": ("description", "str")}
_PRIMITIVE: _Fields = {
    "type": ("type", "str"), "format": ("format", "str"), "collectionFormat": ("collection_format", "str"),
    "default": ("default", "any"), "maximum": ("maximum", "float"), "exclusiveMaximum": ("exclusive_maximum", "bool"),
    "minimum": ("minimum", "float"), "exclusiveMinimum": ("exclusive_minimum", "bool"),
    "maxLength": ("max_length", "int"), "minLength": ("min_length", "int"), "pattern": ("pattern", "str"),
    "maxItems": ("max_items", "int"), "minItems": ("min_items", "int"), "uniqueItems": ("unique_items", "bool"),
    "enum": ("enum", "anys"), "multipleOf": ("multiple_of", "float"),
}
_NON_BODY: _Fields = {
    **_PRIMITIVE, "required": ("required", "bool"), "in": ("in", "str"), "description": ("description", "str"),
    "name": ("name", "str"),
}
_QUERY: _Fields = {**_NON_BODY, "allowEmptyValue": ("allow_empty_value", "bool")}
_BODY: _Fields = {"description": ("description", "str"), "name": ("name", "str"), "in": ("in", "str"),
                  "required": ("required", "bool")}
_SCHEMA: _Fields = {
    "$ref": ("_ref", "str"), "format": ("format", "str"), "title": ("title", "str"),
    "description": ("description", "str"), "default": ("default", "any"), "multipleOf": ("multiple_of", "float"),
    "maximum": ("maximum", "float"), "exclusiveMaximum": ("exclusive_maximum", "bool"),
    "minimum": ("minimum", "float"), "exclusiveMinimum": ("exclusive_minimum", "bool"),
    "maxLength": ("max_length", "int"), "minLength": ("min_length", "int"), "pattern": ("pattern", "str"),
    "maxItems": ("max_items", "int"), "minItems": ("min_items", "int"), "uniqueItems": ("unique_items", "bool"),
    "maxProperties": ("max_properties", "int"), "minProperties": ("min_properties", "int"),
    "required": ("required", "strs"), "enum": ("enum", "anys"), "discriminator": ("discriminator", "str"),
    "readOnly": ("read_only", "bool"), "example": ("example", "any"),
}
_OPERATION: _Fields = {
    "tags": ("tags", "strs"), "summary": ("summary", "str"), "description": ("description", "str"),
    "operationId": ("operation_id", "str"), "produces": ("produces", "strs"), "consumes": ("consumes", "strs"),
    "schemes": ("schemes", "strs"), "deprecated": ("deprecated", "bool"),
}
_DOCUMENT: _Fields = {
    "swagger": ("swagger", "str"), "host": ("host", "str"), "basePath": ("base_path", "str"),
    "schemes": ("schemes", "strs"), "consumes": ("consumes", "strs"), "produces": ("produces", "strs"),
}
_API_KEY: _Fields = {"type": ("type", "str"), "name": ("name", "str"), "in": ("in", "str"),
                     "description": ("description", "str")}
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
# libyaml's emitter when PyYAML has it (the document carries about a thousand extensions).
_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def to_yaml(value: Any) -> str:
    """A JSON value as the YAML text gnostic stores in Any.yaml (block style, indent 2, keys in order)."""
    text = yaml.dump(value, Dumper=_DUMPER, default_flow_style=False, sort_keys=False, allow_unicode=True,
                     width=1 << 30)
    return text[: -len("...\n")] if text.endswith("\n...\n") else text


def _any(value: Any) -> pb.Any:
    return pb.Any(yaml=to_yaml(value))


def _obj(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise OpenAPIProtoError(f"{path}: expected an object, got {type(value).__name__}")
    return value


def _fill(msg: Any, doc: Mapping[str, Any], fields: _Fields, path: str,
          special: Mapping[str, Callable[[Any, str], None]] | None = None) -> None:
    """Copies the listed keys of `doc` into `msg`, `x-` keys into its vendor_extension, and hands
    the keys in `special` to their functions; anything else is an error naming the key."""
    special = special or {}
    for key, value in doc.items():
        where = f"{path}.{key}"
        if key in special:
            special[key](value, where)
            continue
        if key.startswith("x-"):
            msg.vendor_extension.add(name=key, value=_any(value))
            continue
        if key not in fields:
            raise OpenAPIProtoError(f"{where}: swagger 2.0 has no field {key!r} here")
        name, kind = fields[key]
        _set(msg, name, kind, value, where)


def _set(msg: Any, name: str, kind: str, value: Any, where: str) -> None:
    checks: dict[str, tuple[type, ...]] = {"str": (str,), "bool": (bool,), "float": (int, float), "int": (int,)}
    if kind in checks:
        if not isinstance(value, checks[kind]) or (kind != "bool" and isinstance(value, bool)):
            raise OpenAPIProtoError(f"{where}: expected a {kind}, got {value!r}")
        number: Any = value
        setattr(msg, name, float(number) if kind == "float" else value)
    elif kind == "strs":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise OpenAPIProtoError(f"{where}: expected a list of strings, got {value!r}")
        getattr(msg, name).extend(value)
    elif kind == "any":
        getattr(msg, name).CopyFrom(_any(value))
    elif kind == "anys":
        if not isinstance(value, list):
            raise OpenAPIProtoError(f"{where}: expected a list, got {value!r}")
        getattr(msg, name).extend(_any(v) for v in value)
    else:  # pragma: no cover - the tables above only use the kinds handled here
        raise AssertionError(kind)


# --- schemas ----------------------------------------------------------------------------------


def schema(doc: Any, path: str) -> pb.Schema:
    """One JSON schema (a definition, a property, a body or response schema)."""
    out = pb.Schema()
    _schema_into(out, doc, path)
    return out


def _schema_into(out: pb.Schema, doc: Any, path: str) -> None:
    """Fills `out` in place: building children where they live avoids copying every subtree once
    per level (the built-in document has thousands of nested schemas)."""
    node = _obj(doc, path)

    def type_(value: Any, where: str) -> None:
        values = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str) for v in values):
            raise OpenAPIProtoError(f"{where}: expected a type name or a list of them, got {value!r}")
        out.type.value.extend(values)

    def items(value: Any, where: str) -> None:
        listed = value if isinstance(value, list) else [value]
        for i, v in enumerate(listed):
            _schema_into(out.items.schema.add(), v, f"{where}[{i}]")

    def properties(value: Any, where: str) -> None:
        out.properties.SetInParent()
        for name, prop in _obj(value, where).items():
            _schema_into(out.properties.additional_properties.add(name=name).value, prop, f"{where}.{name}")

    def additional(value: Any, where: str) -> None:
        if isinstance(value, bool):
            out.additional_properties.boolean = value
        else:
            out.additional_properties.schema.SetInParent()
            _schema_into(out.additional_properties.schema, value, where)

    def all_of(value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise OpenAPIProtoError(f"{where}: expected a list of schemas, got {value!r}")
        for i, v in enumerate(value):
            _schema_into(out.all_of.add(), v, f"{where}[{i}]")

    def external_docs(value: Any, where: str) -> None:
        _fill(out.external_docs, _obj(value, where), _EXTERNAL_DOCS, where)

    _fill(out, node, _SCHEMA, path, {"type": type_, "items": items, "properties": properties,
                                     "additionalProperties": additional, "allOf": all_of,
                                     "externalDocs": external_docs})


# --- operations -------------------------------------------------------------------------------


def _primitive_items(doc: Any, path: str) -> pb.PrimitivesItems:
    out = pb.PrimitivesItems()
    _fill(out, _obj(doc, path), _PRIMITIVE, path,
          {"items": lambda v, w: out.items.CopyFrom(_primitive_items(v, w))})
    return out


def parameter(doc: Any, path: str) -> pb.ParametersItem:
    """One parameter: a $ref, a body parameter, or a query/path parameter by its `in`."""
    node = _obj(doc, path)
    out = pb.ParametersItem()
    if "$ref" in node:
        _fill(out.json_reference, node, {"$ref": ("_ref", "str"), "description": ("description", "str")}, path)
        return out
    where = node.get("in")
    if where == "body":
        body = out.parameter.body_parameter
        _fill(body, node, _BODY, path, {"schema": lambda v, w: body.schema.CopyFrom(schema(v, w))})
    elif where in ("query", "path"):
        sub: Any = out.parameter.non_body_parameter.query_parameter_sub_schema if where == "query" \
            else out.parameter.non_body_parameter.path_parameter_sub_schema
        _fill(sub, node, _QUERY if where == "query" else _NON_BODY, path,
              {"items": lambda v, w: sub.items.CopyFrom(_primitive_items(v, w))})
    else:
        raise OpenAPIProtoError(f"{path}.in: unsupported parameter location {where!r} (want body, query or path)")
    return out


def _responses(doc: Any, path: str) -> pb.Responses:
    out = pb.Responses()
    for code, value in _obj(doc, path).items():
        where = f"{path}.{code}"
        if code.startswith("x-"):
            out.vendor_extension.add(name=code, value=_any(value))
            continue
        node = _obj(value, where)
        item = out.response_code.add(name=code).value
        if "$ref" in node:
            _fill(item.json_reference, node, {"$ref": ("_ref", "str"), "description": ("description", "str")},
                  where)
            continue
        resp = item.response
        _fill(resp, node, {"description": ("description", "str")}, where,
              {"schema": lambda v, w: resp.schema.schema.CopyFrom(schema(v, w))})  # noqa: B023 - called at once
    return out


def _security(value: Any, path: str) -> list[pb.SecurityRequirement]:
    if not isinstance(value, list):
        raise OpenAPIProtoError(f"{path}: expected a list of security requirements, got {value!r}")
    out: list[pb.SecurityRequirement] = []
    for i, req in enumerate(value):
        item = pb.SecurityRequirement()
        for name, scopes in _obj(req, f"{path}[{i}]").items():
            arr = item.additional_properties.add(name=name).value
            _set(arr, "value", "strs", scopes, f"{path}[{i}].{name}")
        out.append(item)
    return out


def operation(doc: Any, path: str) -> pb.Operation:
    out = pb.Operation()
    _fill(out, _obj(doc, path), _OPERATION, path, {
        "parameters": lambda v, w: out.parameters.extend(_parameters(v, w)),
        "responses": lambda v, w: out.responses.CopyFrom(_responses(v, w)),
        "security": lambda v, w: out.security.extend(_security(v, w)),
        "externalDocs": lambda v, w: _fill(out.external_docs, _obj(v, w), _EXTERNAL_DOCS, w),
    })
    return out


def _parameters(value: Any, path: str) -> list[pb.ParametersItem]:
    if not isinstance(value, list):
        raise OpenAPIProtoError(f"{path}: expected a list of parameters, got {value!r}")
    return [parameter(p, f"{path}[{i}]") for i, p in enumerate(value)]


def _operation_setter(target: pb.Operation) -> Callable[[Any, str], None]:
    return lambda value, where: target.CopyFrom(operation(value, where))


def path_item(doc: Any, path: str) -> pb.PathItem:
    out = pb.PathItem()
    special: dict[str, Callable[[Any, str], None]] = {
        "parameters": lambda v, w: out.parameters.extend(_parameters(v, w)),
    }
    for method in _METHODS:
        special[method] = _operation_setter(getattr(out, method))
    _fill(out, _obj(doc, path), {"$ref": ("_ref", "str")}, path, special)
    return out


# --- the document -----------------------------------------------------------------------------


def document(doc: Mapping[str, Any]) -> pb.Document:
    """The whole swagger 2.0 document as openapi.v2.Document."""
    out = pb.Document()

    def paths(value: Any, where: str) -> None:
        out.paths.SetInParent()
        for name, item in _obj(value, where).items():
            if name.startswith("x-"):
                out.paths.vendor_extension.add(name=name, value=_any(item))
            elif name.startswith("/"):
                out.paths.path.add(name=name, value=path_item(item, f"{where}[{name}]"))
            else:
                raise OpenAPIProtoError(f"{where}.{name}: a path must start with '/'")

    def definitions(value: Any, where: str) -> None:
        out.definitions.SetInParent()
        for name, item in _obj(value, where).items():
            entry = out.definitions.additional_properties.add(name=name).value
            entry.SetInParent()
            _schema_into(entry, item, f"{where}[{name}]")

    def security_definitions(value: Any, where: str) -> None:
        out.security_definitions.SetInParent()
        for name, item in _obj(value, where).items():
            node = _obj(item, f"{where}.{name}")
            if node.get("type") != "apiKey":
                raise OpenAPIProtoError(f"{where}.{name}.type: only apiKey security schemes are supported, "
                                        f"got {node.get('type')!r}")
            entry = out.security_definitions.additional_properties.add(name=name)
            _fill(entry.value.api_key_security, node, _API_KEY, f"{where}.{name}")

    def tags(value: Any, where: str) -> None:
        for i, tag in enumerate(value if isinstance(value, list) else []):
            _fill(out.tags.add(), _obj(tag, f"{where}[{i}]"), _TAG, f"{where}[{i}]")

    _fill(out, doc, _DOCUMENT, "$", {
        "info": lambda v, w: _fill(out.info, _obj(v, w), _INFO, w),
        "paths": paths,
        "definitions": definitions,
        "security": lambda v, w: out.security.extend(_security(v, w)),
        "securityDefinitions": security_definitions,
        "tags": tags,
        "externalDocs": lambda v, w: _fill(out.external_docs, _obj(v, w), _EXTERNAL_DOCS, w),
    })
    return out


def encode(doc: Mapping[str, Any]) -> bytes:
    """The document's protobuf encoding, as served for the protobuf Accept types."""
    return bytes(document(doc).SerializeToString())
