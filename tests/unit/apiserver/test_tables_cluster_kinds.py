"""kubectl's columns for the storage, policy, scheduling and discovery kinds, as upstream's
pkg/printers/internalversion prints them: cells of one object, and a StorageClass list marking
its effective default."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver import tables
from nodeagent.apiserver.catalog import builtin_resources
from tests.unit.apiserver.test_tables import NOW, ago, cells, res

SV1 = "storage.k8s.io"


@pytest.mark.parametrize(
    ("kind", "group", "obj", "expected"),
    [
        ("CSINode", SV1, {"metadata": {"name": "n", "creationTimestamp": ago(60)},
                          "spec": {"drivers": [{"name": "a"}, {"name": "b"}]}}, ["n", 2, "60s"]),
        ("CSIDriver", SV1, {"metadata": {"name": "d", "creationTimestamp": ago(5)},
                            "spec": {"tokenRequests": [{"audience": "x"}, {"audience": "y"}],
                                     "volumeLifecycleModes": ["Persistent", "Ephemeral"]}},
         ["d", True, False, False, "x,y", False, "Persistent,Ephemeral", "5s"]),
        ("CSIDriver", SV1, {"metadata": {"name": "d"}, "spec": {"attachRequired": False}},
         ["d", False, False, False, "<unset>", False, "<none>", "<unknown>"]),
        ("StorageClass", SV1, {"metadata": {"name": "sc", "creationTimestamp": ago(5)}, "provisioner": "p",
                               "allowVolumeExpansion": True}, ["sc", "p", "Delete", "Immediate", True, "5s"]),
        ("CSIStorageCapacity", SV1, {"metadata": {"name": "c"}, "storageClassName": "sc"}, ["c", "sc", "<unset>"]),
        ("VolumeAttachment", SV1, {"metadata": {"name": "va", "creationTimestamp": ago(5)},
                                   "spec": {"attacher": "d", "nodeName": "n", "source": {"persistentVolumeName": "pv"}},
                                   "status": {"attached": True}}, ["va", "d", "pv", "n", True, "5s"]),
        ("PodDisruptionBudget", "policy", {"metadata": {"name": "b", "creationTimestamp": ago(5)},
                                           "spec": {"maxUnavailable": "10%"}, "status": {"disruptionsAllowed": 2}},
         ["b", "N/A", "10%", 2, "5s"]),
        ("PriorityClass", "scheduling.k8s.io",
         {"metadata": {"name": "pc", "creationTimestamp": ago(5)}, "value": 7, "preemptionPolicy": "Never"},
         ["pc", 7, False, "5s", "Never"]),
        ("EndpointSlice", "discovery.k8s.io",
         {"metadata": {"name": "s", "creationTimestamp": ago(5)}, "addressType": "IPv4",
          "ports": [{"port": 80}, {"name": "metrics"}, {}, {"port": 9}],
          "endpoints": [{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3"]}]},
         ["s", "IPv4", "80,metrics,* + 1 more...", "10.0.0.1,10.0.0.2,10.0.0.3", "5s"]),
        ("EndpointSlice", "discovery.k8s.io", {"metadata": {"name": "e"}, "addressType": "FQDN"},
         ["e", "FQDN", "<unset>", "<unset>", "<unknown>"]),
    ],
)
def test_cells(kind: str, group: str, obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells(res(kind, group), obj) == expected


def test_a_storage_class_list_marks_the_newest_default() -> None:
    def sc(name: str, age: float, default: bool) -> dict[str, Any]:
        annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
        return {"metadata": {"name": name, "creationTimestamp": ago(age), "annotations": annotations},
                "provisioner": "p"}

    classes = [sc("old", 600, True), sc("new", 60, True), sc("plain", 5, False)]
    resource = next(r for r in builtin_resources() if r.kind == "StorageClass")
    listed = tables.table(resource, classes, now=NOW, list_meta={"resourceVersion": "1"})
    assert [row["cells"][0] for row in listed["rows"]] == ["old", "new (default)", "plain"]
    # one object is printed as itself (printStorageClass), default or not
    assert cells(resource, classes[1])[0] == "new"
