"""The node as the admin API, metrics and /stats/summary see it: the managers' views merged.

The container manager knows native resources (cpu, memory, storage, hugepages, pods);
the device manager knows extended resources. This adapter merges them into one
NodeResources for admission and node status, and turns the managers' snapshots into
the metrics and summary shapes, so neither subsystem imports the other.
"""

from __future__ import annotations

from collections import Counter

from nodeagent import quantity
from nodeagent.cm.manager import ContainerManager
from nodeagent.devices.manager import DeviceManager
from nodeagent.host.model import HostProbe
from nodeagent.metrics import collectors
from nodeagent.metrics import summary as sm
from nodeagent.objects.pod import ANNOTATION_USAGE_PREFIX
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


def _usage(annotations: dict[str, str] | object, resource: str) -> int:
    if not isinstance(annotations, dict):
        return 0
    text = annotations.get(ANNOTATION_USAGE_PREFIX + resource)
    if text is None:
        return 0
    try:
        return quantity.canonical(resource, text)
    except quantity.QuantityError:
        return 0


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
            mem = _usage(dict(pod.annotations), "memory")
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
        return sm.NodeStats(
            cpu=sm.CPUStats(self._probe.cpu_seconds()),
            memory=sm.MemoryStats(used, used, None, available),
            fs=sm.FsStats(
                capacity_bytes=node_fs.capacity if node_fs else fs.capacity,
                available_bytes=node_fs.available if node_fs else fs.available,
                inodes=inodes.capacity if inodes else fs.inodes,
                inodes_free=inodes.available if inodes else fs.inodes_free,
            ),
            system_containers=tuple(system),
            pods=tuple(pods),
        )
