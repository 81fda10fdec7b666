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
        (csinode(driver(node_id="x" * 257)),
         'spec.drivers[0].nodeID: Invalid value: "' + "x" * 257 + '": must be 256 characters or less'),
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


def csidriver(name: str = "csi.example.com", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": SV1, "kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


def storageclass(name: str = "fast", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": SV1, "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": "csi.example.com", **fields}


def capacity(name: str = "cap", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": SV1, "kind": "CSIStorageCapacity", "metadata": {"name": name, "namespace": "default"},
            "storageClassName": "fast", **fields}


def attachment(name: str = "va", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": SV1, "kind": "VolumeAttachment", "metadata": {"name": name},
            "spec": {"attacher": "csi.example.com", "nodeName": "node-a", "source": {"persistentVolumeName": "pv1"},
                     **spec}}


def test_csidriver_and_storageclass_defaults_as_upstream(store: ObjectStore) -> None:
    spec = store.create(csidriver())["spec"]
    assert spec == {"attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
                    "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": False, "seLinuxMount": False,
                    "preventPodSchedulingIfMissing": False, "volumeLifecycleModes": ["Persistent"]}
    sc = store.create(storageclass())
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    # Go's zero values that encoding/json writes
    assert store.create(csinode(driver()))["status"] == {}
    assert store.create(attachment())["status"] == {"attached": False}


@pytest.mark.parametrize(
    ("obj", "text"),
    [
        (csidriver("bad_driver"), 'metadata.name: Invalid value: "bad_driver": a lowercase RFC 1123 subdomain'),
        (csidriver(fsGroupPolicy="Some"), 'spec.fsGroupPolicy: Unsupported value: "Some": supported values: '
                                          '"File", "None", "ReadWriteOnceWithFSType"'),
        (csidriver(volumeLifecycleModes=["Never"]), 'spec.volumeLifecycleModes: Unsupported value: "Never": '
                                                    'supported values: "Persistent", "Ephemeral"'),
        (csidriver(tokenRequests=[{"audience": "a"}, {"audience": "a"}]),
         'spec.tokenRequests[1].audience: Duplicate value: "a"'),
        (csidriver(tokenRequests=[{"audience": "a", "expirationSeconds": 60}]),
         "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"),
        (csidriver(serviceAccountTokenInSecrets=True), "spec.serviceAccountTokenInSecrets: Invalid value: true: "
                                                       "serviceAccountTokenInSecrets is set but no tokenRequests"),
        (csidriver(nodeAllocatableUpdatePeriodSeconds=5),
         "spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 5: must be greater than or equal to 10 seconds"),
        (storageclass(provisioner=""), "provisioner: Required value"),
        (storageclass(provisioner="a/b/c"), 'provisioner: Invalid value: "a/b/c": prefix part'),
        (storageclass(reclaimPolicy="Recycle"),
         'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"'),
        (storageclass(volumeBindingMode="Later"), 'volumeBindingMode: Unsupported value: "Later": supported values: '
                                                  '"Immediate", "WaitForFirstConsumer"'),
        (storageclass(allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": []}]}]),
         "allowedTopologies[0].matchLabelExpressions[0].values: Required value"),
        (storageclass(allowedTopologies=[{"matchLabelExpressions": [{"key": "z", "values": ["a"]}]}] * 2),
         'allowedTopologies[1].matchLabelExpressions: Duplicate value: ""'),
        (capacity(storageClassName="Fast"), 'storageClassName: Invalid value: "Fast": a lowercase RFC 1123'),
        (capacity(capacity="-1Gi"), 'capacity: Invalid value: "-1Gi": must be greater than or equal to 0'),
        (capacity(nodeTopology={"matchExpressions": [{"key": "zone", "operator": "In"}]}),
         "nodeTopology.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or "
         "'NotIn'"),
        (attachment(attacher=""), "spec.attacher: Required value"),
        (attachment(source={}),
         "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"),
        (attachment(nodeName="Node_A"), 'spec.nodeName: Invalid value: "Node_A": a lowercase RFC 1123 subdomain'),
    ],
)
def test_other_storage_kinds_refused_with_upstreams_text(store: ObjectStore, obj: dict[str, Any], text: str) -> None:
    with pytest.raises(ValidationError) as err:
        store.create(obj)
    assert text in str(err.value)
    assert store.list(obj["kind"]) == []


def test_storage_immutable_fields(store: ObjectStore) -> None:
    driver_obj = store.create(csidriver())
    driver_obj["spec"]["attachRequired"] = False
    with pytest.raises(ValidationError, match=r"spec.attachedRequired: Invalid value: false: field is immutable"):
        store.update(driver_obj)
    sc = store.create(storageclass(parameters={"type": "ssd"}))
    sc["parameters"] = {"type": "hdd"}
    with pytest.raises(ValidationError, match=r'parameters: Invalid value: \{"type":"hdd"\}: field is immutable'):
        store.update(sc)
    cap = store.create(capacity(capacity="10Gi"))
    cap["capacity"] = "5Gi"
    cap = store.update(cap)
    assert cap["capacity"] == "5Gi"
    cap["storageClassName"] = "slow"
    with pytest.raises(ValidationError, match=r'storageClassName: Invalid value: "slow": field is immutable'):
        store.update(cap)
    va = store.create(attachment())
    va["spec"]["nodeName"] = "node-b"
    with pytest.raises(ValidationError) as err:
        store.update(va)
    assert str(err.value).endswith('spec: Invalid value: {"Attacher":"csi.example.com","Source":'
                                   '{"PersistentVolumeName":"pv1","InlineVolumeSpec":null},"NodeName":"node-b"}: '
                                   "field is immutable")


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ({"persistentVolumeName": "pv1", "inlineVolumeSpec": {}},
         "spec.source: Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName"),
        ({"inlineVolumeSpec": {"capacity": {"storage": "1Gi"}}},
         "spec.source.inlineVolumeSpec.capacity: Forbidden: may not be specified in the context of inline volumes"),
        ({"inlineVolumeSpec": {"accessModes": ["ReadWriteOnce"]}},
         "spec.source.inlineVolumeSpec.csi: Required value: has to be specified in the context of inline volumes"),
        ({"inlineVolumeSpec": {"csi": {"driver": "d", "volumeHandle": "h"}, "accessModes": ["ReadWriteOnce"],
                               "persistentVolumeReclaimPolicy": "Delete"}},
         "spec.source.inlineVolumeSpec.persistentVolumeReclaimPolicy: Forbidden: may only be Retain in the context "
         "of inline volumes"),
    ],
)
def test_attachment_inline_volume_spec(store: ObjectStore, source: dict[str, Any], text: str) -> None:
    with pytest.raises(ValidationError) as err:
        store.create(attachment(source=source))
    assert text in str(err.value)


def test_attachment_with_an_inline_csi_volume(store: ObjectStore) -> None:
    inline = {"csi": {"driver": "csi.example.com", "volumeHandle": "h"}, "accessModes": ["ReadWriteOnce"]}
    created = store.create(attachment(source={"inlineVolumeSpec": inline}))
    assert created["spec"]["source"] == {"inlineVolumeSpec": inline}
