"""CustomResourceDefinitions: their schemas in the model, and the validation of a CRD on create.

Why here: a CRD brings its own kind, and everything the API server then does for its objects
(pruning, defaulting, value validation, strict field checks, apply) reads the schema in the
shared model. Validation follows apiextensions' ValidateCustomResourceDefinition, including a
detail clients see: apiextensions.k8s.io/v1 moves per-version schemas, subresources and
columns that are identical in every version to the top level before validating, so a
single-version CRD's schema errors are reported under `spec.validation.openAPIV3Schema`.
Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlparse

from nodeagent.apiserver.schema import selectable
from nodeagent.apiserver.schema.gotext import field_value
from nodeagent.apiserver.schema.model import ANY, Schema
from nodeagent.apiserver.schema.structural import structural_errors
from nodeagent.apiserver.schema.values import defaults, validate_values
from nodeagent.store.validation import DNS1123_SUBDOMAIN_MAX, SUBDOMAIN_MSG

__all__ = [
    "defaults", "kube_native", "published", "published_list", "schema_from_openapi_v3", "structural_errors",
    "validate_crd", "validate_values",
]  # fmt: skip

OBJECT_META_REF = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META_REF = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
_TYPE_META = {"apiVersion": Schema(type="string"), "kind": Schema(type="string")}
_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
# The descriptions apiextensions' openapi builder publishes: TypeMeta's and PartialObjectMetadata(List)'s
# swagger docs, and its own for an embedded resource's apiVersion and kind.
_TYPE_META_DOCS = {
    "apiVersion": Schema(type="string", description=(
        "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
        f"recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
        f"{_CONVENTIONS}#resources")),
    "kind": Schema(type="string", description=(
        "Kind is a string value representing the REST resource this object represents. Servers may infer this "
        "from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
        f"{_CONVENTIONS}#types-kinds")),
}
_EMBEDDED_DOCS = {
    "apiVersion": Schema(type="string", description=(
        f"apiVersion defines the versioned schema of this representation of an object. More info: "
        f"{_CONVENTIONS}#resources")),
    "kind": Schema(type="string", description=(
        f"kind is a string value representing the type of this object. In CamelCase. More info: "
        f"{_CONVENTIONS}#types-kinds")),
}
_OBJECT_META = Schema(ref=OBJECT_META_REF,
                      description=f"Standard object's metadata. More info: {_CONVENTIONS}#metadata")
_LIST_META = Schema(ref=LIST_META_REF, description=f"Standard list metadata. More info: {_CONVENTIONS}#types-kinds")
_JUNCTORS = ("allOf", "anyOf", "oneOf", "not")

Errors = list[tuple[str, str]]

_MAPPED = {
    "type", "format", "description", "properties", "required", "items", "additionalProperties", "enum",
    "default", "nullable", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
    "maxLength", "pattern", "minItems", "maxItems", "minProperties", "maxProperties",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
}  # fmt: skip


def kube_native(schema: Schema) -> Schema:
    """The schema a custom resource's managedFields and server-side apply walk: the version's schema
    with apiVersion and kind (strings) and metadata (ObjectMeta) set at the top and in every
    x-kubernetes-embedded-resource object, as apiextensions' openapi builder makes the type converter's
    models (buildKubeNative: SetProperty("metadata", ObjectMeta), addTypeMetaProperties,
    addEmbeddedProperties). Without them an apply to a CRD whose schema leaves them out (most do) was
    refused with a 500 (`.apiVersion: field not declared in schema`), and metadata's lists were
    deduced atomic (ownerReferences is a map keyed by uid)."""
    meta = Schema(ref=OBJECT_META_REF)
    top = _embedded(schema, _TYPE_META, meta)
    return dataclasses.replace(top, properties={**top.properties, **_TYPE_META, "metadata": meta})


def _embedded(s: Schema, type_meta: Mapping[str, Schema], meta: Schema, *, required: bool = False,
              v2: bool = False) -> Schema:
    """addEmbeddedProperties, children first: every x-kubernetes-embedded-resource object given `type_meta`
    (apiVersion, kind) and `meta` (metadata), and with `required` those two required (the published
    documents); in v2 not into an object that preserves unknown fields. Unchanged nodes are kept."""
    props = {k: _embedded(v, type_meta, meta, required=required, v2=v2) for k, v in s.properties.items()}
    items = _embedded(s.items, type_meta, meta, required=required, v2=v2) if s.items is not None else None
    additional = s.additional_properties
    if additional is not None and additional is not ANY:
        additional = _embedded(additional, type_meta, meta, required=required, v2=v2)
    needed = s.required
    if s.embedded_resource and not (v2 and s.preserve_unknown_fields):
        props.update(type_meta, metadata=meta)
        if required:
            needed += tuple(k for k in ("kind", "apiVersion") if k not in s.required)
    if props == s.properties and items is s.items and additional is s.additional_properties and needed == s.required:
        return s
    return dataclasses.replace(s, properties=props, items=items, additional_properties=additional, required=needed)


def published(schema: Schema, *, v2: bool) -> Schema:
    """A custom resource version's definition in the published OpenAPI (v2's /openapi/v2 when v2, else v3's
    /openapi/v3/apis/<group>/<version>), as apiextensions' openapi builder makes it (buildKubeNative):
    metadata a described ref to ObjectMeta, apiVersion and kind TypeMeta's (described), every
    x-kubernetes-embedded-resource object given the same (its own descriptions, and both required).
    V2 first goes through openapiv2.ToStructuralOpenAPIV2 (see _to_v2), and a root that preserves
    unknown fields is published as a bare object there: kubectl's v2 validation would refuse every field
    not listed. Without this `kubectl explain` showed only spec and status."""
    if v2 and schema.preserve_unknown_fields:
        return Schema(type="object")
    top = _to_v2(schema) if v2 else schema
    top = dataclasses.replace(top, properties={**top.properties, "metadata": _OBJECT_META, **_TYPE_META_DOCS})
    return _embedded(top, _EMBEDDED_DOCS, _OBJECT_META, required=True, v2=v2)


def published_list(definition: str, kind: str, list_kind: str, plural: str) -> Schema:
    """The List kind's published definition (the builder's buildListSchema); `definition` names the kind's."""
    return Schema(
        type="object",
        description=f"{list_kind} is a list of {kind}",
        required=("items",),
        properties={
            "items": Schema(type="array", items=Schema(ref=definition),
                            description=f"List of {plural}. More info: {_CONVENTIONS}"),
            "metadata": _LIST_META,
            **_TYPE_META_DOCS,
        },
    )


