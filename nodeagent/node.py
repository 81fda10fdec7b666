"""The node as the admin API, metrics and /stats/summary see it: the managers' views merged.

The container manager knows native resources (cpu, memory, storage, hugepages, pods);
the device manager knows extended resources. This adapter merges them into one
NodeResources for admission and node status, and turns the managers' snapshots into
the metrics and summary shapes, so neither subsystem imports the other.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from nodeagent.cm.eviction.decision import pod_usage
from nodeagent.cm.manager import ContainerManager
from nodeagent.devices.manager import DeviceManager
from nodeagent.devices.model import ResourceAllocation, ResourceSummary
from nodeagent.devices.plugin_client import ControlClient
from nodeagent.dra.registry import DRARegistry
from nodeagent.errors import ValidationError
from nodeagent.host.model import HostProbe
from nodeagent.metrics import collectors
from nodeagent.metrics import summary as sm
from nodeagent.pods.manager import PodManager
from nodeagent.pods.ports import NodeResources


class NodeView:
    def __init__(self, cm: ContainerManager, devices: DeviceManager) -> None:
        self._cm = cm
        self._devices = devices

    def node_resources(self) -> NodeResources:
        native = self._cm.node_resources()
        ext_capacity, ext_allocatable = self._devices.extended_resources()
        return NodeResources(
            capacity={**native.capacity, **ext_capacity},
            allocatable={**native.allocatable, **ext_allocatable},
            labels=native.labels,
            conditions=native.conditions,
        )

    def metrics_snapshot(self, pods: PodManager) -> collectors.NodeSnapshot:
        snap = self._cm.snapshot()
        res = self.node_resources()
        phases = Counter(v.status.phase for v in pods.list())
        return collectors.NodeSnapshot(
            capacity=res.capacity,
            allocatable=res.allocatable,
            reserved=snap.reserved,
            reserved_usage=tuple(
                collectors.ReservedGroupUsage(
                    group=u.group,
                    cpu_seconds=u.cpu_seconds,
                    memory_bytes=u.memory_bytes,
                    processes=u.processes,
                    cpu_cores=None if u.cpu_millicores is None else u.cpu_millicores / 1000,
                )
                for u in snap.reserved_usage
            ),
            signals={name: obs.available for name, obs in snap.signals.items()},
            pods_by_phase=dict(phases),
        )

    def stats_provider(self, pods: PodManager, probe: HostProbe) -> _Stats:
        return _Stats(self._cm, pods, probe)


class _Stats:
    """StatsProvider for /stats/summary: node figures from the probe, pods from their usage annotations."""

    def __init__(self, cm: ContainerManager, pods: PodManager, probe: HostProbe) -> None:
        self._cm = cm
        self._pods = pods
        self._probe = probe

    def node_stats(self) -> sm.NodeStats:
        snap = self._cm.snapshot()
        mem_obs = snap.signals.get("memory.available")
        mem_capacity = snap.capacity.get("memory", 0)
        available = mem_obs.available if mem_obs else 0
        fs = self._probe.filesystem(self._cm.cfg.agent.root_dir)
        node_fs = snap.signals.get("nodefs.available")
        inodes = snap.signals.get("nodefs.inodesFree")
        pods = []
        pod_memory = 0
        for pod in self._pods.active_pods():
            mem = pod_usage(pod, "memory")
            pod_memory += mem
            status = self._pods.status(pod.uid)
            containers = tuple(
                sm.ContainerStats(c.name, sm.CPUStats(0.0, 0.0), sm.MemoryStats(0), status.start_time)
                for c in pod.containers
            )
            pods.append(sm.PodStats(pod.name, pod.namespace, pod.uid, status.start_time, containers,
                                    sm.CPUStats(0.0, 0.0), sm.MemoryStats(mem)))
        system = [
            sm.ContainerStats(sm.PODS, sm.CPUStats(0.0, 0.0), sm.MemoryStats(pod_memory)),
            *(
                sm.ContainerStats(
                    u.group,
                    sm.CPUStats(u.cpu_seconds, None if u.cpu_millicores is None else u.cpu_millicores / 1000),
                    sm.MemoryStats(u.memory_bytes, u.memory_bytes, u.memory_bytes),
                )
                for u in snap.reserved_usage
            ),
        ]
        used = max(0, mem_capacity - available)
        fs_capacity = node_fs.capacity if node_fs else fs.capacity
        agent = self._cm.cfg.agent
        own = 0 if fs_capacity == fs.capacity else self._probe.disk_usage((agent.root_dir, agent.state_dir))
        pods_storage = sum(pod_usage(p, "ephemeral-storage") for p in self._pods.active_pods())
        return sm.NodeStats(
            cpu=sm.CPUStats(self._probe.cpu_seconds()),
            memory=sm.MemoryStats(used, used, None, available),
            fs=sm.FsStats(
                capacity_bytes=fs_capacity,
                available_bytes=node_fs.available if node_fs else fs.available,
                inodes=inodes.capacity if inodes else fs.inodes,
                inodes_free=inodes.available if inodes else fs.inodes_free,
                used_bytes=sm.rootfs_used_bytes(fs_capacity, fs.capacity, fs.used, own, pods_storage),
            ),
            system_containers=tuple(system),
            pods=tuple(pods),
        )


class DeviceHealthRouter:
    """`nodeagent device set-health` for both kinds of device: a DRA driver name with
    "POOL/DEVICE" goes to that driver's control socket (`<dra.sock>.ctl`, nodeagent's fake
    drivers serve it); anything else is a device plugin resource for the device manager."""

    def __init__(self, devices: DeviceManager, dra: DRARegistry | None) -> None:
        self._devices = devices
        self._dra = dra
        self._control = ControlClient()

    async def set_device_health(self, resource: str, device_id: str, health: str) -> None:
        drivers = self._dra.drivers() if self._dra is not None else {}
        info = drivers.get(resource)
        if info is None:
            await self._devices.set_device_health(resource, device_id, health)
            return
        if device_id.count("/") != 1:
            raise ValidationError("device", f'a DRA device is named "POOL/DEVICE", got "{device_id}"')
        await self._control.set_health(Path(f"{info.endpoint}.ctl"), device_id, health)

    def pod_allocations(self, pod_uid: str) -> Mapping[str, Mapping[str, ResourceAllocation]]:
        return self._devices.pod_allocations(pod_uid)

    def snapshot(self) -> Sequence[ResourceSummary]:
        return self._devices.snapshot()
