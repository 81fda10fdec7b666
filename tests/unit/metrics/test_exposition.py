"""Kubelet counters keep the kubelet's names on /metrics; every other family is written as before."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from nodeagent.metrics import exposition
from nodeagent.metrics.exposition import NamedCounter
from nodeagent.metrics.http import WithoutCreated
from nodeagent.metrics.instruments import Instruments

KUBE = "k8s.io/kubernetes@v1.37.2/pkg/kubelet/metrics/metrics.go"


def test_named_counter_is_written_as_given() -> None:
    reg = CollectorRegistry()
    evictions = NamedCounter("kubelet_evictions", "Cumulative number of pod evictions by eviction signal",
                             ["eviction_signal"], registry=reg)
    evictions.labels("memory.available").inc()
    evictions.labels(eviction_signal="memory.available").inc(2)
    text = exposition.text(WithoutCreated(reg)).decode()
    assert text == ("# HELP kubelet_evictions Cumulative number of pod evictions by eviction signal\n"
                    "# TYPE kubelet_evictions counter\n"
                    'kubelet_evictions{eviction_signal="memory.available"} 3.0\n')
    assert reg.get_sample_value("kubelet_evictions", {"eviction_signal": "memory.available"}) == 3
    [family] = text_string_to_metric_families(text)
    assert (family.name, family.type) == ("kubelet_evictions", "counter")


def test_a_named_series_exists_at_zero_once_labelled() -> None:
    reg = CollectorRegistry()
    NamedCounter("kubelet_pod_resources_endpoint_errors_get", "Errors.", ["server_api_version"],
                 registry=reg).labels("v1")
    assert reg.get_sample_value("kubelet_pod_resources_endpoint_errors_get", {"server_api_version": "v1"}) == 0


def test_named_counter_refuses_what_a_counter_refuses() -> None:
    counter = NamedCounter("c", "C.", ["l"])
    with pytest.raises(ValueError):
        counter.labels("a").inc(-1)
    with pytest.raises(ValueError):
        counter.labels("a", "b")
    with pytest.raises(ValueError):
        counter.inc()


def _everything() -> CollectorRegistry:
    """One family of each type prometheus_client writes, as the daemon's registry holds them."""
    reg = CollectorRegistry()
    Counter("requests", "Requests.\nSecond line \\ backslash.", ["code"], registry=reg).labels('a"b\\c\nd').inc()
    Gauge("temperature", "Degrees.", registry=reg).set(21.5)
    Histogram("latency_seconds", "Latency.", ["op"], buckets=(0.1, 1.0), registry=reg).labels("x").observe(0.5)
    Summary("size_bytes", "Sizes.", registry=reg).observe(3)

    class Families:
        def collect(self):  # type: ignore[no-untyped-def]
            cpu = CounterMetricFamily("reserved_cpu_seconds", "Cpu time.", labels=["group"])
            cpu.add_metric(["system"], 1.25)
            gauge = GaugeMetricFamily("inf_gauge", "Infinity.", value=float("inf"))
            info = InfoMetricFamily("build", "Build.", value={"version": "1"})
            return [cpu, gauge, info]

    reg.register(Families())
    return reg


def test_other_families_are_written_exactly_as_prometheus_client_writes_them() -> None:
    reg = _everything()
    assert exposition.text(WithoutCreated(reg)) == generate_latest(WithoutCreated(reg))


def test_openmetrics_gets_total_on_named_counter_samples() -> None:
    """OpenMetrics requires `_total` on counter samples; client_golang adds it to such counters."""
    reg = CollectorRegistry()
    NamedCounter("kubelet_evictions", "Evictions.", ["eviction_signal"], registry=reg).labels("nodefs.available").inc()
    text = generate_openmetrics(exposition.for_openmetrics(WithoutCreated(reg))).decode()
    assert 'kubelet_evictions_total{eviction_signal="nodefs.available"} 1.0' in text
    [family] = [f for f in parse_openmetrics(text)]
    assert (family.name, family.type) == ("kubelet_evictions", "counter")


def _upstream_metrics_go() -> str:
    cache = Path(os.environ.get("GOMODCACHE") or Path.home() / "go" / "pkg" / "mod")
    path = cache / KUBE
    if not path.exists():
        pytest.skip(f"upstream kubelet metrics not in the Go module cache ({path}); "
                    "`go mod download k8s.io/kubernetes@v1.37.2` fetches them")
    return path.read_text()


def test_every_kubelet_counter_has_upstreams_exact_name() -> None:
    """Each kubelet_* counter we export is named as a key of pkg/kubelet/metrics/metrics.go (with
    the `kubelet_` subsystem), `_total` included exactly where upstream's key has it."""
    keys = set(re.findall(r'Key\s*=\s*"([a-z0-9_]+)"', _upstream_metrics_go()))
    reg = CollectorRegistry()
    Instruments(reg)
    exported = [line.split()[2] for line in exposition.text(reg).decode().splitlines()
                if line.startswith("# TYPE kubelet_") and line.endswith(" counter")]
    assert "kubelet_evictions" in exported and "kubelet_pod_resources_endpoint_requests_list" in exported
    for name in exported:
        assert name.removeprefix("kubelet_") in keys, name
