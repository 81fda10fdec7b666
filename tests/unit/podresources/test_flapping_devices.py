"""pod-resources over the real DeviceManager while its plugin flaps health: List's answer is
reused (a device's health is not part of it), GetAllocatableResources follows every change, and
an identical snapshot leaves both answers as they were."""

from __future__ import annotations

from pathlib import Path

from nodeagent.apis.podresources.v1 import api_pb2 as v1
from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.manager import DeviceManager
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.podresources.fakes import VersionedResources
from nodeagent.podresources.lister import PodResourcesLister
from nodeagent.podresources.service import PodResourcesV1
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock
from tests.unit.devices.test_manager_property import GPU, IDS, FakePlugin, settle


def _allocatable(answer: object) -> list[str]:
    msg = answer if isinstance(answer, v1.AllocatableResourcesResponse) else (
        v1.AllocatableResourcesResponse.FromString(answer))  # type: ignore[arg-type]
    return sorted(i for d in msg.devices for i in d.device_ids)


async def test_health_flaps_leave_list_cached_and_allocatable_exact() -> None:
    from prometheus_client import CollectorRegistry

    plugin, others = FakePlugin(), VersionedResources()
    manager = DeviceManager(dialer=plugin, checkpoint=Checkpoint(StateDB.memory()), clock=FakeClock(),
                            device_plugins_dir=Path("/dp"), numa_nodes=(0, 1))
    await manager.start()
    try:
        await manager.register("v1beta1", "gpu.sock", GPU)
        await settle()
        pod = Pod(uid="u1", name="holder", namespace="ns", containers=(Container("c", limits={GPU: 2}),))
        assert (await manager.admit(pod, [])).admit
        others.add_pod(pod)
        server = PodResourcesV1(PodResourcesLister(others, manager, others, others, others),
                                Instruments(CollectorRegistry()))
        listed = await server.List(v1.ListPodResourcesRequest(), None)
        assert _allocatable(await server.GetAllocatableResources(None, None)) == IDS
        for n in range(6):  # flap a free and a held device
            plugin.health["gpu-4" if n % 2 else "gpu-0"] = "Unhealthy" if n % 4 < 2 else "Healthy"
            plugin.push()
            await settle()
            again = await server.List(v1.ListPodResourcesRequest(), None)
            assert again is listed  # the encoded answer itself, not rebuilt
            healthy = [i for i in IDS if plugin.health[i] == "Healthy"]
            assert _allocatable(await server.GetAllocatableResources(None, None)) == healthy
        before = await server.GetAllocatableResources(None, None)
        plugin.push()  # the same snapshot again
        await settle()
        assert await server.GetAllocatableResources(None, None) is before
        assert await server.List(v1.ListPodResourcesRequest(), None) is listed
    finally:
        await manager.stop()