def _to_v2(s: Schema) -> Schema:
    """openapiv2.ToStructuralOpenAPIV2: no junctors (allOf, anyOf, oneOf, not); a nullable value loses its
    type, items and properties; one preserving unknown fields its items and properties (and an object's
    type); an array left without items its type; a nullable property is no longer required, nor is any
    property when additionalProperties is nullable. A node is changed before its children are visited, so
    the required filter sees the children's nullable as written. No defaults either: the v2 controller
    prunes them (kube-openapi's handler.PruneDefaults) before merging with the built-ins' spec."""
    typ, props, items = s.type, s.properties, s.items
    if s.nullable:
        typ, props, items = "", {}, None
    if s.preserve_unknown_fields:
        props, items = {}, None
    if items is None and typ == "array":
        typ = ""
    if s.preserve_unknown_fields and typ == "object":
        typ = ""
    required = tuple(r for r in s.required if not (r in props and props[r].nullable))
    additional = s.additional_properties
    if additional is not None and additional is not ANY:
        if additional.nullable:
            required = ()
        additional = _to_v2(additional)
    return dataclasses.replace(
        s, type=typ, properties={k: _to_v2(v) for k, v in props.items()},
        items=_to_v2(items) if items is not None else None, additional_properties=additional, required=required,
        nullable=False, default=None, extra={k: v for k, v in s.extra.items() if k not in _JUNCTORS},
    )


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def schema_from_openapi_v3(props: Mapping[str, Any]) -> Schema:
    """The model of a JSONSchemaProps. Keywords the model has no field for (allOf, anyOf, oneOf,
    not, x-kubernetes-validations, title, example, multipleOf, ...) are kept verbatim in `extra`;
    `additionalProperties: false` too (it maps to no value schema)."""
    items = props.get("items")
    additional = props.get("additionalProperties")
    extra = {k: v for k, v in props.items() if k not in _MAPPED}
    if additional is False:
        extra["additionalProperties"] = False
    if isinstance(items, list):
        extra["items"] = items
    return Schema(
        type=str(props.get("type") or ""),
        format=str(props.get("format") or ""),
        description=str(props.get("description") or ""),
        properties={k: schema_from_openapi_v3(v) for k, v in (props.get("properties") or {}).items()},
        required=tuple(props.get("required") or ()),
        items=schema_from_openapi_v3(items) if isinstance(items, Mapping) else None,
        additional_properties=(
            schema_from_openapi_v3(additional)
            if isinstance(additional, Mapping)
            else ANY
            if additional is True
            else None
        ),
        enum=tuple(props.get("enum") or ()),
        default=props.get("default"),
        int_or_string=props.get("x-kubernetes-int-or-string") is True,
        preserve_unknown_fields=props.get("x-kubernetes-preserve-unknown-fields") is True,
        embedded_resource=props.get("x-kubernetes-embedded-resource") is True,
        list_type=str(props.get("x-kubernetes-list-type") or ""),
        list_map_keys=tuple(props.get("x-kubernetes-list-map-keys") or ()),
        map_type=str(props.get("x-kubernetes-map-type") or ""),
        nullable=props.get("nullable") is True,
        minimum=_num(props.get("minimum")),
        maximum=_num(props.get("maximum")),
        exclusive_minimum=props.get("exclusiveMinimum") is True,
        exclusive_maximum=props.get("exclusiveMaximum") is True,
        min_length=_int(props.get("minLength")),
        max_length=_int(props.get("maxLength")),
        pattern=str(props.get("pattern") or ""),
        min_items=_int(props.get("minItems")),
        max_items=_int(props.get("maxItems")),
        min_properties=_int(props.get("minProperties")),
        max_properties=_int(props.get("maxProperties")),
        extra=extra,
    )


