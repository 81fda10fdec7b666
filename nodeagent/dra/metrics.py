"""The DRA manager's metrics, with the kubelet's names, on the daemon's registry.

dra_operations_duration_seconds{operation_name,is_error} times each whole per-pod
PrepareResources / UnprepareResources; dra_resource_claims_in_use{driver_name} is collected
at scrape time from the claim cache (no mirrored gauge), with `<any>` as the total across
drivers (always present, 0 included) and only the drivers that have prepared claims, as the
kubelet's claimInfoCollector: a driver with none left drops out instead of lingering at 0.
Help texts are upstream's without the "[ALPHA] " prefix component-base adds (no metric of
ours carries it). The per-call gRPC histogram belongs to the driver client, not here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

PREPARE = "PrepareResources"
UNPREPARE = "UnprepareResources"
ANY_DRIVER = "<any>"


class ClaimsInUseCollector:
    """dra_resource_claims_in_use, read from `snapshot()` -> {driver: claims} and the total."""

    def __init__(self, snapshot: Callable[[], tuple[Mapping[str, int], int]]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        per_driver, total = self._snapshot()
        family = GaugeMetricFamily(
            "dra_resource_claims_in_use",
            "The number of ResourceClaims that are currently in use on the node, by driver name "
            "(driver_name label value) and across all drivers (special value <any> for driver_name). "
            "Note that the sum of all by-driver counts is not the total number of in-use ResourceClaims because "
            "the same ResourceClaim might use devices from different drivers. Instead, use the count for the "
            "<any> driver_name.",
            labels=["driver_name"],
        )
        family.add_metric([ANY_DRIVER], total)
        for driver, count in sorted(per_driver.items()):
            family.add_metric([driver], count)
        yield family


class DRAMetrics:
    def __init__(self, registry: CollectorRegistry,
                 claims_in_use: Callable[[], tuple[Mapping[str, int], int]]) -> None:
        self.operations = Histogram(
            "dra_operations_duration_seconds",
            "Latency histogram in seconds for the duration of handling all ResourceClaims referenced by a pod "
            "when the pod starts or stops.",
            ["operation_name", "is_error"],
            registry=registry,
        )
        registry.register(ClaimsInUseCollector(claims_in_use))

    def observe(self, operation: str, is_error: bool, seconds: float) -> None:
        self.operations.labels(operation_name=operation, is_error="true" if is_error else "false").observe(
            max(seconds, 0.0))
