"""Scrape-time node collectors: values read from the snapshot on each scrape, in base units."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.metrics.collectors import NodeSnapshot, ReservedGroupUsage, base_units, register_collectors


def test_values_follow_the_snapshot_at_scrape_time(registry: CollectorRegistry) -> None:
    state = {"memory": 31033655296}
    register_collectors(registry, lambda: NodeSnapshot(
        capacity={"cpu": 4000, "memory": 32 << 30, "example.com/gpu": 2},
        allocatable={"cpu": 3500, "memory": state["memory"]},
        reserved={"kube-reserved": {"cpu": 500, "memory": 2 << 30}},
        reserved_usage=(ReservedGroupUsage("kube-reserved", 12.5, 1 << 20, 3, 0.1),
                        ReservedGroupUsage("system-reserved", 1.0, 10, 1)),
        signals={"memory.available": 5 << 30, "nodefs.inodesFree": 1000},
        pods_by_phase={"Running": 4, "Pending": 1},
    ), process=False)
    get = registry.get_sample_value
    assert get("nodeagent_node_allocatable", {"resource": "memory"}) == 31033655296
    assert get("nodeagent_node_allocatable", {"resource": "cpu"}) == 3.5
    assert get("nodeagent_node_capacity", {"resource": "example.com/gpu"}) == 2
    assert get("nodeagent_node_reserved", {"group": "kube-reserved", "resource": "cpu"}) == 0.5
    assert get("nodeagent_reserved_cpu_seconds_total", {"group": "kube-reserved"}) == 12.5
    assert get("nodeagent_reserved_cpu_usage_cores", {"group": "kube-reserved"}) == 0.1
    assert get("nodeagent_reserved_cpu_usage_cores", {"group": "system-reserved"}) is None  # rate unknown yet
    assert get("nodeagent_reserved_memory_bytes", {"group": "kube-reserved"}) == 1 << 20
    assert get("nodeagent_reserved_processes", {"group": "kube-reserved"}) == 3
    assert get("nodeagent_node_eviction_signal", {"signal": "nodefs.inodesFree"}) == 1000
    assert get("nodeagent_pods", {"phase": "Running"}) == 4
    state["memory"] = 1
    assert get("nodeagent_node_allocatable", {"resource": "memory"}) == 1  # no mirrored gauge


def test_failing_snapshot_leaves_node_metrics_out(registry: CollectorRegistry) -> None:
    def broken() -> NodeSnapshot:
        raise RuntimeError("boom")

    register_collectors(registry, broken)
    assert registry.get_sample_value("nodeagent_node_allocatable", {"resource": "memory"}) is None
    assert registry.get_sample_value("process_virtual_memory_bytes") is not None


def test_registration_does_not_call_the_snapshot(registry: CollectorRegistry) -> None:
    calls: list[int] = []

    def snap() -> NodeSnapshot:
        calls.append(1)
        return NodeSnapshot()

    register_collectors(registry, snap, process=False)
    assert calls == []


@pytest.mark.parametrize(("resource", "value", "expected"),
                         [("cpu", 250, 0.25), ("memory", 1024, 1024.0), ("pods", 110, 110.0)])
def test_base_units(resource: str, value: int, expected: float) -> None:
    assert base_units(resource, value) == expected
