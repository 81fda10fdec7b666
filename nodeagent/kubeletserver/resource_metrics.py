"""/metrics/resource and /metrics/probes of the kubelet endpoint, from the stats summary.

Why: metrics-server and `kubectl top` read /metrics/resource (pkg/kubelet/metrics/collectors/
resource_metrics.go), not /stats/summary: node, pod and container cpu (cumulative core-seconds)
and working set, container start times, and resource_scrape_error, with each sample stamped
with its measurement time. The collector reads the summary at scrape time (the same figures
as /stats/summary); names, help texts (with the stability prefix component-base adds) and
labels are upstream's. /metrics/probes has the prober's families, which have no series on a
node whose pods run no probes, and process_start_time_seconds.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

Summary = Callable[[], Mapping[str, Any]]
_C_LABELS = ["container", "pod", "namespace"]
_P_LABELS = ["pod", "namespace"]


def _time(text: object) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _cpu(stats: Mapping[str, Any]) -> tuple[float, float | None] | None:
    cpu = stats.get("cpu") or {}
    if cpu.get("usageCoreNanoSeconds") is None:
        return None
    return float(cpu["usageCoreNanoSeconds"]) / 1e9, _time(cpu.get("time"))


def _memory(stats: Mapping[str, Any]) -> tuple[float, float | None] | None:
    mem = stats.get("memory") or {}
    if mem.get("workingSetBytes") is None:
        return None
    return float(mem["workingSetBytes"]), _time(mem.get("time"))


class ResourceMetrics(Collector):
    """The resource metrics collector over a summary callable."""

    def __init__(self, summary: Summary) -> None:
        self._summary = summary

    def collect(self) -> Iterator[Metric]:
        node_cpu = CounterMetricFamily("node_cpu_usage_seconds",
                                       "[STABLE] Cumulative cpu time consumed by the node in core-seconds")
        node_mem = GaugeMetricFamily("node_memory_working_set_bytes",
                                     "[STABLE] Current working set of the node in bytes")
        start = GaugeMetricFamily("container_start_time_seconds",
                                  "[STABLE] Start time of the container since unix epoch in seconds", labels=_C_LABELS)
        c_cpu = CounterMetricFamily("container_cpu_usage_seconds",
                                    "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
                                    labels=_C_LABELS)
        c_mem = GaugeMetricFamily("container_memory_working_set_bytes",
                                  "[STABLE] Current working set of the container in bytes", labels=_C_LABELS)
        p_cpu = CounterMetricFamily("pod_cpu_usage_seconds",
                                    "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
                                    labels=_P_LABELS)
        p_mem = GaugeMetricFamily("pod_memory_working_set_bytes", "[STABLE] Current working set of the pod in bytes",
                                  labels=_P_LABELS)
        error = GaugeMetricFamily("resource_scrape_error",
                                  "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise")
        failed = 0.0
        try:
            summary = self._summary()
        except Exception:
            summary, failed = {}, 1.0
        node = summary.get("node") or {}
        if (v := _cpu(node)) is not None:
            node_cpu.add_metric([], v[0], timestamp=v[1])
        if (v := _memory(node)) is not None:
            node_mem.add_metric([], v[0], timestamp=v[1])
        for pod in summary.get("pods") or ():
            ref = pod.get("podRef") or {}
            name, namespace = str(ref.get("name", "")), str(ref.get("namespace", ""))
            for c in pod.get("containers") or ():
                labels = [str(c.get("name", "")), name, namespace]
                started = _time(c.get("startTime"))
                if started is not None and started > 0:
                    start.add_metric(labels, started)
                if (v := _cpu(c)) is not None:
                    c_cpu.add_metric(labels, v[0], timestamp=v[1])
                if (v := _memory(c)) is not None:
                    c_mem.add_metric(labels, v[0], timestamp=v[1])
            if (v := _cpu(pod)) is not None:
                p_cpu.add_metric([name, namespace], v[0], timestamp=v[1])
            if (v := _memory(pod)) is not None:
                p_mem.add_metric([name, namespace], v[0], timestamp=v[1])
        error.add_metric([], failed)
        for family in (node_cpu, node_mem, start, c_cpu, c_mem, p_cpu, p_mem, error):
            if family.samples:
                yield family


class ProcessStart(Collector):
    """process_start_time_seconds, as component-base's RegisterProcessStartTime on the probes registry."""

    def __init__(self, started: float) -> None:
        self._started = started

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("process_start_time_seconds",
                                   "[ALPHA] Start time of the process since unix epoch in seconds.")
        family.add_metric([], self._started)
        yield family
