"""/metrics serves no `_created` series (as the kubelet), through a filter on this registry only."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from nodeagent.metrics.http import WithoutCreated


def registry() -> CollectorRegistry:
    reg = CollectorRegistry()
    Counter("kubelet_evictions", "Evictions.", ["eviction_signal"], registry=reg).labels("memory.available").inc()
    Histogram("op_duration_seconds", "Latency.", registry=reg).observe(0.1)
    Gauge("thing_created", "A gauge whose own name ends in _created stays.", registry=reg).set(3)
    return reg


def test_created_series_left_out_of_both_formats() -> None:
    reg = registry()
    for encode in (generate_latest, generate_openmetrics):
        text = encode(WithoutCreated(reg)).decode()
        names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if not line.startswith("#")}
        assert "kubelet_evictions_total" in names and "op_duration_seconds_count" in names
        assert "kubelet_evictions_created" not in names and "op_duration_seconds_created" not in names
        assert "thing_created" in names


def test_registry_itself_unchanged() -> None:
    """No process-wide switch: the registry still has the samples, other exporters are unaffected."""
    reg = registry()
    generate_latest(WithoutCreated(reg))
    assert reg.get_sample_value("kubelet_evictions_created", {"eviction_signal": "memory.available"}) is not None
    assert "kubelet_evictions_created" in generate_latest(reg).decode()
