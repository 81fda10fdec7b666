"""A gone pod's devices stay in kubelet_internal_checkpoint until the next UpdateAllocatedDevices.

The kubelet's devicemanager keeps a pod's entries in podDevices after the pod ends; they are
forgotten only by UpdateAllocatedDevices, which runs before an Allocate for a container asking for a
device-plugin resource, before every topology hint, and at the start of pod-resources List (v1 and
v1alpha1). Its checkpoint file, rewritten on every ListAndWatch update, lists the gone pod until
then, and a restarted kubelet reads them back from it (readCheckpoint). Nothing else may see those
devices: they are free for the next pod and in no count."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from nodeagent.apis.podresources.v1 import api_pb2 as v1
from nodeagent.apis.podresources.v1alpha1 import api_pb2 as v1alpha1
from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.manager import DeviceManager
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.podresources.fakes import VersionedResources
from nodeagent.podresources.lister import PodResourcesLister
from nodeagent.podresources.service import PodResourcesV1, PodResourcesV1alpha1
from nodeagent.pods.hints import TopologyHint
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock
from tests.unit.devices.test_manager_property import GPU, FakePlugin, settle


def _pod(uid: str, gpus: int) -> Pod:
    limits = {GPU: gpus} if gpus else {}
    return Pod(uid=uid, name=uid, namespace="ns", containers=(Container("c", limits=limits),))


def _in_checkpoint(manager: DeviceManager) -> list[str]:
    entries, _ = manager.checkpoint_data()
    return sorted({uid for uid, _, _ in entries})


async def _manager(plugin: FakePlugin, db: StateDB | None = None) -> DeviceManager:
    manager = DeviceManager(dialer=plugin, checkpoint=Checkpoint(db or StateDB.memory()), clock=FakeClock(),
                            device_plugins_dir=Path("/dp"), numa_nodes=(0, 1))
    await manager.start()
    await manager.register("v1beta1", "gpu.sock", GPU)
    await settle()
    return manager


async def test_kept_until_a_device_allocation() -> None:
    plugin = FakePlugin()
    manager = await _manager(plugin)
    try:
        first = _pod("first", 2)
        assert (await manager.admit(first, [])).admit
        generation = manager.generation()
        await manager.remove(first)
        assert manager.generation() != generation  # the file is rendered again: with the same pods
        assert _in_checkpoint(manager) == ["first"]
        assert manager.allocated_counts() == {}  # held by nobody
        assert manager.container_devices("first", "c") == []
        plugin.health["gpu-0"] = "Unhealthy"  # a ListAndWatch update: the kubelet writes its file now
        plugin.push()
        await settle()
        assert _in_checkpoint(manager) == ["first"]
        assert (await manager.admit(_pod("no-devices", 0), [])).admit  # no device-plugin resource asked
        assert _in_checkpoint(manager) == ["first"]
        assert (await manager.admit(_pod("second", 4), [])).admit  # all free healthy devices: first's too
        assert _in_checkpoint(manager) == ["second"]
    finally:
        await manager.stop()


async def test_forgotten_by_topology_hints() -> None:
    manager = await _manager(FakePlugin())
    try:
        first = _pod("first", 1)
        await manager.allocate(first, first.containers[0], TopologyHint(None, False))
        await manager.remove(first)
        assert _in_checkpoint(manager) == ["first"]
        other = _pod("other", 0)
        assert manager.get_topology_hints(other, other.containers[0]) == {}
        assert _in_checkpoint(manager) == []
        await manager.allocate(first, first.containers[0], TopologyHint(None, False))
        await manager.remove(first)
        manager.get_pod_topology_hints(other)
        assert _in_checkpoint(manager) == []
    finally:
        await manager.stop()


async def test_forgotten_by_pod_resources_list() -> None:
    manager = await _manager(FakePlugin())
    others = VersionedResources()
    lister = PodResourcesLister(others, manager, others, others, others)
    v1_server = PodResourcesV1(lister, Instruments(CollectorRegistry()))
    v1alpha1_server = PodResourcesV1alpha1(lister, Instruments(CollectorRegistry()))
    try:
        for call in (lambda: v1_server.List(v1.ListPodResourcesRequest(), None),
                     lambda: v1alpha1_server.List(v1alpha1.ListPodResourcesRequest(), None)):
            pod = _pod("gone", 2)
            assert (await manager.admit(pod, [])).admit
            await manager.remove(pod)
            assert await v1_server.GetAllocatableResources(v1.AllocatableResourcesRequest(), None)
            assert _in_checkpoint(manager) == ["gone"]  # GetAllocatableResources forgets nothing
            await call()
            assert _in_checkpoint(manager) == []
    finally:
        await manager.stop()


async def test_gone_while_down_kept_until_allocation() -> None:
    """The kubelet reads its checkpoint back with the pods gone while it was down and keeps them
    until its first UpdateAllocatedDevices; nodeagent's reconcile does the same."""
    plugin = FakePlugin()
    manager = await _manager(plugin)
    try:
        assert (await manager.admit(_pod("kept", 1), [])).admit
        assert (await manager.admit(_pod("gone", 1), [])).admit
        assert manager.reconcile({"kept"}) == ["gone"]
        assert _in_checkpoint(manager) == ["gone", "kept"]
        assert manager.allocated_counts() == {GPU: 1}
        assert (await manager.admit(_pod("new", 1), [])).admit
        assert _in_checkpoint(manager) == ["kept", "new"]
    finally:
        await manager.stop()


async def test_kept_across_a_restart_until_allocation() -> None:
    """A restarted kubelet reads the gone pods' devices back from kubelet_internal_checkpoint and keeps
    them until its next UpdateAllocatedDevices; a restarted nodeagent reads them back from its state
    database (a new manager over the same database, as a new process; and the in-process restart)."""
    db = StateDB.memory()
    manager = await _manager(FakePlugin(), db)
    try:
        first = _pod("first", 2)
        assert (await manager.admit(first, [])).admit
        assert (await manager.admit(_pod("gone-while-down", 1), [])).admit
        expected = manager.checkpoint_data()[0]
        await manager.remove(first)  # the last device event before the stop: no allocation after it
    finally:
        await manager.stop()
    plugin = FakePlugin()
    manager = await _manager(plugin, db)  # a new process over the same state
    try:
        assert manager.reconcile(set()) == ["gone-while-down"]
        assert sorted(manager.checkpoint_data()[0]) == sorted(expected)  # NUMA nodes resolved as they were
        assert manager.allocated_counts() == {}
        await manager.restart()
        await manager.register("v1beta1", "gpu.sock", GPU)
        await settle()
        assert _in_checkpoint(manager) == ["first", "gone-while-down"]
        assert (await manager.admit(_pod("second", 1), [])).admit
        assert _in_checkpoint(manager) == ["second"]
    finally:
        await manager.stop()
    manager = await _manager(FakePlugin(), db)
    try:
        assert _in_checkpoint(manager) == ["second"], "forgotten for good"
    finally:
        await manager.stop()
