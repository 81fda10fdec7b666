"""Discovery documents as kubectl and client-go read them: /version, /api, /apis, the legacy
APIResourceLists, and the aggregated APIGroupDiscoveryList (apidiscovery.k8s.io/v2)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver import discovery
from nodeagent.apiserver.catalog import Catalog, Resource, builtin_resources

CATALOG = Catalog(builtin_resources())


@pytest.mark.parametrize(("release", "git_version"), [("1.37", "v1.37.2-nodeagent"), ("1.35", "v1.35.0-nodeagent")])
def test_version_info_reports_the_emulated_release(release: str, git_version: str) -> None:
    """/version names the release kubernetesVersion emulates (it said v1.34.0 while the node ran
    1.37's rules, and kubectl <= 1.32 printed skew warnings against the wrong release)."""
    info = discovery.version_info(release, "3.11.9", "linux/amd64")
    minor = release.split(".")[1]
    assert (info["major"], info["minor"], info["gitVersion"]) == ("1", minor, git_version)
    assert (info["emulationMajor"], info["emulationMinor"]) == ("1", minor)
    assert info["platform"] == "linux/amd64" and info["goVersion"] == "python3.11.9"
    assert set(info) >= {"gitCommit", "gitTreeState", "buildDate", "compiler"}


def test_api_versions() -> None:
    assert discovery.api_versions("127.0.0.1:6443") == {
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
    }


def test_api_group_list_lists_named_groups_with_preferred_versions() -> None:
    doc = discovery.api_group_list(CATALOG)
    assert (doc["kind"], doc["apiVersion"]) == ("APIGroupList", "v1")
    groups = {g["name"]: g for g in doc["groups"]}
    assert "" not in groups
    assert set(groups) == {"events.k8s.io", "coordination.k8s.io", "resource.k8s.io", "apiextensions.k8s.io",
                           "storage.k8s.io", "apps", "batch", "policy", "scheduling.k8s.io",
                           "discovery.k8s.io", "rbac.authorization.k8s.io", "autoscaling",
                           "admissionregistration.k8s.io", "certificates.k8s.io", "networking.k8s.io",
                           "storagemigration.k8s.io", "node.k8s.io", "authentication.k8s.io", "authorization.k8s.io"}
    dra = groups["resource.k8s.io"]
    assert [v["version"] for v in dra["versions"]] == ["v1", "v1beta2", "v1beta1", "v1alpha3"]
    assert dra["preferredVersion"] == {"groupVersion": "resource.k8s.io/v1", "version": "v1"}
    assert dra["versions"][1] == {"groupVersion": "resource.k8s.io/v1beta2", "version": "v1beta2"}


def test_api_group() -> None:
    doc = discovery.api_group(CATALOG, "coordination.k8s.io")
    assert doc == {"kind": "APIGroup", "apiVersion": "v1", "name": "coordination.k8s.io",
                   "versions": [{"groupVersion": "coordination.k8s.io/v1", "version": "v1"}],
                   "preferredVersion": {"groupVersion": "coordination.k8s.io/v1", "version": "v1"}}
    assert discovery.api_group(CATALOG, "nope.example.com") is None


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in doc["resources"]}


def test_core_resource_list() -> None:
    doc = discovery.resource_list(CATALOG, "", "v1")
    assert doc is not None
    assert (doc["kind"], doc["apiVersion"], doc["groupVersion"]) == ("APIResourceList", "v1", "v1")
    res = by_name(doc)
    pods = res["pods"]
    assert (pods["singularName"], pods["namespaced"], pods["kind"]) == ("pod", True, "Pod")
    assert pods["verbs"] == ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    assert pods["shortNames"] == ["po"] and pods["categories"] == ["all"] and pods["storageVersionHash"]
    assert res["pods/status"] == {"name": "pods/status", "singularName": "", "namespaced": True, "kind": "Pod",
                                  "verbs": ["get", "patch", "update"]}
    assert res["pods/binding"] == {"name": "pods/binding", "singularName": "", "namespaced": True, "kind": "Binding",
                                   "verbs": ["create"]}
    assert res["namespaces"]["namespaced"] is False and "deletecollection" not in res["namespaces"]["verbs"]
    assert "namespaces/status" in res and "nodes/status" in res
    assert "configmaps/status" not in res
    # subresources follow their resource
    names = [r["name"] for r in doc["resources"]]
    assert names.index("pods/status") == names.index("pods") + 1


