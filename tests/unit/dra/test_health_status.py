"""Device health into pod status: container entries, pod-level entries, timeouts, driver loss, gate."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from nodeagent.objects.pod.manifest import status_to_json
from nodeagent.objects.pod.model import FAILED, Pod, ResourceHealth, ResourceStatus
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock

from .fakes import FakeClaims, FakeRegistry, Rig, build, claim_doc, claim_pod, settle

GPU = "gpu.example.com"


@pytest.fixture
async def rig(fake_clock: FakeClock) -> AsyncIterator[Rig]:
    r = build(fake_clock, StateDB.memory(), FakeRegistry(GPU), FakeClaims())
    await r.dra.start()
    yield r
    await r.close()


def container_health(rig: Rig, pod: Pod, container: str = "c0") -> tuple[ResourceStatus, ...]:
    status = rig.pods.status(pod.uid)
    return next(cs.allocated_resources_status for cs in status.container_statuses if cs.name == container)


def entry(name: str, *resources: tuple[str, str]) -> ResourceStatus:
    return ResourceStatus(name, tuple(ResourceHealth(i, h) for i, h in resources))


async def running_pod(rig: Rig, **kw: object) -> Pod:
    pod = claim_pod("p", rig.clock, {"gpu": "gpu-claim"})
    rig.claims.put(claim_doc("gpu-claim", reserved=[pod],
                             results=[("gpu", GPU, "pool-a", "dev-0"), ("gpu", GPU, "pool-a", "dev-1")]))
    await rig.pods.apply(pod)
    await settle()
    return pod


async def test_initial_unknown_then_healthy_then_unhealthy(rig: Rig) -> None:
    pod = await running_pod(rig)
    ids = (f"{GPU}/pool-a/dev-0", f"{GPU}/pool-a/dev-1")
    assert container_health(rig, pod) == (entry("claim:gpu", (ids[0], "Unknown"), (ids[1], "Unknown")),)
    await rig.drivers.send_health(GPU, ("pool-a", "dev-0", "Healthy"), ("pool-a", "dev-1", "Healthy"))
    assert container_health(rig, pod) == (entry("claim:gpu", (ids[0], "Healthy"), (ids[1], "Healthy")),)
    await rig.drivers.send_health(GPU, ("pool-a", "dev-0", "Healthy"), ("pool-a", "dev-1", "Unhealthy"))
    assert container_health(rig, pod) == (entry("claim:gpu", (ids[0], "Healthy"), (ids[1], "Unhealthy")),)
    # the kubelet's DRA manager posts no event for a health change
    assert not [e for e in rig.recorder.for_pod(pod) if e.reason.startswith("Resource")]
    # Unchanged health: no new status write, no new event.
    before = len(rig.recorder.for_pod(pod))
    await rig.drivers.send_health(GPU, ("pool-a", "dev-0", "Healthy"), ("pool-a", "dev-1", "Unhealthy"))
    assert len(rig.recorder.for_pod(pod)) == before
    doc = status_to_json(pod, rig.pods.status(pod.uid))
    assert doc["containerStatuses"][0]["allocatedResourcesStatus"][0]["resources"][1] == {
        "resourceID": ids[1], "health": "Unhealthy"}


async def test_timeout_turns_unknown(rig: Rig) -> None:
    pod = await running_pod(rig)
    await rig.drivers.send_health(GPU, ("pool-a", "dev-0", "Healthy"))
    await rig.drivers.send_health(GPU, ("pool-a", "dev-1", "Healthy"), timeout=5)
    for _ in range(6):
        await rig.clock.wait_for_sleepers()
        rig.clock.advance(1.0)
        await settle(5)
    health = {h.resource_id: h.health for h in container_health(rig, pod)[0].resources}
    assert health == {f"{GPU}/pool-a/dev-0": "Healthy", f"{GPU}/pool-a/dev-1": "Unknown"}
    for _ in range(25):  # the 30 s default
        await rig.clock.wait_for_sleepers()
        rig.clock.advance(1.0)
        await settle(5)
    health = {h.resource_id: h.health for h in container_health(rig, pod)[0].resources}
    assert health == {f"{GPU}/pool-a/dev-0": "Unknown", f"{GPU}/pool-a/dev-1": "Unknown"}


async def test_driver_gone_turns_unknown(rig: Rig) -> None:
    pod = await running_pod(rig)
    await rig.drivers.send_health(GPU, ("pool-a", "dev-0", "Healthy"), ("pool-a", "dev-1", "Healthy"))
    await rig.drivers.set_registered(GPU, False)
    assert {h.health for h in container_health(rig, pod)[0].resources} == {"Unknown"}


async def test_request_reference_and_pod_level_for_unreferenced_claim(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"gpu": "gpu-claim", "spare": "spare-claim"},
                    containers={"main": [("gpu", "big")], "other": []})
    rig.claims.put(claim_doc("gpu-claim", reserved=[pod], results=[("big/large", GPU, "pool-a", "dev-0"),
                                                                   ("small", GPU, "pool-a", "dev-1")]))
    rig.claims.put(claim_doc("spare-claim", reserved=[pod], results=[("x", GPU, "pool-b", "dev-9")]))
    await rig.pods.apply(pod)
    await rig.drivers.send_health(GPU, ("pool-a", "dev-0", "Unhealthy"), ("pool-b", "dev-9", "Healthy"))
    assert container_health(rig, pod, "main") == (entry("claim:gpu/big", (f"{GPU}/pool-a/dev-0", "Unhealthy")),)
    assert container_health(rig, pod, "other") == ()
    status = rig.pods.status(pod.uid)
    assert status.allocated_resources_status == (entry("claim:spare", (f"{GPU}/pool-b/dev-9", "Healthy")),)
    # v1 PodStatus has no pod-level allocatedResourcesStatus: the kubelet reports such claims nowhere
    assert "allocatedResourcesStatus" not in status_to_json(pod, status)


async def test_failed_pod_still_gets_updates(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"gpu": "gpu-claim"},
                    annotations={"nodeagent.dev/finish-after-seconds": "1", "nodeagent.dev/exit-code": "2"})
    rig.claims.put(claim_doc("gpu-claim", reserved=[pod]))
    await rig.pods.apply(pod)
    await settle()
    await rig.clock.wait_for_sleepers(2)  # the health loop and the finish timer
    rig.clock.advance(1.0)
    await settle()
    assert rig.pods.status(pod.uid).phase == FAILED
    await rig.drivers.send_health(GPU, ("pool-a", "gpu-claim-dev", "Unhealthy"))
    assert container_health(rig, pod)[0].resources[0].health == "Unhealthy"
    await rig.pods.delete("default", "p")
    assert rig.dra.pod_record(pod.uid) is None


async def test_gate_off_no_status(fake_clock: FakeClock) -> None:
    rig = build(fake_clock, StateDB.memory(), FakeRegistry(GPU), FakeClaims(), health_gate=False)
    await rig.dra.start()
    try:
        pod = await running_pod(rig)
        await rig.drivers.send_health(GPU, ("pool-a", "dev-0", "Unhealthy"))
        await rig.drivers.set_registered(GPU, False)
        assert container_health(rig, pod) == ()
        assert rig.pods.status(pod.uid).allocated_resources_status == ()
        assert not [e for e in rig.recorder.for_pod(pod) if e.reason.startswith("Resource")]
    finally:
        await rig.close()
