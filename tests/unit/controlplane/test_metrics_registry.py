"""The control plane's and classic DRA's families share the daemon's registry without a duplicate name.

promtool refused the demo's exposition ("second HELP line for metric name
nodeagent_dra_pod_scheduling_contexts"): the control plane's scrape-time gauges described
themselves as empty, so the registry could not see that classic DRA registers that name too.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from nodeagent.controlplane.classic.metrics import ClassicMetrics
from nodeagent.controlplane.metrics import ControlPlaneMetrics, Snapshot
from nodeagent.store import ObjectStore
from tests.unit.controlplane.test_classic_flow import make_store


@pytest.fixture
def store() -> Iterator[ObjectStore]:
    s = make_store()
    yield s
    s.close()


def help_lines(registry: CollectorRegistry) -> list[str]:
    return [line for line in generate_latest(registry).decode().splitlines() if line.startswith("# HELP ")]


def test_one_help_line_per_family(store: ObjectStore) -> None:
    registry = CollectorRegistry()
    ControlPlaneMetrics(registry).register_gauges(lambda: Snapshot({"active": 1}))
    ClassicMetrics(registry, store)
    helps = help_lines(registry)
    names = [line.split(" ")[2] for line in helps]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert "nodeagent_dra_pod_scheduling_contexts" in names
    assert registry.get_sample_value("scheduler_pending_pods", {"queue": "active"}) == 1.0


def test_scrape_time_gauges_are_described() -> None:
    """A later registration of one of their names fails at registration, not in a scrape."""
    registry = CollectorRegistry()
    ControlPlaneMetrics(registry).register_gauges(Snapshot)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        Gauge("scheduler_pending_pods", "again", registry=registry)
