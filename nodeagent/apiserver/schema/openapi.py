"""The OpenAPI documents the server publishes: swagger 2.0 at /openapi/v2, the /openapi/v3
discovery index, and one OpenAPI 3.0 document per group-version.

Why these matter beyond documentation: kubectl reads them. `kubectl apply/create` (default
validation) looks in the v3 document of the object's group-version for the PATCH operation
tagged with its x-kubernetes-group-version-kind and checks it lists a `fieldValidation`
parameter; `kubectl explain` finds the kind's schema by the same extension; kubectl caches
each group-version document by the `hash` in the index. So operations carry upstream's query
parameters, x-kubernetes-action and x-kubernetes-group-version-kind. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodeagent.apiserver.catalog import Resource
from nodeagent.apiserver.schema.model import ANY, Definitions, Schema

GVK = tuple[str, str, str]
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json",
                "application/strategic-merge-patch+json")
_PRODUCES = ("application/json", "application/yaml")
_WATCH_PRODUCES = (*_PRODUCES, "application/json;stream=watch")

# Query parameters: name -> (type, description).
_PARAMS: dict[str, tuple[str, str]] = {
    "pretty": ("string", "If 'true', the output is indented."),
    "dryRun": ("string", "All: validate and process the request without persisting it."),
    "fieldManager": ("string", "Name of the actor making the change; required for apply patches."),
    "fieldValidation": ("string", "Ignore, Warn or Strict: what to do with unknown or duplicate fields."),
    "force": ("boolean", "Apply only: take ownership of conflicting fields from other managers."),
    "labelSelector": ("string", "Only objects whose labels match this selector."),
    "fieldSelector": ("string", "Only objects whose fields match this selector."),
    "resourceVersion": ("string", "Version the list or watch starts from; see resourceVersionMatch."),
    "resourceVersionMatch": ("string", "Exact or NotOlderThan: how resourceVersion applies to a list."),
    "limit": ("integer", "Most objects to return; the rest is reached through continue."),
    "continue": ("string", "Token from a previous limited list, to get the next page."),
    "watch": ("boolean", "Stream changes instead of returning a list."),
    "allowWatchBookmarks": ("boolean", "Allow BOOKMARK events in a watch."),
    "sendInitialEvents": ("boolean", "Start a watch with the current objects as ADDED events."),
    "timeoutSeconds": ("integer", "End a list or watch after this many seconds."),
    "gracePeriodSeconds": ("integer", "Seconds before the object is removed; 0 deletes at once."),
    "orphanDependents": ("boolean", "Deprecated: orphan dependents instead of deleting them."),
    "propagationPolicy": ("string", "Orphan, Background or Foreground garbage collection."),
    "ignoreStoreReadErrorWithClusterBreakingPotential": ("boolean", "Delete even an undecodable object."),
}
_LIST = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
         "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")
_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_DELETE = ("dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential", "orphanDependents",
           "propagationPolicy")
_DELETE_COLLECTION = tuple(sorted({*_DELETE, *_LIST} - {"watch", "allowWatchBookmarks"}))


def schema_to_openapi(schema: Schema, *, v3: bool = True) -> dict[str, Any]:
    """One schema node as OpenAPI (3.0 when v3, else swagger 2.0), with the Kubernetes extensions;
    refs point at components/schemas (v3) or definitions (v2)."""
    out: dict[str, Any] = {}
    if schema.description:
        out["description"] = schema.description
    ext = _extensions(schema)
    if schema.ref:
        target = {"$ref": ("#/components/schemas/" if v3 else "#/definitions/") + schema.ref}
        if v3 and (out or ext or schema.default is not None):
            out["allOf"] = [target]  # a bare $ref's siblings are ignored in 3.0; upstream wraps it the same way
        else:
            out.update(target)
        if schema.default is not None:
            out["default"] = schema.default
        return {**out, **ext}
    if schema.int_or_string:
        if v3:
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    elif schema.type:
        out["type"] = schema.type
    if schema.format:
        out["format"] = schema.format
    if schema.enum:
        out["enum"] = list(schema.enum)
    if schema.default is not None:
        out["default"] = schema.default
    if schema.properties:
        out["properties"] = {k: schema_to_openapi(v, v3=v3) for k, v in sorted(schema.properties.items())}
    if schema.required:
        out["required"] = list(schema.required)
    if schema.items is not None:
        out["items"] = schema_to_openapi(schema.items, v3=v3)
    if schema.additional_properties is not None:
        # a CRD's `additionalProperties: true` (ANY) is published as written, as apiextensions does
        out["additionalProperties"] = (True if schema.additional_properties is ANY
                                       else schema_to_openapi(schema.additional_properties, v3=v3))
    checks: dict[str, Any] = {
        "minimum": schema.minimum, "maximum": schema.maximum, "minLength": schema.min_length,
        "maxLength": schema.max_length, "minItems": schema.min_items, "maxItems": schema.max_items,
        "minProperties": schema.min_properties, "maxProperties": schema.max_properties,
    }
    out.update({k: v for k, v in checks.items() if v is not None})
    if schema.exclusive_minimum:
        out["exclusiveMinimum"] = True
    if schema.exclusive_maximum:
        out["exclusiveMaximum"] = True
    if schema.pattern:
        out["pattern"] = schema.pattern
    if schema.nullable and v3:
        out["nullable"] = True
    out.update(ext)
    out.update(schema.extra)
    return out


def _extensions(schema: Schema) -> dict[str, Any]:
    pairs: list[tuple[str, Any]] = [
        ("x-kubernetes-int-or-string", schema.int_or_string),
        ("x-kubernetes-preserve-unknown-fields", schema.preserve_unknown_fields),
        ("x-kubernetes-embedded-resource", schema.embedded_resource),
        ("x-kubernetes-list-type", schema.list_type),
        ("x-kubernetes-list-map-keys", list(schema.list_map_keys)),
        ("x-kubernetes-map-type", schema.map_type),
        ("x-kubernetes-patch-strategy", schema.patch_strategy),
        ("x-kubernetes-patch-merge-key", schema.patch_merge_key),
    ]
    return {k: v for k, v in pairs if v}


def _gvk_ext(gvk: GVK) -> dict[str, str]:
    return {"group": gvk[0], "kind": gvk[2], "version": gvk[1]}


def _all_gvks(resources: Iterable[Resource], gvks: Mapping[str, GVK]) -> dict[str, GVK]:
    """The given GVKs, plus each served resource's kind and its List kind (CRDs may be missing)."""
    out = dict(gvks)
    for r in resources:
        out.setdefault(r.definition, (r.group, r.version, r.kind))
        if "list" in r.verbs:
            out.setdefault(r.list_definition, (r.group, r.version, r.list_kind))
    return out


