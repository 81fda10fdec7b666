"""dra_resource_claims_in_use as the kubelet's claimInfoCollector exposes it (pkg/kubelet/cm/dra/claiminfo.go):
prepared claims only, `<any>` always present, only drivers that have prepared claims, upstream's help text."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from prometheus_client import generate_latest

from nodeagent.objects.pod.model import PENDING, RUNNING
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock

from .fakes import FakeClaims, FakeRegistry, Rig, build, claim_doc, claim_pod

GPU = "gpu.example.com"
NET = "net.example.com"
ANY = "<any>"

HELP = (
    "# HELP dra_resource_claims_in_use The number of ResourceClaims that are currently in use on the node, by driver "
    "name (driver_name label value) and across all drivers (special value <any> for driver_name). Note that the sum "
    "of all by-driver counts is not the total number of in-use ResourceClaims because the same ResourceClaim might "
    "use devices from different drivers. Instead, use the count for the <any> driver_name.\n"
    "# TYPE dra_resource_claims_in_use gauge\n"
)


@pytest.fixture
async def rig(fake_clock: FakeClock) -> AsyncIterator[Rig]:
    r = build(fake_clock, StateDB.memory(), FakeRegistry(GPU, NET), FakeClaims())
    await r.dra.start()
    yield r
    await r.close()


def exposition(rig: Rig) -> str:
    """The dra_resource_claims_in_use block of /metrics."""
    text = generate_latest(rig.metrics).decode()
    lines = [ln for ln in text.splitlines(keepends=True) if "dra_resource_claims_in_use" in ln]
    return "".join(lines)


def phase(rig: Rig, name: str) -> str:
    return rig.pods.get("default", name).status.phase


async def test_empty_node_shows_only_any_at_zero_even_with_drivers_registered(rig: Rig) -> None:
    # Registered drivers without prepared claims are not listed (upstream lists only drivers of claims).
    assert exposition(rig) == HELP + 'dra_resource_claims_in_use{driver_name="<any>"} 0.0\n'


async def test_claim_of_two_drivers_counts_once_in_any_and_once_per_driver(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"a": "both", "b": "gpu-only"})
    both = [("gpu", GPU, "pool-a", "g0"), ("nic", NET, "host", "e1")]
    rig.claims.put(claim_doc("both", reserved=[pod], results=both))
    rig.claims.put(claim_doc("gpu-only", reserved=[pod]))
    await rig.pods.apply(pod)
    assert phase(rig, "p") == RUNNING
    assert exposition(rig) == HELP + (
        'dra_resource_claims_in_use{driver_name="<any>"} 2.0\n'
        f'dra_resource_claims_in_use{{driver_name="{GPU}"}} 2.0\n'
        f'dra_resource_claims_in_use{{driver_name="{NET}"}} 1.0\n'
    )
    # Gone: the drivers drop out of the metric instead of staying at 0.
    await rig.pods.delete("default", "p")
    assert exposition(rig) == HELP + 'dra_resource_claims_in_use{driver_name="<any>"} 0.0\n'


async def test_claim_not_prepared_yet_is_not_in_use(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"gpu": "c"})
    rig.claims.put(claim_doc("c", reserved=[pod]))
    rig.drivers.claim_errors["c"] = "device busy"
    await rig.pods.apply(pod)
    assert phase(rig, "p") == PENDING
    sample = rig.metrics.get_sample_value
    assert sample("dra_resource_claims_in_use", {"driver_name": ANY}) == 0.0
    assert sample("dra_resource_claims_in_use", {"driver_name": GPU}) is None


async def test_claim_whose_unprepare_failed_stays_in_use(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"gpu": "c"})
    rig.claims.put(claim_doc("c", reserved=[pod]))
    await rig.pods.apply(pod)
    rig.drivers.unprepare_errors["c"] = "still busy"
    await rig.pods.delete("default", "p")
    # The kubelet keeps the claim in its cache, prepared, until NodeUnprepareResources succeeds.
    sample = rig.metrics.get_sample_value
    assert sample("dra_resource_claims_in_use", {"driver_name": ANY}) == 1.0
    assert sample("dra_resource_claims_in_use", {"driver_name": GPU}) == 1.0
    rig.drivers.unprepare_errors.clear()
    await rig.dra.retry()
    assert sample("dra_resource_claims_in_use", {"driver_name": ANY}) == 0.0
    assert sample("dra_resource_claims_in_use", {"driver_name": GPU}) is None
