"""CRDs served as apiextensions-apiserver does: written CRDs appear in the catalog, the store's kinds
and the registry; custom resources are pruned and checked against the schema; the CRD gets its
NamesAccepted/Established conditions; deleting it removes its custom resources."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodeagent.apiserver.catalog import Catalog, Resource, builtin_resources
from nodeagent.apiserver.crds import CRD_KIND, CRDStrategy, CustomResources, store_kind
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.options import DeleteOptions, WriteOptions
from nodeagent.apiserver.registry import MERGE_PATCH, STRATEGIC_PATCH, Registry
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

Obj = dict[str, Any]
W = WriteOptions()
SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "integer", "minimum": 1},
            "color": {"type": "string", "enum": ["red", "blue"]},
        }},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}
CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                  "shortNames": ["wd"]},
        "versions": [
            {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA},
             "subresources": {"status": {}},
             "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]},
            {"name": "v1beta1", "served": True, "storage": False, "schema": {"openAPIV3Schema": SCHEMA}},
        ],
    },
}


class Server:
    """The pieces APIServer wires together, without HTTP."""

    def __init__(self) -> None:
        clock = FakeClock()
        self.store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
        self.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
        self.catalog = Catalog(builtin_resources())
        strategies = dict(builtin_strategies())
        strategies[CRD_KIND] = CRDStrategy(CRD_KIND, reset_status_on_create=True)
        self.registry = Registry(self.store, self.catalog, builtin_definitions(), strategies, clock)
        self.changes = 0
        self.crds = CustomResources(self.store, self.catalog, self.registry, clock, self._changed)

    def _changed(self) -> None:
        self.changes += 1

    def res(self, plural: str, group: str, version: str) -> Resource:
        found = self.catalog.find(group, version, plural)
        assert found is not None
        return found

    def create_crd(self, crd: Obj = CRD) -> None:
        self.registry.create(self.res("customresourcedefinitions", "apiextensions.k8s.io", "v1"), "",
                             copy.deepcopy(crd), W)
        self.crds.sync()


@pytest.fixture
def srv() -> Server:
    s = Server()
    s.create_crd()
    return s


def widget(name: str = "w", **spec: Any) -> Obj:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def test_served_versions_appear_in_catalog_and_store(srv: Server) -> None:
    v1 = srv.res("widgets", "example.com", "v1")
    assert (v1.kind, v1.namespaced, v1.short_names, v1.subresources) == ("Widget", True, ("wd",), ("status",))
    assert v1.store_kind == store_kind("example.com", "Widget") == "Widget.example.com"
    assert v1.storage_version and not srv.res("widgets", "example.com", "v1beta1").storage_version
    assert srv.res("widgets", "example.com", "v1beta1").subresources == ()
    info = srv.store.kinds.get("Widget.example.com")
    assert info.api_versions == ("example.com/v1", "example.com/v1beta1") and info.namespaced
    assert srv.changes == 1
    srv.crds.sync()  # nothing changed: no catalog change either
    assert srv.changes == 1


def test_crd_status_is_established(srv: Server) -> None:
    crd = srv.store.get(CRD_KIND, "", "widgets.example.com")
    conds = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conds["Established"]["status"] == "True" and conds["NamesAccepted"]["reason"] == "NoConflicts"
    assert crd["status"]["acceptedNames"]["kind"] == "Widget" and crd["status"]["storedVersions"] == ["v1"]


def test_custom_resources_are_pruned_and_served_in_each_version(srv: Server) -> None:
    v1 = srv.res("widgets", "example.com", "v1")
    body = widget(size=2, bogus=True)
    body["extra"] = 1
    out = srv.registry.create(v1, "default", body, W)
    assert out.object["spec"] == {"size": 2} and "extra" not in out.object
    assert out.warnings == ('unknown field "extra"', 'unknown field "spec.bogus"') or set(out.warnings) == {
        'unknown field "extra"', 'unknown field "spec.bogus"'}
    beta = srv.registry.get(srv.res("widgets", "example.com", "v1beta1"), "default", "w")
    assert (beta["apiVersion"], beta["kind"], beta["spec"]) == ("example.com/v1beta1", "Widget", {"size": 2})


def test_custom_resources_strict_and_value_checks(srv: Server) -> None:
    v1 = srv.res("widgets", "example.com", "v1")
    with pytest.raises(APIError) as err:
        srv.registry.create(v1, "default", widget(size=0), W)
    assert (err.value.code, err.value.reason) == (422, "Invalid")
    assert err.value.message.startswith('Widget.example.com "w" is invalid: spec.size: Invalid value: 0')
    with pytest.raises(APIError) as err:
        srv.registry.create(v1, "default", widget(color="green"), W)
    assert err.value.details["causes"][0]["reason"] == "FieldValueNotSupported"
    with pytest.raises(APIError) as err:
        srv.registry.create(v1, "default", widget(size=1, bogus=1), WriteOptions(field_validation="Strict"))
    assert err.value.message == ('Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
                                 'unknown field "spec.bogus"')


def test_status_subresource_of_custom_resources(srv: Server) -> None:
    v1 = srv.res("widgets", "example.com", "v1")
    body = widget(size=1)
    body["status"] = {"ready": True}
    made = srv.registry.create(v1, "default", body, W).object
    assert "status" not in made  # reset on create
    out = srv.registry.patch(v1, "default", "w", "status", MERGE_PATCH,
                             {"status": {"ready": True}, "spec": {"size": 5}}, W).object
    assert out["status"] == {"ready": True} and out["spec"] == {"size": 1}
    out = srv.registry.patch(v1, "default", "w", "", MERGE_PATCH, {"status": {"ready": False}, "spec": {"size": 5}},
                             W).object
    assert out["status"] == {"ready": True} and out["spec"] == {"size": 5}


def test_strategic_merge_patch_is_415_for_custom_resources(srv: Server) -> None:
    v1 = srv.res("widgets", "example.com", "v1")
    srv.registry.create(v1, "default", widget(size=1), W)
    with pytest.raises(APIError) as err:
        srv.registry.patch(v1, "default", "w", "", STRATEGIC_PATCH, {"spec": {"size": 2}}, W)
    assert (err.value.code, err.value.reason) == (415, "UnsupportedMediaType")


def test_deleting_the_crd_removes_its_resources(srv: Server) -> None:
    v1 = srv.res("widgets", "example.com", "v1")
    srv.registry.create(v1, "default", widget(size=1), W)
    srv.registry.delete(srv.res("customresourcedefinitions", "apiextensions.k8s.io", "v1"), "",
                        "widgets.example.com", DeleteOptions())
    srv.crds.sync()
    assert srv.catalog.find("example.com", "v1", "widgets") is None
    assert srv.registry.custom == {}
    assert srv.store.scan("Widget.example.com") == []
    assert srv.changes == 2


def test_invalid_crd_is_422() -> None:
    srv = Server()
    bad = copy.deepcopy(CRD)
    bad["metadata"]["name"] = "wrong.example.com"
    with pytest.raises(APIError) as err:
        srv.create_crd(bad)
    assert (err.value.code, err.value.reason) == (422, "Invalid")
    assert "metadata.name" in err.value.message
    assert srv.catalog.find("example.com", "v1", "widgets") is None


def test_crd_group_and_scope_are_immutable(srv: Server) -> None:
    crds = srv.res("customresourcedefinitions", "apiextensions.k8s.io", "v1")
    with pytest.raises(APIError) as err:
        srv.registry.patch(crds, "", "widgets.example.com", "", MERGE_PATCH, {"spec": {"scope": "Cluster"}}, W)
    assert err.value.message.endswith('spec.scope: Invalid value: "Cluster": field is immutable')


def test_a_new_version_is_served_after_update(srv: Server) -> None:
    crds = srv.res("customresourcedefinitions", "apiextensions.k8s.io", "v1")
    cur = srv.registry.get(crds, "", "widgets.example.com")
    cur["spec"]["versions"].append({"name": "v2", "served": True, "storage": False,
                                    "schema": {"openAPIV3Schema": SCHEMA}})
    srv.registry.update(crds, "", "widgets.example.com", "", cur, W)
    srv.crds.sync()
    assert srv.catalog.find("example.com", "v2", "widgets") is not None
    assert srv.changes == 2
