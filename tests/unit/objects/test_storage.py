"""storage.k8s.io/v1 admission (store hooks): upstream's ValidateCSINode (and the other storage
kinds') field paths and texts, refused writes leaving nothing behind."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects import storage
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

SV1 = "storage.k8s.io/v1"


@pytest.fixture
def store() -> Any:
    s = ObjectStore.memory(builtin_kinds().with_hooks(storage.hooks()), FakeClock())
    yield s
    s.close()


def csinode(*drivers: dict[str, Any], name: str = "node-a") -> dict[str, Any]:
    return {"apiVersion": SV1, "kind": "CSINode", "metadata": {"name": name}, "spec": {"drivers": list(drivers)}}


def driver(name: str = "csi.example.com", node_id: str = "n1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "nodeID": node_id, **extra}


@pytest.mark.parametrize(
    ("obj", "text"),
    [
        (csinode(driver(name="")), "spec.drivers[0].name: Required value"),
        (csinode(driver(name="d" * 64)), "spec.drivers[0].name: Too long: may not be more than 63 bytes"),
        (csinode(driver(name="bad_name")), 'spec.drivers[0].name: Invalid value: "bad_name": a lowercase RFC 1123'),
        (csinode(driver(node_id="")), "spec.drivers[0].nodeID: Required value"),
        (csinode(driver(node_id="x" * 193)),
         'spec.drivers[0].nodeID: Invalid value: "' + "x" * 193 + '": must be 192 characters or less'),
        (csinode(driver(allocatable={"count": -1})),
         "spec.drivers[0].allocatable.count: Invalid value: -1: must be greater than or equal to 0"),
        (csinode(driver(), driver(node_id="n2")), 'spec.drivers[1].name: Duplicate value: "csi.example.com"'),
        (csinode(driver(topologyKeys=["zone", "zone"])), 'spec.drivers[0]: Duplicate value: "zone"'),
        (csinode(driver(topologyKeys=[""])), "spec.drivers[0]: Required value"),
        (csinode(driver(topologyKeys=["a/b/c"])), 'spec.drivers[0]: Invalid value: "a/b/c": prefix part'),
    ],
)
def test_csinode_refused_with_upstreams_path_and_text(store: ObjectStore, obj: dict[str, Any], text: str) -> None:
    with pytest.raises(ValidationError) as err:
        store.create(obj)
    assert text in str(err.value)
    assert store.list("CSINode") == []


def test_csinode_driver_name_may_be_upper_case(store: ObjectStore) -> None:
    """ValidateCSIDriverName checks the lower-cased name as a DNS subdomain."""
    store.create(csinode(driver(name="CSI.Example.com", topologyKeys=["topology.example.com/zone"])))
    assert store.get("CSINode", "", "node-a")["spec"]["drivers"][0]["name"] == "CSI.Example.com"


def test_csinode_driver_fields_are_immutable_but_the_count(store: ObjectStore) -> None:
    obj = store.create(csinode(driver(allocatable={"count": 4}), driver(name="other.example.com")))
    obj["spec"]["drivers"][0]["allocatable"] = {"count": 8}
    obj = store.update(obj)
    assert obj["spec"]["drivers"][0]["allocatable"] == {"count": 8}
    obj["spec"]["drivers"][0]["nodeID"] = "n2"
    with pytest.raises(ValidationError) as err:
        store.update(obj)
    assert str(err.value).endswith(
        'spec.drivers: Invalid value: {"Name":"csi.example.com","NodeID":"n2","TopologyKeys":null,'
        '"Allocatable":null}: field is immutable')
    # a driver may be added and removed
    obj["spec"]["drivers"] = [driver(name="third.example.com")]
    assert [d["name"] for d in store.update(obj)["spec"]["drivers"]] == ["third.example.com"]
