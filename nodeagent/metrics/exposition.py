"""Counters named exactly as the kubelet names them, and the text exposition that keeps the names.

Why: prometheus_client always exports a counter as `<name>_total` (its Counter adds the suffix to
the samples, its text encoder to HELP and TYPE), but the kubelet's counters are named by
component-base as given, and several have no `_total`: `kubelet_evictions`,
`kubelet_pod_resources_endpoint_requests_list`, `..._requests_get_allocatable`,
`..._requests_get`, `..._errors_list`, `..._errors_get_allocatable`, `..._errors_get`
(pkg/kubelet/metrics/metrics.go). A dashboard or alert written against a kubelet must find
the same series here. So:

- `NamedCounter` is a counter (labels(...).inc(), like prometheus_client's) whose samples carry
  its name as given;
- `text` writes the Prometheus text format (0.0.4) with each counter family's HELP and TYPE
  named as its samples are (client_golang's behaviour): `kubelet_evictions` for a NamedCounter,
  `<name>_total` for prometheus_client's own counters, exactly as before for everything else;
- `for_openmetrics` gives a NamedCounter's samples the `_total` OpenMetrics requires of every
  counter sample, as client_golang's OpenMetrics encoder does for such counters.

`promtool check metrics` lints a counter without `_total` ("counter metrics should have "_total"
suffix"); the kubelet's own exposition gets the same finding for these names, which is the
price of matching it (tests/integration/test_prometheus.py accepts exactly those).
Must not: hold state beyond the counts, or touch the global REGISTRY.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class NamedMetric(Metric):
    """A family whose sample names are its own name (no suffix added by any encoder)."""


class _Child:
    def __init__(self, parent: NamedCounter, key: tuple[str, ...]) -> None:
        self._parent, self._key = parent, key

    def inc(self, amount: float = 1.0) -> None:
        self._parent.add(self._key, amount)


class NamedCounter(Collector):
    """A monotonic counter exported under `name` exactly (no `_total` added)."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = (),
                 registry: CollectorRegistry | None = None) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._values: dict[tuple[str, ...], float] = {} if self.labelnames else {(): 0.0}
        self._lock = threading.Lock()  # gRPC servers may count from their own threads
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str, **named: str) -> _Child:
        if named:
            values = tuple(named[n] for n in self.labelnames)
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name}: expected {len(self.labelnames)} label values, got {len(values)}")
        key = tuple(str(v) for v in values)
        with self._lock:  # the series exists (at 0) once named, as with client_golang's WithLabelValues
            self._values.setdefault(key, 0.0)
        return _Child(self, key)

    def inc(self, amount: float = 1.0) -> None:
        if self.labelnames:
            raise ValueError(f"{self.name}: a labelled counter is counted through labels(...)")
        self.add((), amount)

    def add(self, key: tuple[str, ...], amount: float) -> None:
        if amount < 0:
            raise ValueError("counters can only be incremented by non-negative amounts")
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def collect(self) -> Iterator[Metric]:
        family = NamedMetric(self.name, self.documentation, "counter")
        with self._lock:
            values = sorted(self._values.items())
        for key, value in values:
            family.add_sample(self.name, dict(zip(self.labelnames, key, strict=True)), value)
        yield family

    def describe(self) -> Iterator[Metric]:
        yield NamedMetric(self.name, self.documentation, "counter")


class ForOpenMetrics(Collector):
    """`source`'s families, a NamedCounter's samples renamed `<name>_total` (OpenMetrics wants it)."""

    def __init__(self, source: Collector) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        for family in self._source.collect():
            if isinstance(family, NamedMetric) and family.type == "counter":
                copy = Metric(family.name, family.documentation, family.type, family.unit)
                for s in family.samples:
                    copy.add_sample(s.name + "_total", s.labels, s.value, s.timestamp, s.exemplar)
                yield copy
            else:
                yield family


def for_openmetrics(source: Collector) -> Collector:
    return ForOpenMetrics(source)


_TEXT_TYPES = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram", "unknown": "untyped"}


def text(source: Collector) -> bytes:
    """The Prometheus text format (version 0.0.4) of `source`'s families."""
    out: list[str] = []
    for family in source.collect():
        name = _family_name(family)
        kind = _TEXT_TYPES.get(family.type, family.type)
        doc = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {doc}\n# TYPE {name} {kind}\n")
        extra: dict[str, list[str]] = {}
        for s in family.samples:
            line = _sample_line(s.name, s.labels, s.value, s.timestamp)
            suffix = next((x for x in ("_created", "_gsum", "_gcount") if s.name == family.name + x), None)
            if suffix is None:
                out.append(line)
            else:  # OpenMetrics-only samples go into a gauge family of their own, as prometheus_client does
                extra.setdefault(suffix, []).append(line)
        for suffix, lines in sorted(extra.items()):
            out.append(f"# HELP {family.name}{suffix} {doc}\n# TYPE {family.name}{suffix} gauge\n")
            out.extend(lines)
    return "".join(out).encode()


def _family_name(family: Metric) -> str:
    if family.type == "counter":
        return family.name if isinstance(family, NamedMetric) else family.name + "_total"
    if family.type == "info":
        return family.name + "_info"
    return family.name


def _sample_line(name: str, labels: dict[str, str], value: float, timestamp: Any) -> str:
    pairs = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
    stamp = f" {int(float(timestamp) * 1000):d}" if timestamp is not None else ""
    number: str = floatToGoString(value)  # type: ignore[no-untyped-call]
    return f"{name}{{{pairs}}} {number}{stamp}\n" if pairs else f"{name} {number}{stamp}\n"


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")

