"""Scrape-time collectors: node capacity, allocatable, reservations, reserved usage, signals, pods,
and devices by health per device-plugin resource.

Nothing here mirrors state into gauges. Each scrape calls the snapshot function the
daemon passes in and turns the NodeSnapshot it returns into metric families, so the
figures are exactly the managers' at that instant. NodeSnapshot is this module's own
small input type: the daemon adapts the container manager's and pod manager's
snapshots to it, and the device manager's summaries to DeviceFigures. Values arrive in
canonical units (cpu in millicores, memory and storage in bytes, the rest counts) and
leave in Prometheus base units (cpu in cores).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

CPU = "cpu"


@dataclass(frozen=True)
class ReservedGroupUsage:
    """Measured usage of one reserved group's processes (kube-reserved or system-reserved)."""

    group: str
    cpu_seconds: float  # cumulative cpu time of the group's processes
    memory_bytes: int  # summed rss
    processes: int = 0
    cpu_cores: float | None = None  # rate since the previous measurement, when known


@dataclass(frozen=True)
class NodeSnapshot:
    """What the collectors read on each scrape (canonical units, see the module docstring)."""

    capacity: Mapping[str, int] = field(default_factory=dict)
    allocatable: Mapping[str, int] = field(default_factory=dict)
    # group (kube-reserved, system-reserved, eviction-hard) -> resource -> reserved amount
    reserved: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    reserved_usage: tuple[ReservedGroupUsage, ...] = ()
    # eviction signal (memory.available, nodefs.available, nodefs.inodesFree, ...) -> observed value
    signals: Mapping[str, int] = field(default_factory=dict)
    pods_by_phase: Mapping[str, int] = field(default_factory=dict)


def base_units(resource: str, value: int) -> float:
    """Canonical integer -> Prometheus base unit: millicores become cores, the rest is unchanged."""
    return value / 1000.0 if resource == CPU else float(value)


class NodeCollector(Collector):
    """Turns one NodeSnapshot per scrape into metric families."""

    def __init__(self, snapshot: Callable[[], NodeSnapshot]) -> None:
        self._snapshot = snapshot

    def describe(self) -> list[Metric]:
        # Describing without calling the snapshot keeps registration free of side effects.
        return list(self._families(NodeSnapshot()))

    def collect(self) -> Iterator[Metric]:
        try:
            snap = self._snapshot()
        except Exception:
            logger.exception("node snapshot failed; node metrics left out of this scrape")
            return iter(())
        return self._families(snap)

    def _families(self, snap: NodeSnapshot) -> Iterator[Metric]:
        capacity = GaugeMetricFamily(
            "nodeagent_node_capacity",
            "Node capacity per resource (cpu in cores, memory and storage in bytes, others counts).",
            labels=["resource"],
        )
        for resource, value in sorted(snap.capacity.items()):
            capacity.add_metric([resource], base_units(resource, value))
        yield capacity
        allocatable = GaugeMetricFamily(
            "nodeagent_node_allocatable",
            "Node allocatable per resource: capacity minus reservations and hard eviction "
            "(cpu in cores, memory and storage in bytes, others counts).",
            labels=["resource"],
        )
        for resource, value in sorted(snap.allocatable.items()):
            allocatable.add_metric([resource], base_units(resource, value))
        yield allocatable
        reserved = GaugeMetricFamily(
            "nodeagent_node_reserved",
            "Reserved amount per group (kube-reserved, system-reserved, eviction-hard) and resource.",
            labels=["group", "resource"],
        )
        for group, resources in sorted(snap.reserved.items()):
            for resource, value in sorted(resources.items()):
                reserved.add_metric([group, resource], base_units(resource, value))
        yield reserved
        cpu_seconds = CounterMetricFamily(
            "nodeagent_reserved_cpu_seconds",
            "Cumulative cpu time of the processes in a reserved group.",
            labels=["group"],
        )
        cpu_cores = GaugeMetricFamily(
            "nodeagent_reserved_cpu_usage_cores",
            "Cpu usage rate of the processes in a reserved group, in cores.",
            labels=["group"],
        )
        memory = GaugeMetricFamily(
            "nodeagent_reserved_memory_bytes",
            "Resident memory of the processes in a reserved group.",
            labels=["group"],
        )
        processes = GaugeMetricFamily(
            "nodeagent_reserved_processes", "Processes found in a reserved group.", labels=["group"]
        )
        for usage in snap.reserved_usage:
            cpu_seconds.add_metric([usage.group], usage.cpu_seconds)
            if usage.cpu_cores is not None:
                cpu_cores.add_metric([usage.group], usage.cpu_cores)
            memory.add_metric([usage.group], float(usage.memory_bytes))
            processes.add_metric([usage.group], float(usage.processes))
        yield from (cpu_seconds, cpu_cores, memory, processes)
        signals = GaugeMetricFamily(
            "nodeagent_node_eviction_signal",
            "Observed value of a node eviction signal (bytes; inodes for *.inodesFree).",
            labels=["signal"],
        )
        for signal, value in sorted(snap.signals.items()):
            signals.add_metric([signal], float(value))
        yield signals
        pods = GaugeMetricFamily("nodeagent_pods", "Pods known to the node by phase.", labels=["phase"])
        for phase, count in sorted(snap.pods_by_phase.items()):
            pods.add_metric([phase], float(count))
        yield pods


