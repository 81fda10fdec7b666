"""The published OpenAPI documents: paths, parameters and extensions kubectl relies on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from nodeagent.apiserver.catalog import Resource, builtin_resources
from nodeagent.apiserver.schema.builtin import BUILTIN_GVK, builtin_definitions
from nodeagent.apiserver.schema.model import Schema
from nodeagent.apiserver.schema.openapi import (
    document_hash,
    openapi_v2,
    openapi_v3_group,
    openapi_v3_index,
    schema_to_openapi,
)

RESOURCES = builtin_resources()
DEFS = builtin_definitions()
V2 = openapi_v2(RESOURCES, DEFS, BUILTIN_GVK)
CORE_V3 = openapi_v3_group(RESOURCES, DEFS, BUILTIN_GVK, "", "v1")
POD_ITEM = "/api/v1/namespaces/{namespace}/pods/{name}"


def _supports_query_param_v3(doc: dict[str, Any], gvk: dict[str, str], param: str) -> bool:
    """kubectl's supportsQueryParamV3: the first PATCH operation tagged with the GVK lists the param."""
    for item in doc["paths"].values():
        op = item.get("patch")
        if op is None or op.get("x-kubernetes-group-version-kind") != gvk:
            continue
        return any(p["name"] == param for p in op.get("parameters", []))
    return False


def _refs(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield v
            else:
                yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


@pytest.mark.parametrize(("group", "version", "kind"), [
    ("", "v1", "Pod"), ("", "v1", "Namespace"), ("resource.k8s.io", "v1", "ResourceClaim"),
    ("resource.k8s.io", "v1beta1", "DeviceClass"), ("events.k8s.io", "v1", "Event"),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
])
def test_kubectl_sees_field_validation_support(group: str, version: str, kind: str) -> None:
    doc = openapi_v3_group(RESOURCES, DEFS, BUILTIN_GVK, group, version)
    gvk = {"group": group, "kind": kind, "version": version}
    assert _supports_query_param_v3(doc, gvk, "fieldValidation")
    assert not _supports_query_param_v3(doc, gvk, "noSuchParam")


def test_pod_patch_operation_matches_upstream() -> None:
    op = CORE_V3["paths"][POD_ITEM]["patch"]
    assert op["operationId"] == "patchCoreV1NamespacedPod"
    assert op["x-kubernetes-action"] == "patch"
    assert op["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    assert [p["name"] for p in op["parameters"]] == ["dryRun", "fieldManager", "fieldValidation", "force"]
    assert set(op["requestBody"]["content"]) == {
        "application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json",
        "application/strategic-merge-patch+json"}
    assert [p["name"] for p in CORE_V3["paths"][POD_ITEM]["parameters"]] == ["name", "namespace", "pretty"]


@pytest.mark.parametrize(("path", "method", "op_id", "params"), [
    ("/api/v1/namespaces/{namespace}/pods", "get", "listCoreV1NamespacedPod",
     ["allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
      "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"]),
    ("/api/v1/namespaces/{namespace}/pods", "post", "createCoreV1NamespacedPod",
     ["body", "dryRun", "fieldManager", "fieldValidation"]),
    ("/api/v1/namespaces/{namespace}/pods", "delete", "deleteCoreV1CollectionNamespacedPod",
     ["body", "continue", "dryRun", "fieldSelector", "gracePeriodSeconds",
      "ignoreStoreReadErrorWithClusterBreakingPotential", "labelSelector", "limit", "orphanDependents",
      "propagationPolicy", "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds"]),
    (POD_ITEM, "get", "readCoreV1NamespacedPod", []),
    (POD_ITEM, "put", "replaceCoreV1NamespacedPod", ["body", "dryRun", "fieldManager", "fieldValidation"]),
    (POD_ITEM, "delete", "deleteCoreV1NamespacedPod",
     ["body", "dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
      "orphanDependents", "propagationPolicy"]),
    (POD_ITEM + "/status", "patch", "patchCoreV1NamespacedPodStatus",
     ["body", "dryRun", "fieldManager", "fieldValidation", "force"]),
    (POD_ITEM + "/binding", "post", "createCoreV1NamespacedPodBinding",
     ["body", "dryRun", "fieldManager", "fieldValidation"]),
    ("/api/v1/pods", "get", "listCoreV1PodForAllNamespaces",
     ["allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
      "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"]),
    ("/api/v1/nodes/{name}", "patch", "patchCoreV1Node", ["body", "dryRun", "fieldManager", "fieldValidation",
                                                           "force"]),
    ("/apis/resource.k8s.io/v1beta2/namespaces/{namespace}/resourceclaims/{name}/status", "put",
     "replaceResourceV1beta2NamespacedResourceClaimStatus", ["body", "dryRun", "fieldManager", "fieldValidation"]),
    ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "post",
     "createApiextensionsV1CustomResourceDefinition", ["body", "dryRun", "fieldManager", "fieldValidation"]),
])
def test_v2_operations(path: str, method: str, op_id: str, params: list[str]) -> None:
    op = V2["paths"][path][method]
    assert op["operationId"] == op_id
    assert [p["name"] for p in op.get("parameters", [])] == params


def test_v2_is_json_and_every_ref_resolves() -> None:
    doc = json.loads(json.dumps(V2))
    assert doc["swagger"] == "2.0"
    prefix = "#/definitions/"
    assert {r for r in _refs(doc) if r[len(prefix):] not in doc["definitions"]} == set()


def test_namespaces_have_no_deletecollection() -> None:
    assert "delete" not in V2["paths"]["/api/v1/namespaces"]
    assert "/api/v1/namespaces/{name}/status" in V2["paths"]


def test_v2_definition_extensions() -> None:
    defs = V2["definitions"]
    assert defs["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]
    assert defs["io.k8s.api.core.v1.PodList"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "PodList", "version": "v1"}]
    containers = defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}
    assert defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["x-kubernetes-int-or-string"] is True
    assert defs["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"]["x-kubernetes-map-type"] == "atomic"
    assert defs["io.k8s.apimachinery.pkg.runtime.RawExtension"]["x-kubernetes-preserve-unknown-fields"] is True