def _with_lists(resources: Iterable[Resource], defs: Definitions) -> Definitions:
    """Adds <Kind>List definitions (the list responses), which the schema tables leave out; a custom
    resource's comes with its definitions (schema/crd.published_list)."""
    lists = Definitions()
    for r in resources:
        if "list" not in r.verbs or r.list_definition in defs:  # the review kinds: no list response
            continue
        lists.add(r.list_definition, Schema(
            type="object",
            description=f"A list of {r.kind} objects.",
            required=("items",),
            properties={
                "apiVersion": Schema(type="string", description="The versioned schema of this list."),
                "kind": Schema(type="string", description="The kind of this list."),
                "metadata": Schema(ref=META + "ListMeta", description="Standard list metadata."),
                "items": Schema(type="array", items=Schema(ref=r.definition), description=f"The {r.kind} objects."),
            },
        ))
    return defs.merged(lists)


def _render_definitions(defs: Definitions, names: Iterable[str], gvks: Mapping[str, GVK], v3: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in sorted(names):
        rendered = schema_to_openapi(defs.get(name), v3=v3)
        if name in gvks:
            rendered["x-kubernetes-group-version-kind"] = [_gvk_ext(gvks[name])]
        out[name] = rendered
    return out


# --- operations -------------------------------------------------------------------------------


def _camel_gv(r: Resource) -> str:
    group = r.group.split(".")[0] if r.group else "core"
    return group[:1].upper() + group[1:] + r.version[:1].upper() + r.version[1:]


def _tag(r: Resource) -> str:
    return f"{r.group.split('.')[0] if r.group else 'core'}_{r.version}"


def _prefix(group: str, version: str) -> str:
    return f"/api/{version}" if not group else f"/apis/{group}/{version}"


class _Builder:
    """Writes operations in one OpenAPI flavour (v2 or v3)."""

    def __init__(self, v3: bool) -> None:
        self.v3 = v3

    def ref(self, name: str) -> dict[str, str]:
        return {"$ref": ("#/components/schemas/" if self.v3 else "#/definitions/") + name}

    def query(self, name: str) -> dict[str, Any]:
        typ, desc = _PARAMS[name]
        if self.v3:
            return {"name": name, "in": "query", "description": desc, "schema": {"type": typ, "uniqueItems": True}}
        return {"name": name, "in": "query", "description": desc, "type": typ, "uniqueItems": True}

    def path_param(self, name: str, desc: str) -> dict[str, Any]:
        if self.v3:
            return {"name": name, "in": "path", "description": desc, "required": True,
                    "schema": {"type": "string", "uniqueItems": True}}
        return {"name": name, "in": "path", "description": desc, "required": True, "type": "string",
                "uniqueItems": True}

    def operation(self, *, op_id: str, desc: str, action: str, gvk: GVK | None, tag: str, params: Sequence[str],
                  body: str = "", body_types: Sequence[str] = ("*/*",), responses: Mapping[str, str],
                  produces: Sequence[str] = _PRODUCES) -> dict[str, Any]:
        op: dict[str, Any] = {"description": desc, "operationId": op_id, "tags": [tag]}
        parameters = [self.query(p) for p in params]
        if body and not self.v3:
            parameters.insert(0, {"name": "body", "in": "body", "required": True, "schema": self.ref(body)})
            op["consumes"] = list(body_types)
        if parameters:
            op["parameters"] = parameters
        if body and self.v3:
            op["requestBody"] = {"content": {t: {"schema": self.ref(body)} for t in body_types}, "required": True}
        if not self.v3:
            op["produces"] = list(produces)
            op["schemes"] = ["https"]
        rendered: dict[str, Any] = {}
        for code, name in responses.items():
            text = {"200": "OK", "201": "Created", "202": "Accepted"}[code]
            if self.v3:
                rendered[code] = {"description": text, "content": {t: {"schema": self.ref(name)} for t in produces}}
            else:
                rendered[code] = {"description": text, "schema": self.ref(name)}
        rendered["401"] = {"description": "Unauthorized"}
        op["responses"] = rendered
        op["x-kubernetes-action"] = action
        if gvk is not None:
            op["x-kubernetes-group-version-kind"] = _gvk_ext(gvk)
        return op

    def resource_paths(self, r: Resource, gvks: Mapping[str, GVK]) -> dict[str, dict[str, Any]]:
        """The collection, item and subresource paths of one resource."""
        gvk = (r.group, r.version, r.kind)
        gv, tag, kind, d = _camel_gv(r), _tag(r), r.kind, r.definition
        ns = "Namespaced" if r.namespaced else ""
        base = _prefix(r.group, r.version) + ("/namespaces/{namespace}" if r.namespaced else "")
        common = [self.path_param("namespace", "object name and auth scope, such as for teams and projects")] \
            if r.namespaced else []
        pretty = self.query("pretty")
        ops = self.operation
        verbs = set(r.verbs)
        patch_types = _PATCH_TYPES if d.startswith("io.k8s.") else tuple(
            t for t in _PATCH_TYPES if "strategic" not in t)
        collection: dict[str, Any] = {}
        if "list" in verbs:
            collection["get"] = ops(op_id=f"list{gv}{ns}{kind}", desc=f"list or watch objects of kind {kind}",
                                    action="list", gvk=gvk, tag=tag, params=_LIST, responses={"200": r.list_definition},
                                    produces=_WATCH_PRODUCES)
        if "create" in verbs:
            collection["post"] = ops(op_id=f"create{gv}{ns}{kind}", desc=f"create a {kind}", action="post", gvk=gvk,
                                     tag=tag, params=_WRITE, body=d,
                                     responses={"200": d, "201": d, "202": d})
        if "deletecollection" in verbs:
            collection["delete"] = ops(op_id=f"delete{gv}Collection{ns}{kind}",
                                       desc=f"delete collection of {kind}", action="deletecollection", gvk=gvk,
                                       tag=tag, params=_DELETE_COLLECTION, body=META + "DeleteOptions",
                                       responses={"200": META + "Status"})
        name_param = self.path_param("name", f"name of the {kind}")
        item: dict[str, Any] = {}
        if "get" in verbs:
            item["get"] = ops(op_id=f"read{gv}{ns}{kind}", desc=f"read the specified {kind}", action="get", gvk=gvk,
                              tag=tag, params=(), responses={"200": d})
        if "update" in verbs:
            item["put"] = ops(op_id=f"replace{gv}{ns}{kind}", desc=f"replace the specified {kind}", action="put",
                              gvk=gvk, tag=tag, params=_WRITE, body=d, responses={"200": d, "201": d})
        if "patch" in verbs:
            item["patch"] = ops(op_id=f"patch{gv}{ns}{kind}", desc=f"partially update the specified {kind}",
                                action="patch", gvk=gvk, tag=tag, params=(*_WRITE, "force"),
                                body=META + "Patch", body_types=patch_types, responses={"200": d, "201": d})
        if "delete" in verbs:
            item["delete"] = ops(op_id=f"delete{gv}{ns}{kind}", desc=f"delete a {kind}", action="delete", gvk=gvk,
                                 tag=tag, params=_DELETE, body=META + "DeleteOptions",
                                 responses={"200": d, "202": d})
        out: dict[str, dict[str, Any]] = {}
        path = f"{base}/{r.plural}"
        if collection:
            out[path] = {**collection, "parameters": [*common, pretty]}
        if item:
            out[path + "/{name}"] = {**item, "parameters": [name_param, *common, pretty]}
        if "status" in r.subresources:
            status: dict[str, Any] = {
                "get": ops(op_id=f"read{gv}{ns}{kind}Status", desc=f"read status of the specified {kind}",
                           action="get", gvk=gvk, tag=tag, params=(), responses={"200": d}),
                "put": ops(op_id=f"replace{gv}{ns}{kind}Status", desc=f"replace status of the specified {kind}",
                           action="put", gvk=gvk, tag=tag, params=_WRITE, body=d, responses={"200": d, "201": d}),
                "patch": ops(op_id=f"patch{gv}{ns}{kind}Status",
                             desc=f"partially update status of the specified {kind}", action="patch", gvk=gvk,
                             tag=tag, params=(*_WRITE, "force"), body=META + "Patch", body_types=patch_types,
                             responses={"200": d, "201": d}),
            }
            out[path + "/{name}/status"] = {**status, "parameters": [name_param, *common, pretty]}
        binding = "io.k8s.api.core.v1.Binding"
        if "binding" in r.subresources and binding in gvks:
            out[path + "/{name}/binding"] = {
                "post": ops(op_id=f"create{gv}{ns}{kind}Binding", desc=f"create binding of a {kind}", action="post",
                            gvk=gvks[binding], tag=tag, params=_WRITE, body=binding,
                            responses={"200": binding, "201": binding, "202": binding}),
                "parameters": [self.path_param("name", "name of the Binding"), *common, pretty],
            }
        token = "io.k8s.api.authentication.v1.TokenRequest"
        if "token" in r.subresources and token in gvks:  # serviceaccounts/NAME/token (TokenREST: create only)
            out[path + "/{name}/token"] = {
                "post": ops(op_id=f"create{gv}{ns}{kind}Token", desc=f"create token of a {kind}", action="post",
                            gvk=gvks[token], tag=tag, params=_WRITE, body=token,
                            responses={"200": token, "201": token, "202": token}),
                "parameters": [self.path_param("name", "name of the TokenRequest"), *common, pretty],
            }
        if r.namespaced and "list" in verbs:
            out[_prefix(r.group, r.version) + f"/{r.plural}"] = {
                "get": ops(op_id=f"list{gv}{kind}ForAllNamespaces", desc=f"list or watch objects of kind {kind}",
                           action="list", gvk=gvk, tag=tag, params=_LIST, responses={"200": r.list_definition},
                           produces=_WATCH_PRODUCES),
                "parameters": [pretty],
            }
        return out

    def group_root(self, group: str, version: str) -> dict[str, dict[str, Any]]:
        gv = _camel_gv(Resource(group, version, "x", "X", False, ""))
        tag = _tag(Resource(group, version, "x", "X", False, ""))
        op = self.operation(op_id=f"get{gv}APIResources", desc="get available resources", action="get", gvk=None,
                            tag=tag, params=(), responses={"200": META + "APIResourceList"})
        del op["x-kubernetes-action"]
        return {_prefix(group, version) + "/": {"get": op}}


# --- documents --------------------------------------------------------------------------------


def _reachable(defs: Definitions, roots: Iterable[str]) -> set[str]:
    seen: set[str] = set()
    stack = [n for n in roots if n in defs]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(r for r in _refs(defs.get(name)) if r in defs and r not in seen)
    return seen


def _refs(schema: Schema | None) -> Iterable[str]:
    if schema is None:
        return
    if schema.ref:
        yield schema.ref
    for child in schema.properties.values():
        yield from _refs(child)
    yield from _refs(schema.items)
    yield from _refs(schema.additional_properties)


DEFAULT_SERVER_VERSION = "v1.37.2-nodeagent"


def _info(server_version: str) -> dict[str, str]:
    """kube-apiserver names its own gitVersion here; nodeagent the release it emulates (/version's)."""
    return {"title": "Kubernetes", "version": server_version}


def openapi_v2(resources: Sequence[Resource], defs: Definitions, gvks: Mapping[str, GVK], *,
               server_version: str = DEFAULT_SERVER_VERSION) -> dict[str, Any]:
    """The swagger 2.0 document of every served resource (GET /openapi/v2)."""
    served = [r for r in resources if r.served]
    all_defs, all_gvks = _with_lists(served, defs), _all_gvks(served, gvks)
    builder = _Builder(v3=False)
    paths: dict[str, Any] = {}
    for group, version in _group_versions(served):
        paths.update(builder.group_root(group, version))
    for r in served:
        paths.update(builder.resource_paths(r, all_gvks))
    return {
        "swagger": "2.0",
        "info": _info(server_version),
        "paths": dict(sorted(paths.items())),
        "definitions": _render_definitions(all_defs, list(all_defs), all_gvks, v3=False),
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header",
                                                "description": "Bearer token authentication"}},
        "security": [{"BearerToken": []}],
    }