def test_group_resource_list_and_unknown_versions() -> None:
    doc = discovery.resource_list(CATALOG, "resource.k8s.io", "v1beta1")
    assert doc is not None and doc["groupVersion"] == "resource.k8s.io/v1beta1"
    res = by_name(doc)
    assert set(res) == {"deviceclasses", "resourceclaims", "resourceclaims/status", "resourceclaimtemplates",
                        "resourceslices"}
    assert res["resourceslices"]["namespaced"] is False
    assert discovery.resource_list(CATALOG, "resource.k8s.io", "v9") is None
    assert discovery.resource_list(CATALOG, "nope", "v1") is None


def test_storage_version_hash_is_stable_and_per_resource() -> None:
    a = by_name(discovery.resource_list(CATALOG, "", "v1") or {})
    b = by_name(discovery.resource_list(Catalog(builtin_resources()), "", "v1") or {})
    assert a["pods"]["storageVersionHash"] == b["pods"]["storageVersionHash"]
    assert a["pods"]["storageVersionHash"] != a["nodes"]["storageVersionHash"]


def test_aggregated_core() -> None:
    doc = discovery.aggregated(CATALOG, core=True)
    assert (doc["kind"], doc["apiVersion"], doc["metadata"]) == ("APIGroupDiscoveryList", "apidiscovery.k8s.io/v2", {})
    assert len(doc["items"]) == 1
    core = doc["items"][0]
    assert core["metadata"] == {"name": "", "creationTimestamp": None}
    assert [v["version"] for v in core["versions"]] == ["v1"] and core["versions"][0]["freshness"] == "Current"
    res = {r["resource"]: r for r in core["versions"][0]["resources"]}
    assert res["pods"] == {
        # the APIResource's group and version: empty for a resource answering its own kind (installer.go)
        "resource": "pods", "responseKind": {"group": "", "version": "", "kind": "Pod"}, "scope": "Namespaced",
        "singularResource": "pod",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "shortNames": ["po"], "categories": ["all"],
        "subresources": [
            {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "Pod"},
             "verbs": ["get", "patch", "update"]},
            {"subresource": "binding", "responseKind": {"group": "", "version": "", "kind": "Binding"},
             "verbs": ["create"]},
            # EvictionREST's GroupVersionKind: policy/v1 Eviction, which kubectl drain looks for
            {"subresource": "eviction", "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
             "verbs": ["create"]},
        ],
    }
    assert res["nodes"]["scope"] == "Cluster"
    assert "subresources" not in res["configmaps"]


def test_aggregated_groups_with_versions_by_priority() -> None:
    doc = discovery.aggregated(CATALOG, core=False, api_version="apidiscovery.k8s.io/v2beta1")
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    items = {i["metadata"]["name"]: i for i in doc["items"]}
    assert "" not in items
    dra = items["resource.k8s.io"]
    assert [v["version"] for v in dra["versions"]] == ["v1", "v1beta2", "v1beta1", "v1alpha3"]
    alpha = dra["versions"][3]["resources"]
    assert [r["resource"] for r in alpha] == ["podschedulingcontexts", "devicetaintrules"]


def test_catalog_changes_show_in_discovery() -> None:
    catalog = Catalog(builtin_resources())
    widget = Resource("example.com", "v1", "widgets", "Widget", True, "com.example.v1.Widget",
                      short_names=("wd",), subresources=("status",))
    catalog.add(widget)
    assert "example.com" in [g["name"] for g in discovery.api_group_list(catalog)["groups"]]
    res = by_name(discovery.resource_list(catalog, "example.com", "v1") or {})
    assert set(res) == {"widgets", "widgets/status"} and res["widgets"]["shortNames"] == ["wd"]
    catalog.remove("example.com", "v1", "widgets")
    assert discovery.api_group(catalog, "example.com") is None
    assert "example.com" not in [i["metadata"]["name"] for i in discovery.aggregated(catalog, core=False)["items"]]


@pytest.mark.parametrize(
    ("versions", "preferred"),
    [(["v1beta1", "v1"], "v1"), (["v1alpha1", "v1beta2", "v1beta1"], "v1beta2"), (["v2", "v10", "v1"], "v10")],
)
def test_preferred_version_is_highest_priority(versions: list[str], preferred: str) -> None:
    catalog = Catalog([Resource("example.com", v, "widgets", "Widget", True, f"com.example.{v}.Widget")
                       for v in versions])
    group = discovery.api_group(catalog, "example.com")
    assert group is not None and group["preferredVersion"]["version"] == preferred
