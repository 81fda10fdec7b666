"""The admin backend's device views: describe pod shows each container's allocation, describe node the devices."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence

import pytest
import yaml
from prometheus_client import CollectorRegistry

from nodeagent.admin.backend import NodeBackend
from nodeagent.admin.describe import describe_device_allocations
from nodeagent.devices.model import ContainerAllocation, DeviceSpec, Mount, ResourceAllocation, ResourceSummary
from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodesync.loop import NodeSync
from nodeagent.objects.resource.validation import hooks
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.pods.ports import NodeResources
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.unit.pods.fakes import FakeCgroups, FakeResources

GPU = "example.com/gpu"

ALLOC = ResourceAllocation(
    GPU,
    ("gpu-2", "gpu-3"),
    ContainerAllocation(
        envs={"FAKE_GPU_DEVICES": "gpu-2,gpu-3", "A_FIRST": "1"},
        mounts=(Mount("/usr/local/fake-gpu", "/opt/fake-gpu", True),),
        devices=(DeviceSpec("/dev/fake-gpu2", "/dev/null", "rw"), DeviceSpec("/dev/fake-gpu3", "/dev/null", "")),
        annotations={"example.com/gpu-devices": "gpu-2,gpu-3"},
        cdi_devices=("example.com/gpu=gpu-2", "example.com/gpu=gpu-3"),
    ),
    numa={"gpu-2": (1,), "gpu-3": (1,)},
)


class FakeDevices:
    def __init__(self) -> None:
        self.allocations: dict[str, dict[str, dict[str, ResourceAllocation]]] = {}
        self.summaries: list[ResourceSummary] = []
        self.health: list[tuple[str, str, str]] = []

    async def set_device_health(self, resource: str, device_id: str, health: str) -> None:
        self.health.append((resource, device_id, health))

    def pod_allocations(self, pod_uid: str) -> Mapping[str, Mapping[str, ResourceAllocation]]:
        return self.allocations.get(pod_uid, {})

    def snapshot(self) -> Sequence[ResourceSummary]:
        return self.summaries


def gpu_pod(name: str) -> str:
    res = {"cpu": "1", "memory": "1Gi", GPU: 2}
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "trainer", "image": "pause", "resources": {"requests": res, "limits": res}},
                                {"name": "plain", "image": "pause"}]},
    })


@pytest.fixture
async def rig() -> AsyncIterator[tuple[NodeBackend, FakeDevices, PodManager]]:
    clock = FakeClock()
    recorder = EventRecorder(clock=clock, host="node-a")
    resources = FakeResources({"cpu": 8000, "memory": 32 << 30, "pods": 110, GPU: 4})
    pods = PodManager(
        node_name="node-a", resources=resources, admitters=[], cgroups=FakeCgroups(), db=StateDB.memory(),
        clock=clock, instruments=Instruments(CollectorRegistry()), recorder=recorder,
    )
    devices = FakeDevices()

    def node_resources() -> NodeResources:
        return resources.node_resources()

    backend = NodeBackend(node_name="node-a", labels={}, pods=pods, recorder=recorder, resources=node_resources,
                          conditions=lambda: [], devices=devices, clock=clock)
    store = ObjectStore.memory(builtin_kinds().with_hooks(hooks()), clock)
    sync = NodeSync(node_name="node-a", api=InProcessAPI(store), pods=pods, node_object=backend.node, recorder=recorder,
                    clock=clock, bind_unscheduled=True)
    backend.attach(store, sync)
    await sync.start()
    yield backend, devices, pods
    sync.close()
    store.close()


async def test_describe_pod_shows_devices_and_allocate_answer_before_events(
    rig: tuple[NodeBackend, FakeDevices, PodManager],
) -> None:
    backend, devices, pods = rig
    await backend.apply(gpu_pod("train"), "default")
    uid = pods.get("default", "train").pod.uid
    devices.allocations[uid] = {"trainer": {GPU: ALLOC}}
    text = backend.describe("pod", "default", "train")
    block = text[text.index("Device Allocations:"):text.index("Events:")]
    assert block.splitlines() == [
        "Device Allocations:",
        "  trainer:",
        "    example.com/gpu:",
        "      Devices:     gpu-2, gpu-3",
        "      NUMA Nodes:  gpu-2=1 gpu-3=1",
        "      Environment:",
        "        A_FIRST:           1",
        "        FAKE_GPU_DEVICES:  gpu-2,gpu-3",
        "      Mounts:",
        "        /usr/local/fake-gpu from /opt/fake-gpu (ro)",
        "      Device Specs:",
        "        /dev/fake-gpu2 -> /dev/null (rw)",
        "        /dev/fake-gpu3 -> /dev/null",
        "      Annotations:",
        "        example.com/gpu-devices:  gpu-2,gpu-3",
        "      CDI Devices:",
        "        example.com/gpu=gpu-2",
        "        example.com/gpu=gpu-3",
    ]
    assert text.index("QoS Class:") < text.index("Device Allocations:")


async def test_describe_pod_without_devices_has_no_device_block(
    rig: tuple[NodeBackend, FakeDevices, PodManager],
) -> None:
    backend, _, _ = rig
    await backend.apply(gpu_pod("plain"), "default")
    assert "Device Allocations" not in backend.describe("pod", "default", "plain")


def test_empty_answer_parts_show_none() -> None:
    text = describe_device_allocations({"c": {GPU: ResourceAllocation(GPU, ("gpu-0",))}, "other": {}})
    assert "other" not in text
    for title in ("Environment", "Mounts", "Device Specs", "Annotations", "CDI Devices"):
        assert f"      {title}:" in text and text.split(f"{title}:")[1].split("\n")[0].strip() == "<none>"
    assert "NUMA Nodes" not in text
    assert describe_device_allocations({}) == ""


async def test_describe_node_lists_devices_by_health(rig: tuple[NodeBackend, FakeDevices, PodManager]) -> None:
    backend, devices, _ = rig
    assert "Device Plugins:" not in backend.describe("node", "", "node-a")
    devices.summaries = [
        ResourceSummary(GPU, capacity=4, allocatable=3, healthy=3, unhealthy=1, allocated=2, registered=True,
                        endpoint="/r/device-plugins/fake-gpu.sock"),
        ResourceSummary("example.com/nic", capacity=2, allocatable=0, healthy=0, unhealthy=2, allocated=0,
                        registered=False),
    ]
    lines = backend.describe("node", "", "node-a").splitlines()
    start = lines.index("Device Plugins:")
    assert [line.split() for line in lines[start + 1:start + 4]] == [
        ["Resource", "Registered", "Healthy", "Unhealthy", "Allocated", "Endpoint"],
        [GPU, "True", "3", "1", "2", "/r/device-plugins/fake-gpu.sock"],
        ["example.com/nic", "False", "0", "2", "0", "<none>"],
    ]


async def test_set_device_health_is_passed_through(rig: tuple[NodeBackend, FakeDevices, PodManager]) -> None:
    backend, devices, _ = rig
    await backend.set_device_health(GPU, "gpu-1", "Unhealthy")
    assert devices.health == [(GPU, "gpu-1", "Unhealthy")]


async def test_a_node_process_describes_itself_and_its_pods_without_a_store(
    rig: tuple[NodeBackend, FakeDevices, PodManager],
) -> None:
    """`nodeagent describe --admin-socket` on a node process (one that joined a cluster: no object
    store) answered "this node has no object store" for everything; its own pods and Node are the
    node's to describe. Other objects still point at kubectl."""
    from nodeagent.errors import FailedPrecondition

    backend, devices, pods = rig
    await backend.apply(gpu_pod("train"), "default")
    uid = pods.get("default", "train").pod.uid
    devices.allocations[uid] = {"trainer": {GPU: ALLOC}}
    backend.attach(None, backend._sync)  # type: ignore[arg-type]  # as wiring does on a node process
    text = backend.describe("pod", "default", "train")
    assert "Name:" in text and "train" in text and "Device Allocations:" in text
    assert "Name:\tnode-a" in backend.describe("node", "", "node-a") or "node-a" in backend.describe("no", "", "")
    with pytest.raises(FailedPrecondition, match="use kubectl"):
        backend.describe("resourceclaims", "default", "c")