def test_v3_group_holds_only_reachable_schemas() -> None:
    schemas = CORE_V3["components"]["schemas"]
    assert "io.k8s.api.core.v1.Pod" in schemas and "io.k8s.api.core.v1.Container" in schemas
    assert "io.k8s.api.resource.v1.ResourceClaim" not in schemas
    assert not any(name.startswith("io.k8s.apiextensions") for name in schemas)
    prefix = "#/components/schemas/"
    assert {r for r in _refs(CORE_V3) if r[len(prefix):] not in schemas} == set()
    assert all(path.startswith("/api/v1/") for path in CORE_V3["paths"])
    assert CORE_V3["openapi"] == "3.0.0"


def test_v3_explain_path_reaches_container_fields() -> None:
    schemas = CORE_V3["components"]["schemas"]
    pod = next(s for s in schemas.values()
               if {"group": "", "kind": "Pod", "version": "v1"} in s.get("x-kubernetes-group-version-kind", []))
    spec = pod["properties"]["spec"]
    assert spec["description"] and spec["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    container = schemas[containers["items"]["$ref"].rsplit("/", 1)[1]]
    assert container["required"] == ["name"]
    assert container["properties"]["image"]["type"] == "string"


def test_v3_index_lists_every_group_version_with_a_content_hash() -> None:
    index = openapi_v3_index(RESOURCES, DEFS, BUILTIN_GVK)
    assert set(index["paths"]) == {
        "api/v1", "apis/events.k8s.io/v1", "apis/coordination.k8s.io/v1", "apis/resource.k8s.io/v1",
        "apis/resource.k8s.io/v1beta2", "apis/resource.k8s.io/v1beta1", "apis/resource.k8s.io/v1alpha3",
        "apis/apiextensions.k8s.io/v1",
        "apis/storage.k8s.io/v1", "apis/apps/v1", "apis/batch/v1", "apis/policy/v1", "apis/scheduling.k8s.io/v1",
        "apis/discovery.k8s.io/v1", "apis/rbac.authorization.k8s.io/v1", "apis/autoscaling/v2", "apis/autoscaling/v1",
        "apis/admissionregistration.k8s.io/v1", "apis/certificates.k8s.io/v1", "apis/networking.k8s.io/v1",
        "apis/storagemigration.k8s.io/v1",
        "apis/node.k8s.io/v1", "apis/authentication.k8s.io/v1", "apis/authorization.k8s.io/v1"}
    url = index["paths"]["api/v1"]["serverRelativeURL"]
    assert url == f"/openapi/v3/api/v1?hash={document_hash(CORE_V3)}"
    assert len(url.split("hash=")[1]) == 128


def test_v3_index_hash_follows_content() -> None:
    extra = Resource("example.com", "v1", "widgets", "Widget", True, "com.example.v1.Widget")
    defs = DEFS.merged(type(DEFS)({"com.example.v1.Widget": Schema(type="object")}))
    before = openapi_v3_index([*RESOURCES, extra], defs, BUILTIN_GVK)["paths"]
    changed = DEFS.merged(type(DEFS)({"com.example.v1.Widget": Schema(type="object", description="changed")}))
    after = openapi_v3_index([*RESOURCES, extra], changed, BUILTIN_GVK)["paths"]
    assert before["apis/example.com/v1"] != after["apis/example.com/v1"]
    assert before["api/v1"] == after["api/v1"]
    assert openapi_v3_index(RESOURCES)["paths"].keys() == openapi_v3_index(RESOURCES, DEFS)["paths"].keys()


def test_custom_resource_paths_have_no_strategic_merge() -> None:
    extra = Resource("example.com", "v1", "widgets", "Widget", True, "com.example.v1.Widget")
    doc = openapi_v3_group([extra], DEFS, {}, "example.com", "v1")
    patch = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "example.com", "kind": "Widget", "version": "v1"}