@dataclass(frozen=True)
class DeviceFigures:
    """One device-plugin resource as the device collector reads it on each scrape."""

    resource: str
    healthy: int
    unhealthy: int  # includes every device of a plugin that is gone (grace period)
    allocated: int
    registered: bool  # a plugin stream is live


class DeviceCollector(Collector):
    """nodeagent_devices{resource_name, health} and friends, from the device manager at scrape time."""

    def __init__(self, figures: Callable[[], Sequence[DeviceFigures]]) -> None:
        self._figures = figures

    def describe(self) -> list[Metric]:
        return list(self._families(()))

    def collect(self) -> Iterator[Metric]:
        try:
            figures = tuple(self._figures())
        except Exception:
            logger.exception("device figures failed; device metrics left out of this scrape")
            return iter(())
        return self._families(figures)

    def _families(self, figures: Sequence[DeviceFigures]) -> Iterator[Metric]:
        devices = GaugeMetricFamily(
            "nodeagent_devices",
            "Devices of a device-plugin resource by health (Healthy, Unhealthy; a plugin that is gone "
            "counts all its devices Unhealthy until its grace period ends).",
            labels=["resource_name", "health"],
        )
        allocated = GaugeMetricFamily(
            "nodeagent_devices_allocated",
            "Devices of a device-plugin resource held by admitted pods.",
            labels=["resource_name"],
        )
        registered = GaugeMetricFamily(
            "nodeagent_device_plugin_registered",
            "1 while the resource's device plugin is registered and its ListAndWatch stream live, else 0.",
            labels=["resource_name"],
        )
        for f in sorted(figures, key=lambda f: f.resource):
            devices.add_metric([f.resource, "Healthy"], float(f.healthy))
            devices.add_metric([f.resource, "Unhealthy"], float(f.unhealthy))
            allocated.add_metric([f.resource], float(f.allocated))
            registered.add_metric([f.resource], 1.0 if f.registered else 0.0)
        yield from (devices, allocated, registered)


def register_device_collector(
    registry: CollectorRegistry, figures: Callable[[], Sequence[DeviceFigures]]
) -> DeviceCollector:
    """Register the device collector on `registry` (the daemon passes the device manager's summaries)."""
    collector = DeviceCollector(figures)
    registry.register(collector)
    return collector


def register_collectors(
    registry: CollectorRegistry,
    snapshot: Callable[[], NodeSnapshot],
    *,
    process: bool = True,
) -> NodeCollector:
    """Register the node collector and prometheus_client's ProcessCollector on `registry`."""
    collector = NodeCollector(snapshot)
    registry.register(collector)
    if process:
        ProcessCollector(registry=registry)
    return collector
