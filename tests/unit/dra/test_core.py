"""The pure cores: claim parsing, status derivation, the health cache, the cache records."""

from __future__ import annotations

import pytest

from nodeagent.dra import model
from nodeagent.dra.health import HealthCache
from nodeagent.dra.model import AllocationResult, ClaimEntry, PodClaim, PodRecord
from nodeagent.dra.ports import DeviceHealthUpdate, PreparedDevice
from nodeagent.dra.state import CLAIMS_BUCKET, ClaimCache, claim_from_record, claim_to_record
from nodeagent.objects.pod.model import ClaimRef, ResourceHealth, ResourceStatus

G = "gpu.example.com"


def test_parse_claim_and_problems() -> None:
    doc = {"metadata": {"uid": "u1"}, "status": {
        "allocation": {"devices": {"results": [{"request": "r/s", "driver": G, "pool": "p", "device": "d"}]}},
        "reservedFor": [{"resource": "pods", "name": "x", "uid": "pod-1"}]}}
    view = model.parse_claim("ns", "c", doc)
    assert view.uid == "u1" and view.allocated and view.reserved_for == {"pod-1"}
    assert view.results == (AllocationResult("r/s", G, "p", "d"),) and view.drivers == (G,)
    assert model.claim_problem(view, "ns", "x", "pod-1") == ""
    assert model.claim_problem(view, "ns", "y", "pod-2") == "pod y (pod-2) is not allowed to use ResourceClaim c (u1)"
    reserved_only = {"metadata": {"uid": "u2"}, "status": {"reservedFor": [{"resource": "pods", "uid": "pod-1"}]}}
    assert model.claim_problem(model.parse_claim("ns", "c", reserved_only), "ns", "x", "pod-1") == (
        "ResourceClaim c: not allocated")
    assert model.claim_problem(view, "ns", "x", "pod-1", must_own=True) == (
        "ResourceClaim ns/c was not created for Pod ns/x (Pod is not owner)")
    owned = {**doc, "metadata": {"uid": "u1", "ownerReferences": [
        {"kind": "Pod", "name": "x", "uid": "pod-1", "controller": True}]}}
    assert model.claim_problem(model.parse_claim("ns", "c", owned), "ns", "x", "pod-1", must_own=True) == ""
    assert model.claim_not_found("c") == 'fetch ResourceClaim c: resourceclaims.resource.k8s.io "c" not found'



def _record(refs: tuple[tuple[str, tuple[ClaimRef, ...]], ...]) -> PodRecord:
    results = (AllocationResult("a", G, "p", "d0"), AllocationResult("a", G, "p", "d1"),
               AllocationResult("b/x", G, "p", "d2"))
    devices = {G: (PreparedDevice(("a",), "p", "d0", ("cdi0",)), PreparedDevice(("a",), "p", "d1", ("cdi1",)),
                   PreparedDevice(("b/x",), "p", "d2", ("cdi2",), "share"))}
    return PodRecord("pod", "ns", "n", True, (PodClaim("c", "u", "ns", "claim", results, devices),), refs)


@pytest.mark.parametrize(("refs", "expected"), [
    # a reference naming no request gets one entry for the whole claim, as the kubelet's
    ((ClaimRef("c"),), ["claim:c"]),
    ((ClaimRef("c", "b"),), ["claim:c/b"]),
    ((ClaimRef("c", "a"), ClaimRef("c", "b")), ["claim:c/a", "claim:c/b"]),
])
def test_container_statuses(refs: tuple[ClaimRef, ...], expected: list[str]) -> None:
    record = _record((("main", refs),))
    statuses = model.container_statuses(record, lambda k: "Healthy")
    assert [rs.name for rs in statuses["main"]] == expected
    assert model.pod_statuses(record, lambda k: "Healthy") == ()


def test_pod_level_and_resources() -> None:
    record = _record(())
    # resource ids as the kubelet's buildResourceHealth: the device's first CDI id from the prepare
    assert model.pod_statuses(record, lambda k: "Unknown") == (
        ResourceStatus("claim:c", (ResourceHealth("cdi0", "Unknown"), ResourceHealth("cdi1", "Unknown"),
                                   ResourceHealth("cdi2", "Unknown"))),
    )
    bare = PodClaim("c", "u", "ns", "claim", record.claims[0].results, {})  # no CDI ids: driver/pool/device
    assert [h.resource_id for rs in model.pod_statuses(PodRecord("pod", "ns", "n", True, (bare,), ()),
                                                        lambda k: "Unknown") for h in rs.resources] == [
        f"{G}/p/d0", f"{G}/p/d1", f"{G}/p/d2"]
    record = _record((("main", (ClaimRef("c", "b"),)),))
    [info] = model.container_resources(record, "main")
    assert (info.claim_name, info.claim_namespace) == ("claim", "ns")
    assert [(d.device_name, d.cdi_devices, d.share_id) for d in info.devices] == [("d2", ("cdi2",), "share")]


def test_health_cache() -> None:
    cache = HealthCache()
    key = (G, "p", "d")
    assert cache.health(key, 0) == "Unknown"
    assert cache.update(G, [DeviceHealthUpdate("p", "d", "Healthy", 0, 0)], now=10) == [key]
    assert cache.update(G, [DeviceHealthUpdate("p", "d", "Healthy", 0, 0)], now=11) == []
    assert cache.expire(now=40) == []  # 29 s since the last update
    assert cache.expire(now=41.5) == [key] and cache.health(key, 41.5) == "Unknown"
    assert cache.expire(now=50) == []
    cache.update(G, [DeviceHealthUpdate("p", "d", "Unhealthy", 0, 2, "fan")], now=50)
    assert cache.entry(key) is not None and cache.entry(key).message == "fan"
    assert cache.driver_gone("other") == []
    assert cache.driver_gone(G) == [key] and cache.health(key, 50) == "Unknown"


def test_claim_records_round_trip_and_version() -> None:
    entry = ClaimEntry("u", "ns", "c", (AllocationResult("r", G, "p", "d"),), (G,),
                       {G: (PreparedDevice((), "p", "d", ("x",), None),)}, frozenset({"pod"}), frozenset())
    assert claim_from_record(claim_to_record(entry)) == entry
    bad = dict(claim_to_record(entry), version=99)
    cache, problems = ClaimCache.load([("u", bad)], [])
    assert cache.claims == {} and problems and "unsupported version 99" in problems[0]
    assert CLAIMS_BUCKET in problems[0]