# --- names ----------------------------------------------------------------------------------

_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE = re.compile(f"^{_DNS1035}$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    f"regex used for validation is '{_DNS1035}')"
)
_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_COLUMN_TYPES = "boolean,date,integer,number,string"
_COLUMN_FORMATS = "byte,date,date-time,double,float,int32,int64,password"
_APPROVAL = "api-approved.kubernetes.io"
_APPROVAL_DOC = "see https://github.com/kubernetes/enhancements/pull/1111"


def _dns1035(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not _DNS1035_RE.match(value):
        out.append(_DNS1035_MSG)
    return out


def _subdomain(value: str) -> list[str]:
    out = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        out.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if not _SUBDOMAIN_RE.match(value):
        out.append(SUBDOMAIN_MSG)
    return out


def _invalid(value: Any, detail: str) -> str:
    return f"Invalid value: {field_value(value)}: {detail}"


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# --- the CRD ----------------------------------------------------------------------------------


def set_defaults(crd: dict[str, Any]) -> None:
    """apiextensions v1's SetDefaults_CustomResourceDefinitionSpec and SetDefaults_ServiceReference,
    which upstream's decoding runs on every write, in place: names.singular (the kind lower-cased),
    names.listKind (kind + "List"), conversion {strategy: None}, a conversion webhook service's port
    443. Why stored: kube-apiserver answers (and stores) the defaulted CRD, not only validates it."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = names["kind"] if isinstance(names.get("kind"), str) else ""
        if not names.get("singular"):
            names["singular"] = kind.lower()
        if not names.get("listKind") and kind:
            names["listKind"] = kind + "List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": "None"}
    webhook = spec["conversion"].get("webhook") if isinstance(spec["conversion"], dict) else None
    config = webhook.get("clientConfig") if isinstance(webhook, dict) else None
    service = config.get("service") if isinstance(config, dict) else None
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443


def validate_crd(crd: Mapping[str, Any]) -> Errors:
    """Errors of an apiextensions.k8s.io/v1 CustomResourceDefinition on create, as (path, detail),
    after v1 defaulting (singular, listKind, conversion strategy) and in upstream's order."""
    errors: Errors = []
    meta, spec = _m(crd.get("metadata")), _m(crd.get("spec"))
    names = dict(_m(spec.get("names")))
    kind = str(names.get("kind") or "")
    names.setdefault("singular", kind.lower())
    names.setdefault("listKind", kind + "List" if kind else "")
    group, plural = str(spec.get("group") or ""), str(names.get("plural") or "")
    versions = [_m(v) for v in spec.get("versions") or []]

    name = str(meta.get("name") or "")
    if not name and not meta.get("generateName"):
        errors.append(("metadata.name", "Required value: name or generateName is required"))
    elif name:
        for detail in _subdomain(name) + (
            [] if name == f"{plural}.{group}" else ['must be spec.names.plural+"."+spec.group']
        ):
            errors.append(("metadata.name", _invalid(name, detail)))

    if not group:
        errors.append(("spec.group", "Required value"))
    elif _subdomain(group):
        errors.append(("spec.group", _invalid(group, ",".join(_subdomain(group)))))
    elif "." not in group:
        errors.append(("spec.group", _invalid(group, "should be a domain with at least one dot")))
    scope = spec.get("scope") or ""
    if not scope:
        errors.append(("spec.scope", "Required value"))
    elif scope not in ("Cluster", "Namespaced"):
        errors.append(
            ("spec.scope", f'Unsupported value: {field_value(scope)}: supported values: "Cluster", "Namespaced"')
        )

    schemas = [_m(v.get("schema")).get("openAPIV3Schema") for v in versions]
    subresources = [v.get("subresources") for v in versions]
    columns = [v.get("additionalPrinterColumns") or [] for v in versions]
    shared_schema = _identical(schemas)
    shared_subresources = _identical(subresources)
    shared_columns = _identical(columns)
    selectables = [v.get("selectableFields") or [] for v in versions]
    shared_selectable = all(s == selectables[0] for s in selectables)
    status_anywhere = any("status" in _m(s) for s in subresources)
    for i, schema in enumerate(schemas):
        if not isinstance(schema, Mapping):
            errors.append((f"spec.versions[{i}].schema.openAPIV3Schema", "Required value"))

    storage, seen, unique = 0, set(), True
    for i, version in enumerate(versions):
        vname = str(version.get("name") or "")
        storage += version.get("storage") is True
        unique = unique and vname not in seen
        seen.add(vname)
        if _dns1035(vname):
            errors.append((f"spec.versions[{i}].name", _invalid(vname, ",".join(_dns1035(vname)))))
        errors.extend(_version(version, i, shared_schema, shared_subresources, shared_columns))
        if not shared_selectable:
            errors.extend(_version_selectable(version, i, shared_schema))
    shown = _versions_text(versions)
    if not unique:
        errors.append(("spec.versions", f"Invalid value: {shown}: must contain unique version names"))
    if storage != 1:
        errors.append(
            ("spec.versions", f"Invalid value: {shown}: must have exactly one version marked as storage version")
        )

    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errors.append((f"spec.names.{key}", "Required value"))
    errors.extend(_names(names))
    if shared_schema:
        errors.extend(
            structural_errors(_m(schemas[0]), "spec.validation.openAPIV3Schema", status_enabled=status_anywhere)
        )
    if shared_subresources:
        errors.extend(_subresources(_m(subresources[0]), "spec.subresources"))
    if shared_columns:
        for j, column in enumerate(columns[0]):
            errors.extend(_column(_m(column), f"spec.additionalPrinterColumns[{j}]"))
    if shared_selectable and versions and selectables[0]:
        if not shared_schema:
            errors.append(("spec.selectableFields",
                           'Invalid value: "": may only be set when validations.schema is included'))
        else:
            errors.extend(selectable.validate(selectables[0], _m(schemas[0]), "spec.selectableFields"))
    errors.extend(_conversion(_m(spec.get("conversion")) or {"strategy": "None"}))
    if storage == 0:
        errors.append(("status.storedVersions", "Invalid value: []string(nil): must have at least one stored version"))
    errors.extend(_approval(group, _m(meta.get("annotations"))))
    if spec.get("preserveUnknownFields") is True:
        errors.append(
            (
                "spec.preserveUnknownFields",
                "Invalid value: true: cannot set to true, set "
                "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
            )
        )
    return errors


def _identical(values: Sequence[Any]) -> bool:
    """Whether v1 conversion lifts these per-version values to the top level (all set and equal)."""
    return bool(values) and all(v and v == values[0] for v in values)


def _versions_text(versions: Sequence[Mapping[str, Any]]) -> str:
    # Upstream prints the Go structs (%#v); this keeps their shape without pointer addresses.
    inner = ", ".join(
        f"apiextensions.CustomResourceDefinitionVersion{{Name:{field_value(str(v.get('name') or ''))}, "
        f"Served:{field_value(v.get('served') is True)}, Storage:{field_value(v.get('storage') is True)}}}"
        for v in versions
    )
    return "[]apiextensions.CustomResourceDefinitionVersion{" + inner + "}"


def _version(version: Mapping[str, Any], i: int, shared_schema: bool, shared_sub: bool, shared_cols: bool) -> Errors:
    errors: Errors = []
    path = f"spec.versions[{i}]"
    warning = version.get("deprecationWarning")
    if warning is not None:
        if version.get("deprecated") is not True:
            errors.append((path + ".deprecationWarning", _invalid(warning, "can only be set for deprecated versions")))
        elif len(str(warning)) > 256:
            errors.append((path + ".deprecationWarning", _invalid(warning, "must be <= 256 characters long")))
        elif not warning:
            errors.append((path + ".deprecationWarning", _invalid(warning, "must not be an empty string")))
    schema = _m(version.get("schema")).get("openAPIV3Schema")
    if isinstance(schema, Mapping) and not shared_schema:
        status = "status" in _m(version.get("subresources"))
        errors.extend(structural_errors(schema, path + ".schema.openAPIV3Schema", status_enabled=status))
    if not shared_sub:
        errors.extend(_subresources(_m(version.get("subresources")), path + ".subresources"))
    if not shared_cols:
        for j, column in enumerate(version.get("additionalPrinterColumns") or []):
            errors.extend(_column(_m(column), f"{path}.additionalPrinterColumns[{j}]"))
    return errors


def _version_selectable(version: Mapping[str, Any], i: int, shared_schema: bool) -> Errors:
    """A version's own selectableFields (they differ between versions). Its schema is not its own when
    every version's is the same (v1 conversion lifted it to spec.validation), so upstream refuses them
    then, with its text (which says the opposite of what it means)."""
    fields = version.get("selectableFields") or []
    if not fields:
        return []
    path = f"spec.versions[{i}].selectableFields"
    schema = _m(version.get("schema")).get("openAPIV3Schema")
    if shared_schema or not isinstance(schema, Mapping):
        return [(path, 'Invalid value: "": may only be set when `version.schema.openAPIV3Schema` is not included')]
    return selectable.validate(fields, schema, path)


def _names(names: Mapping[str, Any]) -> Errors:
    errors: Errors = []
    for key, lower in (("plural", False), ("singular", False), ("kind", True), ("listKind", True)):
        value = str(names.get(key) or "")
        problems = _dns1035(value.lower() if lower else value)
        if value and problems:
            prefix = "may have mixed case, but should otherwise match: " if lower else ""
            errors.append((f"spec.names.{key}", _invalid(value, prefix + ",".join(problems))))
    for i, short in enumerate(names.get("shortNames") or []):
        if _dns1035(str(short)):
            errors.append((f"spec.names.shortNames[{i}]", _invalid(short, ",".join(_dns1035(str(short))))))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errors.append(("spec.names.listKind", _invalid(names["listKind"], "kind and listKind may not be the same")))
    for i, category in enumerate(names.get("categories") or []):
        if _dns1035(str(category)):
            errors.append((f"spec.names.categories[{i}]", _invalid(category, ",".join(_dns1035(str(category))))))
    return errors


def _json_path(value: str, path: str) -> Errors:
    if not value:
        return [(path, _invalid(value, "must not be empty"))]
    if not value.startswith("."):
        return [(path, _invalid(value, "must be a simple json path starting with ."))]
    return []


def _subresources(sub: Mapping[str, Any], path: str) -> Errors:
    errors: Errors = []
    if "scale" not in sub:
        return errors
    scale = _m(sub.get("scale"))
    for key, prefix, where in (
        ("specReplicasPath", (".spec.",), ".spec"),
        ("statusReplicasPath", (".status.",), ".status"),
    ):
        value = str(scale.get(key) or "")
        if not value:
            errors.append((f"{path}.scale.{key}", "Required value"))
        elif found := _json_path(value, f"{path}.scale.{key}"):
            errors.extend(found)
        elif not value.startswith(prefix):
            errors.append((f"{path}.scale.{key}", _invalid(value, f"should be a json path under {where}")))
    selector = str(scale.get("labelSelectorPath") or "")
    if selector:
        if found := _json_path(selector, f"{path}.scale.labelSelectorPath"):
            errors.extend(found)
        elif not selector.startswith((".spec.", ".status.")):
            errors.append(
                (
                    f"{path}.scale.labelSelectorPath",
                    _invalid(selector, "should be a json path under either .spec or .status"),
                )
            )
    return errors


def _column(column: Mapping[str, Any], path: str) -> Errors:
    errors: Errors = []
    if not column.get("name"):
        errors.append((path + ".name", "Required value"))
    typ = column.get("type") or ""
    if not typ:
        errors.append((path + ".type", f"Required value: must be one of {_COLUMN_TYPES}"))
    elif typ not in _COLUMN_TYPES.split(","):
        errors.append((path + ".type", _invalid(typ, f"must be one of {_COLUMN_TYPES}")))
    fmt = column.get("format") or ""
    if fmt and fmt not in _COLUMN_FORMATS.split(","):
        errors.append((path + ".format", _invalid(fmt, f"must be one of {_COLUMN_FORMATS}")))
    json_path = str(column.get("jsonPath") or "")
    if not json_path:
        errors.append((path + ".JSONPath", "Required value"))
    else:
        errors.extend(_json_path(json_path, path + ".JSONPath"))
    return errors


def _conversion(conversion: Mapping[str, Any]) -> Errors:
    errors: Errors = []
    strategy = conversion.get("strategy") or ""
    path = "spec.conversion"
    if not strategy:
        errors.append((path + ".strategy", "Required value"))
    elif strategy not in ("None", "Webhook"):
        errors.append(
            (path + ".strategy", f'Unsupported value: {field_value(strategy)}: supported values: "None", "Webhook"')
        )
    webhook = _m(conversion.get("webhook"))
    if strategy == "Webhook":
        if not webhook.get("clientConfig"):
            errors.append((path + ".webhookClientConfig", "Required value: required when strategy is set to Webhook"))
        review = webhook.get("conversionReviewVersions") or []
        if not review:
            errors.append((path + ".conversionReviewVersions", "Required value"))
        elif not set(review) & {"v1", "v1beta1"}:
            shown = "[]string{" + ", ".join(field_value(v) for v in review) + "}"
            errors.append(
                (
                    path + ".conversionReviewVersions",
                    f"Invalid value: {shown}: must include at least one of v1, v1beta1",
                )
            )
    elif webhook:
        if webhook.get("clientConfig"):
            errors.append(
                (path + ".webhookClientConfig", "Forbidden: should not be set when strategy is not set to Webhook")
            )
        if webhook.get("conversionReviewVersions"):
            errors.append(
                (path + ".conversionReviewVersions", "Forbidden: should not be set when strategy is not set to Webhook")
            )
    return errors


def _approval(group: str, annotations: Mapping[str, Any]) -> Errors:
    """Groups under k8s.io and kubernetes.io need the api-approved.kubernetes.io annotation."""
    if not (group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))):
        return []
    path = f"metadata.annotations[{_APPROVAL}]"
    if _APPROVAL not in annotations:
        return [
            (path, f'Required value: protected groups must have approval annotation "{_APPROVAL}", {_APPROVAL_DOC}')
        ]
    value = str(annotations[_APPROVAL])
    if value.startswith("unapproved"):
        return []
    parsed = urlparse(value)
    if parsed.scheme and parsed.netloc:
        return []
    detail = (
        f'protected groups must have approval annotation "{_APPROVAL}" with either a URL or a reason '
        f'starting with "unapproved", {_APPROVAL_DOC}'
    )
    return [(path, _invalid(value, detail))]
