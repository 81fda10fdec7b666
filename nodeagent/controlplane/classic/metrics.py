"""Prometheus instruments of the classic DRA flow, on the daemon's registry (never the global one).

- nodeagent_dra_pod_scheduling_contexts: PodSchedulingContexts in flight, read from the
  store at scrape time (a gauge that mirrors state, so nothing to keep in sync);
- nodeagent_dra_classic_operations_total{controller, operation, result}: allocations,
  deallocations and unsuitable-node reports by the driver controllers.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from nodeagent.controlplane.classic.common import PSC
from nodeagent.store import ObjectStore


class ClassicMetrics:
    def __init__(self, registry: CollectorRegistry | None, store: ObjectStore) -> None:
        self.in_flight = Gauge(
            "nodeagent_dra_pod_scheduling_contexts",
            "PodSchedulingContexts in flight (pods negotiating with a DRA control-plane controller).",
            registry=registry,
        )
        self.in_flight.set_function(lambda: float(store.count(PSC)))
        self.operations = Counter(
            "nodeagent_dra_classic_operations",
            "Operations of DRA control-plane controllers by controller, operation and result.",
            ["controller", "operation", "result"],
            registry=registry,
        )

    def count(self, controller: str, operation: str, result: str) -> None:
        self.operations.labels(controller=controller, operation=operation, result=result).inc()
