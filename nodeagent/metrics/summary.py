"""Build /stats/summary in the kubelet Summary API shape (stats/v1alpha1) from injected figures.

The figures come from a StatsProvider the daemon writes over the host probe (psutil
lives only in nodeagent/host/probe.py) and the pod manager's simulated usage; the
daemon's own cpu time and rss (the "kubelet" system container) come from a callable.
This module only shapes JSON: camelCase keys, RFC 3339 times, integer nanocores,
inodesUsed derived, usedBytes of the node's rootfs by the kubelet's rule (rootfs_used_bytes).
It keeps the previous cpu sample per container so that usageNanoCores is a rate even when
a provider only knows cumulative cpu time.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from nodeagent.util.clock import Clock

KUBELET = "kubelet"
PODS = "pods"
SYSTEM_RESERVED = "system-reserved"
KUBE_RESERVED = "kube-reserved"


@dataclass(frozen=True)
class CPUStats:
    usage_core_seconds: float  # cumulative cpu time
    usage_cores: float | None = None  # current rate, if the provider knows it


@dataclass(frozen=True)
class MemoryStats:
    usage_bytes: int
    working_set_bytes: int | None = None  # defaults to usage_bytes
    rss_bytes: int | None = None
    available_bytes: int | None = None


@dataclass(frozen=True)
class FsStats:
    capacity_bytes: int
    available_bytes: int
    inodes: int
    inodes_free: int
    used_bytes: int | None = None  # None: capacity - available


def rootfs_used_bytes(
    capacity: int, host_capacity: int, host_used: int, own_bytes: int, pods_bytes: int
) -> int:
    """usedBytes of the node's rootfs (the filesystem of rootDir), clamped to [0, capacity].

    The kubelet reports cadvisor's figure for it: statvfs capacity - free, everything on the
    filesystem. That is what a node on the host's disk reports too (host_used), plus the pods'
    simulated usage (nodeagent.dev/usage-ephemeral-storage), which nothing writes. When the
    node profile gives the node a disk of another size (capacity != host_capacity), the
    host's figures say nothing about it (as for the eviction signals, cm/manager.py): what that
    disk holds is what the node wrote, its root and state directories (own_bytes), plus the
    pods' simulated usage."""
    base = host_used if capacity == host_capacity else own_bytes
    return max(0, min(capacity, base + pods_bytes))


@dataclass(frozen=True)
class ContainerStats:
    name: str
    cpu: CPUStats
    memory: MemoryStats
    start_time: float | None = None  # wall seconds


@dataclass(frozen=True)
class PodStats:
    name: str
    namespace: str
    uid: str
    start_time: float | None
    containers: tuple[ContainerStats, ...]
    cpu: CPUStats
    memory: MemoryStats


@dataclass(frozen=True)
class NodeStats:
    cpu: CPUStats
    memory: MemoryStats
    fs: FsStats
    # "pods", "system-reserved", "kube-reserved" (the builder adds "kubelet" itself)
    system_containers: tuple[ContainerStats, ...] = ()
    pods: tuple[PodStats, ...] = ()


class StatsProvider(Protocol):
    def node_stats(self) -> NodeStats: ...


SelfUsage = Callable[[], tuple[float, int]]  # (cpu seconds, rss bytes) of the daemon process


def rfc3339(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SummaryBuilder:
    def __init__(
        self,
        node_name: str,
        provider: StatsProvider,
        self_usage: SelfUsage,
        clock: Clock,
        *,
        start_time: float | None = None,
    ) -> None:
        self._node_name = node_name
        self._provider = provider
        self._self_usage = self_usage
        self._clock = clock
        self._start_time = clock.now() if start_time is None else start_time
        self._previous: dict[str, tuple[float, float]] = {}  # key -> (monotonic, cpu seconds)

    def summary(self) -> dict[str, Any]:
        stats = self._provider.node_stats()
        now = self._clock.now()
        stamp = rfc3339(now)
        mono = self._clock.monotonic()
        seen: dict[str, tuple[float, float]] = {}
        cpu_seconds, rss = self._self_usage()
        daemon = ContainerStats(KUBELET, CPUStats(cpu_seconds), MemoryStats(rss, rss, rss), self._start_time)
        system = [
            self._container(f"system/{c.name}", c, stamp, mono, seen)
            for c in (daemon, *stats.system_containers)
        ]
        node: dict[str, Any] = {
            "nodeName": self._node_name,
            "systemContainers": system,
            "startTime": rfc3339(self._start_time),
            "cpu": self._cpu("node", stats.cpu, stamp, mono, seen),
            "memory": self._memory(stats.memory, stamp),
            "fs": {
                "time": stamp,
                "availableBytes": stats.fs.available_bytes,
                "capacityBytes": stats.fs.capacity_bytes,
                "usedBytes": (max(0, stats.fs.capacity_bytes - stats.fs.available_bytes)
                              if stats.fs.used_bytes is None else stats.fs.used_bytes),
                "inodesFree": stats.fs.inodes_free,
                "inodes": stats.fs.inodes,
                "inodesUsed": max(0, stats.fs.inodes - stats.fs.inodes_free),
            },
        }
        pods = []
        for pod in stats.pods:
            key = f"pod/{pod.uid}"
            entry: dict[str, Any] = {
                "podRef": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                "startTime": rfc3339(pod.start_time if pod.start_time is not None else now),
                "containers": [
                    self._container(f"{key}/{c.name}", c, stamp, mono, seen) for c in pod.containers
                ],
                "cpu": self._cpu(key, pod.cpu, stamp, mono, seen),
                "memory": self._memory(pod.memory, stamp),
            }
            pods.append(entry)
        self._previous = seen  # forget containers that are gone
        return {"node": node, "pods": pods}

    def _container(
        self, key: str, c: ContainerStats, stamp: str, mono: float, seen: dict[str, tuple[float, float]]
    ) -> dict[str, Any]:
        out: dict[str, Any] = {"name": c.name}
        if c.start_time is not None:
            out["startTime"] = rfc3339(c.start_time)
        out["cpu"] = self._cpu(key, c.cpu, stamp, mono, seen)
        out["memory"] = self._memory(c.memory, stamp)
        return out

    def _cpu(
        self, key: str, cpu: CPUStats, stamp: str, mono: float, seen: dict[str, tuple[float, float]]
    ) -> dict[str, Any]:
        seen[key] = (mono, cpu.usage_core_seconds)
        rate = cpu.usage_cores
        if rate is None:
            before = self._previous.get(key)
            rate = 0.0
            if before is not None and mono > before[0]:
                rate = max(0.0, (cpu.usage_core_seconds - before[1]) / (mono - before[0]))
        return {
            "time": stamp,
            "usageNanoCores": round(rate * 1e9),
            "usageCoreNanoSeconds": round(cpu.usage_core_seconds * 1e9),
        }

    @staticmethod
    def _memory(mem: MemoryStats, stamp: str) -> dict[str, Any]:
        out: dict[str, Any] = {"time": stamp}
        if mem.available_bytes is not None:
            out["availableBytes"] = mem.available_bytes
        out["usageBytes"] = mem.usage_bytes
        working_set = mem.working_set_bytes
        out["workingSetBytes"] = working_set if working_set is not None else mem.usage_bytes
        if mem.rss_bytes is not None:
            out["rssBytes"] = mem.rss_bytes
        return out
