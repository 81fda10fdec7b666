"""The Node the backend publishes carries what a v1.37.2 kubelet's initialNode and status setters
write: nodeInfo's machine identity from the host probe, the release's kubeletVersion, GOARCH
labels, the controller-managed attach/detach annotation and the kubelet's condition texts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from nodeagent.admin.backend import CONTROLLER_MANAGED_ATTACH, NodeBackend
from nodeagent.config.versions import release_version
from nodeagent.devices.model import ResourceAllocation, ResourceSummary
from nodeagent.host.fake import FakeHost
from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodesync.loop import NodeSync
from nodeagent.objects.resource.validation import hooks
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.unit.pods.fakes import FakeCgroups, FakeResources


class NoDevices:
    async def set_device_health(self, resource: str, device_id: str, health: str) -> None:
        return None

    def pod_allocations(self, pod_uid: str) -> Mapping[str, Mapping[str, ResourceAllocation]]:
        return {}

    def snapshot(self) -> Sequence[ResourceSummary]:
        return []


def backend(pressure: Sequence[str] = (), attach_detach: bool = True,
            labels: Mapping[str, str] | None = None) -> NodeBackend:
    clock = FakeClock()
    recorder = EventRecorder(clock=clock, host="node-a")
    resources = FakeResources({"cpu": 8000, "memory": 32 << 30, "pods": 110})
    pods = PodManager(node_name="node-a", resources=resources, admitters=[], cgroups=FakeCgroups(),
                      db=StateDB.memory(), clock=clock, instruments=Instruments(CollectorRegistry()),
                      recorder=recorder)
    return NodeBackend(node_name="node-a", labels=labels or {}, pods=pods, recorder=recorder,
                       resources=resources.node_resources, conditions=lambda: list(pressure),
                       devices=NoDevices(), clock=clock, system=FakeHost().facts().system,
                       kubelet_version=release_version("1.37"), controller_attach_detach=attach_detach)


def conditions(node: Mapping[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in node["status"]["conditions"]}


def test_node_info_labels_and_annotation_as_the_kubelet_writes_them() -> None:
    node = backend(labels={"example.com/pool": "a"}).node()
    system = FakeHost().system
    assert node["status"]["nodeInfo"] == {
        "machineID": system.machine_id, "systemUUID": system.system_uuid, "bootID": system.boot_id,
        "kernelVersion": system.kernel_version, "osImage": system.os_image,
        "kubeletVersion": "v1.37.2", "operatingSystem": "linux", "architecture": "amd64",
        "runningInUserNamespace": False,  # KubeletInUserNamespace: beta, on in 1.37
    }  # no kubeProxyVersion: DisableNodeKubeProxyVersion is locked on
    # NodeDeclaredFeatures (GA in 1.37): the registry's features whose gates are on, sorted; never
    # ExtendWebSocketsToKubelet (the endpoint serves no websocket streams: declared_features.py)
    assert node["status"]["declaredFeatures"] == [
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"]
    assert node["metadata"]["labels"] == {
        "kubernetes.io/hostname": "node-a", "kubernetes.io/os": "linux", "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "beta.kubernetes.io/arch": "amd64", "example.com/pool": "a",
    }
    assert node["metadata"]["annotations"] == {CONTROLLER_MANAGED_ATTACH: "true"}
    assert "annotations" not in backend(attach_detach=False).node()["metadata"]


def test_condition_reasons_and_messages_are_the_kubelets() -> None:
    assert conditions(backend().node()) == {
        "MemoryPressure": ("False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        "DiskPressure": ("False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        "PIDPressure": ("False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        "Ready": ("True", "KubeletReady", "kubelet is posting ready status"),
    }
    under = conditions(backend(pressure=["MemoryPressure", "DiskPressure", "PIDPressure"]).node())
    assert under["MemoryPressure"] == ("True", "KubeletHasInsufficientMemory",
                                       "kubelet has insufficient memory available")
    assert under["DiskPressure"] == ("True", "KubeletHasDiskPressure", "kubelet has disk pressure")
    assert under["PIDPressure"] == ("True", "KubeletHasInsufficientPID", "kubelet has insufficient PID available")


async def test_registered_node_keeps_the_annotation_and_labels() -> None:
    """Through the node sync into a store: the Node created carries the annotation and arch labels."""
    b = backend()
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds().with_hooks(hooks()), clock)
    sync = NodeSync(node_name="node-a", api=InProcessAPI(store), pods=b._pods, node_object=b.node,
                    recorder=b._recorder, clock=clock, bind_unscheduled=True)
    try:
        await sync.publish_node()
        stored = store.get("Node", "", "node-a")
    finally:
        sync.close()
        store.close()
    assert stored["metadata"]["annotations"][CONTROLLER_MANAGED_ATTACH] == "true"
    assert stored["metadata"]["labels"]["kubernetes.io/arch"] == "amd64"
    assert stored["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.2"
    assert stored["status"]["nodeInfo"]["bootID"] == FakeHost().system.boot_id


def test_declared_features_and_user_namespace_follow_the_emulated_release() -> None:
    """1.35 has NodeDeclaredFeatures off and KubeletInUserNamespace alpha: neither is written;
    a gate turned off leaves its feature out."""
    from nodeagent.config.declared_features import declared_features

    assert declared_features(35, {}) == []
    assert declared_features(37, {"RestartAllContainersOnContainerExits": False,
                                  "DRAOptionalNodeOperations": True}) == [
        "DRAOptionalNodeOperations", "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers"]
    assert "ExtendWebSocketsToKubelet" not in declared_features(37, {"ExtendWebSocketsToKubelet": True})
    old = NodeBackend(node_name="n", labels={}, pods=backend()._pods, recorder=EventRecorder(clock=FakeClock()),
                      resources=FakeResources({"cpu": 1000}).node_resources, conditions=list,
                      devices=NoDevices(), clock=FakeClock(), kubelet_version=release_version("1.35")).node()
    assert "declaredFeatures" not in old["status"] and "runningInUserNamespace" not in old["status"]["nodeInfo"]


def test_running_in_user_namespace_reads_the_uid_map(tmp_path: Path) -> None:
    from nodeagent.host.probe import running_in_user_namespace

    uid_map = tmp_path / "uid_map"
    assert not running_in_user_namespace(uid_map)  # unreadable: false, as moby's userns
    uid_map.write_text("         0          0 4294967295\n")
    assert not running_in_user_namespace(uid_map)
    uid_map.write_text("         0     100000      65536\n")
    assert running_in_user_namespace(uid_map)
