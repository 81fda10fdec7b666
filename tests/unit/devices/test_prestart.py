"""PreStartContainer as the kubelet calls it: when each container is about to start, not at admission.

The kubelet's admission allocates every container (init containers first); PreStartContainer comes
from GetDeviceRunContainerOptions as each container starts, so a pod with an init container and an
app container asks the plugin Allocate, Allocate, PreStartContainer, PreStartContainer (the real
kubelet did so in the kubelet tier's 19-device-prestart; nodeagent called PreStartContainer right
after each Allocate before). In nodeagent the pod starter (wiring.node_resources.DeviceAdmitter)
makes those calls before the pod goes Running; a failure keeps the pod waiting, tried again."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.manager import DeviceManager
from nodeagent.devices.model import ContainerAllocation, PluginOptions
from nodeagent.errors import PluginCallError
from nodeagent.objects.pod.model import Container, Pod, ResourceStatus
from nodeagent.pods.hints import TopologyHint
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock
from nodeagent.wiring.node_resources import DeviceAdmitter
from tests.unit.devices.test_manager_property import GPU, FakeConn, FakePlugin, settle


class RecordingConn(FakeConn):
    def __init__(self, plugin: RecordingPlugin) -> None:
        super().__init__(plugin)
        self.recorder = plugin

    async def allocate(self, device_ids: Sequence[str]) -> ContainerAllocation:
        self.recorder.calls.append(("Allocate", tuple(device_ids)))
        return await super().allocate(device_ids)

    async def pre_start_container(self, device_ids: Sequence[str]) -> None:
        self.recorder.calls.append(("PreStartContainer", tuple(sorted(device_ids))))
        if self.recorder.pre_start_error:
            raise PluginCallError(self.recorder.pre_start_error)


class RecordingPlugin(FakePlugin):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.pre_start_error = ""

    async def dial(self, resource: str, socket_path: Path) -> FakeConn:
        conn = RecordingConn(self)
        self.conns.append(conn)
        return conn


class PlainConn(RecordingConn):
    """A plugin that does not ask for PreStartContainer."""

    async def get_options(self) -> PluginOptions:
        return dataclasses.replace(await super().get_options(), pre_start_required=False)


class PlainPlugin(RecordingPlugin):
    async def dial(self, resource: str, socket_path: Path) -> FakeConn:
        conn = PlainConn(self)
        self.conns.append(conn)
        return conn


async def _no_health(uid: str, container: str, statuses: tuple[ResourceStatus, ...]) -> None:
    return None


async def test_pre_start_when_containers_start_not_at_admission() -> None:
    plugin = RecordingPlugin()
    manager = DeviceManager(dialer=plugin, checkpoint=Checkpoint(StateDB.memory()), clock=FakeClock(),
                            device_plugins_dir=Path("/dp"), numa_nodes=(0, 1))
    await manager.start()
    try:
        await manager.register("v1beta1", "gpu.sock", GPU)
        await settle()
        starter = DeviceAdmitter(manager, _no_health)
        pod = Pod(uid="u1", name="p", namespace="ns",
                  init_containers=(Container("init", limits={GPU: 1}),),
                  containers=(Container("main", limits={GPU: 2}),))
        for container in pod.all_containers():  # the topology manager's admission
            await starter.allocate(pod, container, TopologyHint(None, False))
        assert [c for c, _ in plugin.calls] == ["Allocate", "Allocate"]
        assert starter.prepare_now(pod) is None  # a plugin must be called before the pod runs
        held = {c: tuple(sorted(d.device_id for d in manager.container_devices("u1", c))) for c in ("init", "main")}
        plugin.pre_start_error = "rpc error: code = Internal desc = not now"
        waiting = await starter.prepare(pod)
        assert not waiting.ready
        message = "device plugin PreStartContainer rpc failed with err: rpc error: code = Internal desc = not now"
        # the init container's start fails (kuberuntime's startContainer: CreateContainerConfigError, the
        # Warning "Failed"), and SyncPod stops there: the app container is not tried
        assert waiting.failed_containers == {"init": ("CreateContainerConfigError", message)}
        assert waiting.reason == "Failed"
        assert plugin.calls[2:] == [("PreStartContainer", held["init"])]
        plugin.pre_start_error = ""
        del plugin.calls[2:]
        ready = await starter.prepare(pod)
        assert ready.ready and set(ready.container_resource_status) == {"init", "main"}
        assert plugin.calls[2:] == [("PreStartContainer", held["init"]), ("PreStartContainer", held["main"])]
    finally:
        await manager.stop()


async def test_no_pre_start_asked_no_call() -> None:
    """A pod whose devices come from no preStartRequired plugin starts without a call out."""

    plugin = PlainPlugin()
    manager = DeviceManager(dialer=plugin, checkpoint=Checkpoint(StateDB.memory()), clock=FakeClock(),
                            device_plugins_dir=Path("/dp"), numa_nodes=(0, 1))
    await manager.start()
    try:
        await manager.register("v1beta1", "gpu.sock", GPU)
        await settle()
        starter = DeviceAdmitter(manager, _no_health)
        pod = Pod(uid="u1", name="p", namespace="ns", containers=(Container("main", limits={GPU: 1}),))
        await starter.allocate(pod, pod.containers[0], TopologyHint(None, False))
        ready = starter.prepare_now(pod)
        assert ready is not None and ready.ready
        assert [c for c, _ in plugin.calls] == ["Allocate"]
    finally:
        await manager.stop()


async def test_no_device_health_in_status_where_the_release_writes_none() -> None:
    """ResourceHealthStatus (beta, on from 1.36): a 1.34 or 1.35 kubelet writes no
    allocatedResourcesStatus for device-plugin devices (kubelet_pods.go calls
    UpdateAllocatedResourcesStatus only with the gate on)."""
    from tests.unit.test_config_versions import load

    for version, listed in (("1.35", False), ("1.36", True)):
        manager = DeviceManager(dialer=PlainPlugin(), checkpoint=Checkpoint(StateDB.memory()), clock=FakeClock(),
                                device_plugins_dir=Path("/dp"), numa_nodes=(0, 1))
        await manager.start()
        try:
            await manager.register("v1beta1", "gpu.sock", GPU)
            await settle()
            pushed: list[str] = []

            async def on_health(uid: str, container: str, statuses: tuple[ResourceStatus, ...],
                                into: list[str] = pushed) -> None:
                into.append(container)

            starter = DeviceAdmitter(manager, on_health,
                                     health_status=load(version).kubelet.gate("ResourceHealthStatus"))
            pod = Pod(uid="u1", name="p", namespace="ns", containers=(Container("main", limits={GPU: 1}),))
            assert (await starter.admit(pod, [])).admit
            await settle()
            ready = starter.prepare_now(pod)
            assert ready is not None and bool(ready.container_resource_status) is listed
            assert bool(pushed) is listed, version
        finally:
            await manager.stop()


async def test_a_started_container_is_not_started_again() -> None:
    """The init container started (its PreStartContainer succeeded), the app container's failed: the
    next attempt calls the plugin for the app container alone, as the kubelet's next sync starts only
    what has not started; regular containers are each tried even when one of them fails."""
    plugin = RecordingPlugin()
    manager = DeviceManager(dialer=plugin, checkpoint=Checkpoint(StateDB.memory()), clock=FakeClock(),
                            device_plugins_dir=Path("/dp"), numa_nodes=(0, 1))
    await manager.start()
    try:
        await manager.register("v1beta1", "gpu.sock", GPU)
        await settle()
        starter = DeviceAdmitter(manager, _no_health)
        pod = Pod(uid="u1", name="p", namespace="ns",
                  init_containers=(Container("init", limits={GPU: 1}),),
                  containers=(Container("a", limits={GPU: 1}), Container("b", limits={GPU: 1})))
        for container in pod.all_containers():
            await starter.allocate(pod, container, TopologyHint(None, False))
        del plugin.calls[:]

        failing = {"a", "b"}
        original = manager.pre_start_container

        async def pre_start(uid: str, container: str) -> None:
            plugin.calls.append(("PreStartContainer", (container,)))
            if container in failing:
                raise PluginCallError("rpc error: code = Internal desc = busy")
            await original(uid, container)

        manager.pre_start_container = pre_start  # type: ignore[method-assign, assignment]  # our own class, not a library
        waiting = await starter.prepare(pod)
        assert set(waiting.failed_containers) == {"a", "b"}
        assert [n for _, (n,) in plugin.calls if n in {"init", "a", "b"}] == ["init", "a", "b"]
        failing = {"b"}
        del plugin.calls[:]
        waiting = await starter.prepare(pod)
        assert set(waiting.failed_containers) == {"b"}
        assert [n for _, (n,) in plugin.calls if n in {"init", "a", "b"}] == ["a", "b"]
        failing = set()
        del plugin.calls[:]
        assert (await starter.prepare(pod)).ready
        assert [n for _, (n,) in plugin.calls if n in {"init", "a", "b"}] == ["b"]
    finally:
        await manager.stop()
