"""The control plane's Prometheus instruments, on the registry the daemon passes in.

One responsibility: name and create the metrics of the claim controller and the scheduler
(upstream names where upstream has the metric: resource_controller_create_total,
scheduler_schedule_attempts_total, scheduler_scheduling_attempt_duration_seconds,
scheduler_pending_pods) and collect the state gauges at scrape time from a snapshot
function, so no gauge has to be kept in sync by hand. PodSchedulingContexts in flight are
classic DRA's own gauge (controlplane/classic/metrics.py), registered only when its gate is on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"

_LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


@dataclass(frozen=True)
class Snapshot:
    """State read at scrape time."""

    pending_pods: Mapping[str, int] = field(default_factory=dict)  # queue -> count
    claims: Mapping[str, int] = field(default_factory=dict)  # state -> count


class _Gauges(Collector):
    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        return self._families(self._snapshot())

    def _families(self, snap: Snapshot) -> Iterator[Metric]:
        pending = GaugeMetricFamily(
            "scheduler_pending_pods", "Number of pending pods, by the queue type.", labels=["queue"]
        )
        for queue in ("active", "backoff", "unschedulable", "gated"):
            pending.add_metric([queue], snap.pending_pods.get(queue, 0))
        yield pending
        claims = GaugeMetricFamily(
            "nodeagent_dra_resource_claims", "ResourceClaims by state (pending, allocated, reserved).",
            labels=["state"],
        )
        for state in ("pending", "allocated", "reserved"):
            claims.add_metric([state], snap.claims.get(state, 0))
        yield claims

    def describe(self) -> Iterator[Metric]:
        # The families of an empty snapshot: the registry learns the names, so a second
        # registration of one of them fails at start instead of a second HELP in the exposition.
        return self._families(Snapshot())


class ControlPlaneMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.claim_creates = Counter(
            "resource_controller_create", "Number of ResourceClaims creation requests", registry=registry
        )
        self.claim_create_failures = Counter(
            "resource_controller_create_failures", "Number of ResourceClaims creation request failures",
            registry=registry,
        )
        self.attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result.",
            ["result"],
            registry=registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
            ["result"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.e2e_duration = Histogram(
            "scheduler_pod_scheduling_duration_seconds",
            "E2e latency for a pod being scheduled, from the first attempt to binding.",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.allocator_duration = Histogram(
            "nodeagent_dra_allocator_duration_seconds",
            "Time the structured allocator spent for one scheduling attempt (all nodes tried).",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.first_available_index = Histogram(
            "nodeagent_dra_first_available_index",
            "Index of the firstAvailable subrequest chosen when a claim is allocated.",
            buckets=(0, 1, 2, 3, 4, 5, 6, 7),
            registry=registry,
        )
        self._gauges: _Gauges | None = None

    def register_gauges(self, snapshot: Callable[[], Snapshot]) -> None:
        if self._gauges is None:
            self._gauges = _Gauges(snapshot)
            self.registry.register(self._gauges)

    def unregister_gauges(self) -> None:
        if self._gauges is not None:
            self.registry.unregister(self._gauges)
            self._gauges = None