def openapi_v3_group(resources: Sequence[Resource], defs: Definitions, gvks: Mapping[str, GVK], group: str,
                     version: str, *, server_version: str = DEFAULT_SERVER_VERSION) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one group-version (GET /openapi/v3/api/v1, /openapi/v3/apis/<g>/<v>):
    its paths, and only the schemas reachable from them."""
    served = [r for r in resources if r.served and r.group == group and r.version == version]
    all_defs, all_gvks = _with_lists(served, defs), _all_gvks(served, gvks)
    builder = _Builder(v3=True)
    paths = builder.group_root(group, version)
    roots = {META + "APIResourceList"}
    for r in served:
        paths.update(builder.resource_paths(r, all_gvks))
        roots.add(r.definition)
        if r.stored:  # a review kind's only operation takes and answers the kind itself
            roots |= {r.list_definition, META + "Status", META + "DeleteOptions", META + "Patch"}
        if "binding" in r.subresources:
            roots.add("io.k8s.api.core.v1.Binding")
        if "token" in r.subresources:
            roots.add("io.k8s.api.authentication.v1.TokenRequest")
    names = _reachable(all_defs, roots)
    return {
        "openapi": "3.0.0",
        "info": _info(server_version),
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": _render_definitions(all_defs, names, all_gvks, v3=True),
            "securitySchemes": {"BearerToken": {"type": "apiKey", "description": "Bearer token authentication",
                                                "name": "authorization", "in": "header"}},
        },
    }


def document_hash(document: Mapping[str, Any]) -> str:
    """A hash of a document's content (upstream uses SHA-512, upper-case hex), for ?hash= and ETags."""
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha512(canonical.encode()).hexdigest().upper()


def openapi_v3_index(resources: Sequence[Resource], defs: Definitions | None = None,
                     gvks: Mapping[str, GVK] | None = None, *,
                     server_version: str = DEFAULT_SERVER_VERSION) -> dict[str, Any]:
    """The /openapi/v3 discovery document: each group-version's path with ?hash= of its content.

    With `defs`, the hash is of the full group-version document (what kubectl caches); without,
    of the resources served in it (enough when the schemas are fixed, as for built-ins)."""
    paths: dict[str, Any] = {}
    served = [r for r in resources if r.served]
    for group, version in _group_versions(served):
        key = _prefix(group, version).lstrip("/")
        if defs is not None:
            digest = document_hash(openapi_v3_group(served, defs, gvks or {}, group, version,
                                                    server_version=server_version))
        else:
            listing = [repr(r) for r in served if (r.group, r.version) == (group, version)]
            digest = document_hash({"resources": listing})
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return {"paths": paths}


def _group_versions(resources: Iterable[Resource]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for r in resources:
        if (r.group, r.version) not in out:
            out.append((r.group, r.version))
    return out
