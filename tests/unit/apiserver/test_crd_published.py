"""schema/crd.published and published_list: a custom resource's definitions in the published OpenAPI,
as apiextensions' openapi builder makes them (buildKubeNative, addEmbeddedProperties, ToStructuralOpenAPIV2,
buildListSchema). The kube-apiserver tier compares whole documents (test_custom_resource_openapi.py); these
pin the rules one by one."""

from __future__ import annotations

from typing import Any

from nodeagent.apiserver.schema.crd import published, published_list, schema_from_openapi_v3
from nodeagent.apiserver.schema.openapi import schema_to_openapi

META = "io.k8s.apimachinery.pkg.apis.meta.v1."


def _render(props: dict[str, Any], *, v2: bool) -> dict[str, Any]:
    return schema_to_openapi(published(schema_from_openapi_v3(props), v2=v2), v3=not v2)


def test_type_meta_and_object_meta_are_added_with_their_descriptions() -> None:
    out = _render({"type": "object", "properties": {"spec": {"type": "object"}}}, v2=False)
    assert set(out["properties"]) == {"apiVersion", "kind", "metadata", "spec"}
    assert out["properties"]["apiVersion"]["description"].startswith("APIVersion defines the versioned schema")
    assert out["properties"]["kind"]["description"].startswith("Kind is a string value representing the REST")
    assert out["properties"]["metadata"] == {"allOf": [{"$ref": "#/components/schemas/" + META + "ObjectMeta"}],
                                             "description": out["properties"]["metadata"]["description"]}
    v2 = _render({"type": "object", "properties": {"spec": {"type": "object"}}}, v2=True)
    assert v2["properties"]["metadata"]["$ref"] == "#/definitions/" + META + "ObjectMeta"


def test_v2_publishes_a_preserve_unknown_fields_root_as_a_bare_object() -> None:
    root = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"spec": {"type": "object"}}}
    assert _render(root, v2=True) == {"type": "object"}
    assert set(_render(root, v2=False)["properties"]) == {"apiVersion", "kind", "metadata", "spec"}


def test_v2_conversion_drops_what_kubectl_cannot_read() -> None:
    spec = {"type": "object", "required": ["a", "n"], "properties": {
        "a": {"type": "string", "default": "x"},
        "n": {"type": "object", "nullable": True, "properties": {"x": {"type": "string"}}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"y": {}}},
        "list": {"type": "array", "x-kubernetes-preserve-unknown-fields": True, "items": {"type": "string"}},
        "either": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "any": {"type": "object", "additionalProperties": True}}}
    out = _render({"type": "object", "properties": {"spec": spec}}, v2=True)["properties"]["spec"]
    assert out["required"] == ["a"]
    assert out["properties"]["a"] == {"type": "string"}  # defaults pruned
    assert out["properties"]["n"] == {}
    assert out["properties"]["free"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert out["properties"]["list"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert out["properties"]["either"] == {"x-kubernetes-int-or-string": True}
    assert out["properties"]["any"] == {"type": "object", "additionalProperties": True}
    v3 = _render({"type": "object", "properties": {"spec": spec}}, v2=False)["properties"]["spec"]
    assert v3["required"] == ["a", "n"] and v3["properties"]["n"]["nullable"] is True
    assert v3["properties"]["a"]["default"] == "x"


def test_an_embedded_resource_gets_type_and_object_meta_and_requires_them() -> None:
    tmpl = {"type": "object", "x-kubernetes-embedded-resource": True, "required": ["spec"],
            "properties": {"spec": {"type": "object"}}}
    loose = {"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}
    root = {"type": "object", "properties": {"t": tmpl, "l": loose}}
    out = _render(root, v2=False)["properties"]
    assert out["t"]["required"] == ["spec", "kind", "apiVersion"]
    assert out["t"]["properties"]["kind"]["description"].startswith("kind is a string value representing the type")
    assert set(out["l"]["properties"]) == {"apiVersion", "kind", "metadata"}
    v2 = _render(root, v2=True)["properties"]
    assert set(v2["t"]["properties"]) == {"apiVersion", "kind", "metadata", "spec"}
    assert "properties" not in v2["l"] and "required" not in v2["l"]


def test_the_list_schema() -> None:
    out = schema_to_openapi(published_list("com.example.v1.Widget", "Widget", "WidgetList", "widgets"))
    assert out["description"] == "WidgetList is a list of Widget"
    assert out["required"] == ["items"]
    assert out["properties"]["items"]["items"] == {"$ref": "#/components/schemas/com.example.v1.Widget"}
    assert out["properties"]["items"]["description"].startswith("List of widgets. More info: ")
    assert set(out["properties"]) == {"apiVersion", "items", "kind", "metadata"}