@pytest.mark.parametrize(("schema", "v3", "expected"), [
    (Schema(ref="a.B"), True, {"$ref": "#/components/schemas/a.B"}),
    (Schema(ref="a.B", description="d"), True, {"description": "d", "allOf": [{"$ref": "#/components/schemas/a.B"}]}),
    (Schema(ref="a.B", description="d"), False, {"description": "d", "$ref": "#/definitions/a.B"}),
    (Schema(int_or_string=True), True,
     {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}),
    (Schema(int_or_string=True), False, {"x-kubernetes-int-or-string": True}),
    (Schema(type="array", items=Schema(type="string"), list_type="set"), True,
     {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}),
    (Schema(type="object", embedded_resource=True, preserve_unknown_fields=True, nullable=True), True,
     {"type": "object", "nullable": True, "x-kubernetes-embedded-resource": True,
      "x-kubernetes-preserve-unknown-fields": True}),
    (Schema(type="integer", minimum=1, maximum=5, exclusive_maximum=True, enum=(1, 2)), True,
     {"type": "integer", "enum": [1, 2], "minimum": 1, "maximum": 5, "exclusiveMaximum": True}),
    (Schema(type="object", additional_properties=Schema(type="string"), map_type="atomic"), True,
     {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "atomic"}),
])
def test_schema_to_openapi(schema: Schema, v3: bool, expected: dict[str, Any]) -> None:
    assert schema_to_openapi(schema, v3=v3) == expected


def test_documents_name_the_emulated_release() -> None:
    """info.version: kube-apiserver writes its gitVersion; here the release emulated, as /version
    says (it said v1.34.0 whatever the release)."""
    assert openapi_v2(RESOURCES, DEFS, BUILTIN_GVK)["info"] == {"title": "Kubernetes", "version": "v1.37.2-nodeagent"}
    doc = openapi_v3_group(RESOURCES, DEFS, BUILTIN_GVK, "", "v1", server_version="v1.35.0-nodeagent")
    assert doc["info"]["version"] == "v1.35.0-nodeagent"
