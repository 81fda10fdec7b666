"""DRAResourceHealth v1 fields on the node: per-device timeouts and messages (cache, pod status, events).

The pure cache runs on explicit times; the manager and pod manager run on a FakeClock through
the DRA test rig, fed as the registry would feed them.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from nodeagent.dra.health import DEFAULT_TIMEOUT, MESSAGE_MAX, HealthCache, truncate_message
from nodeagent.dra.ports import HEALTHY, UNHEALTHY, UNKNOWN, DeviceHealthUpdate
from nodeagent.dra.registry import choose_health_service
from nodeagent.objects.pod.manifest import status_to_json
from nodeagent.objects.pod.model import Pod, PodStatus, ResourceHealth, ResourceStatus
from nodeagent.pods.records import status_from_record, status_to_record
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock

from .fakes import FakeClaims, FakeRegistry, Rig, build, claim_doc, claim_pod, settle

GPU = "gpu.example.com"
A, B = (GPU, "pool-a", "dev-0"), (GPU, "pool-a", "dev-1")


def upd(device: str, health: str, timeout: float = 0, message: str = "") -> DeviceHealthUpdate:
    return DeviceHealthUpdate("pool-a", device, health, 1_700_000_000.0, timeout, message)


# ---------------------------------------------------------------------------- version choice


@pytest.mark.parametrize(
    ("versions", "chosen"),
    [
        pytest.param(("v1beta1.DRAPlugin",), "", id="none"),
        pytest.param((), "", id="empty"),
        pytest.param(("v1.DRAPlugin", "v1alpha1.DRAResourceHealth"), "v1alpha1.DRAResourceHealth", id="only-v1alpha1"),
        pytest.param(("v1.DRAPlugin", "v1beta1.DRAResourceHealth"), "v1beta1.DRAResourceHealth", id="only-v1beta1"),
        pytest.param(("v1.DRAPlugin", "v1.DRAResourceHealth"), "v1.DRAResourceHealth", id="only-v1"),
        pytest.param(("v1alpha1.DRAResourceHealth", "v1beta1.DRAResourceHealth", "v1.DRAResourceHealth"),
                     "v1.DRAResourceHealth", id="all-picks-v1"),
        pytest.param(("v1alpha1.DRAResourceHealth", "v1beta1.DRAResourceHealth"), "v1beta1.DRAResourceHealth",
                     id="v1beta1-over-v1alpha1"),
        pytest.param(("v2.DRAResourceHealth",), "", id="unknown"),
    ],
)
def test_pick_health_service(versions: tuple[str, ...], chosen: str) -> None:
    assert choose_health_service(versions) == chosen


# ---------------------------------------------------------------------------- pure cache


def test_truncate_message_like_the_kubelet() -> None:
    assert MESSAGE_MAX == 1024
    exact = "x" * 1024
    assert truncate_message(exact) == exact
    cut = truncate_message("y" * 1021 + "abcd")
    assert len(cut) == 1024 and cut == "y" * 1021 + "..."
    assert truncate_message("") == ""


def test_each_device_times_out_on_its_own_timeout() -> None:
    cache = HealthCache()
    assert sorted(cache.update(GPU, [upd("dev-0", HEALTHY, timeout=5), upd("dev-1", HEALTHY)], now=100.0)) == [A, B]
    assert cache.expire(105.0) == []  # exactly at the timeout: still fresh
    assert cache.expire(105.5) == [A]
    assert (cache.health(A, 105.5), cache.health(B, 105.5)) == (UNKNOWN, HEALTHY)
    assert cache.expire(100.0 + DEFAULT_TIMEOUT + 0.5) == [B]  # 0 = unset: the 30 s default
    assert cache.expire(200.0) == []  # reported once, not again


def test_a_later_report_restarts_the_clock_and_may_change_the_timeout() -> None:
    cache = HealthCache()
    cache.update(GPU, [upd("dev-0", HEALTHY, timeout=5)], now=0.0)
    cache.update(GPU, [upd("dev-0", HEALTHY, timeout=60)], now=4.0)
    assert cache.expire(50.0) == []
    assert cache.expire(64.5) == [A]


def test_negative_timeout_is_logged_and_means_the_default(caplog: pytest.LogCaptureFixture) -> None:
    cache = HealthCache()
    with caplog.at_level(logging.WARNING, logger="nodeagent.dra.health"):
        cache.update(GPU, [upd("dev-0", HEALTHY, timeout=-3)], now=0.0)
    assert "negative health check timeout treated as unset" in caplog.text
    assert cache.entry(A) is not None and cache.entry(A).timeout == DEFAULT_TIMEOUT
    assert cache.expire(29.0) == [] and cache.expire(30.5) == [A]


def test_message_kept_cut_republished_and_dropped_when_stale() -> None:
    cache = HealthCache()
    long = "E" * 2000
    assert cache.update(GPU, [upd("dev-0", UNHEALTHY, timeout=10, message=long)], now=0.0) == [A]
    assert cache.state(A, 1.0) == (UNHEALTHY, "E" * 1021 + "...")
    # Same health, new message: the pod's status must change, so the device counts as changed.
    assert cache.update(GPU, [upd("dev-0", UNHEALTHY, timeout=10, message="ECC")], now=1.0) == [A]
    assert cache.update(GPU, [upd("dev-0", UNHEALTHY, timeout=10, message="ECC")], now=2.0) == []
    # A timed-out device is Unknown and its message no longer holds.
    assert cache.expire(12.5) == [A]
    assert (cache.state(A, 12.5), cache.message(A, 12.5)) == ((UNKNOWN, ""), "")
    # An Unknown report with a message is visible as such.
    assert cache.update(GPU, [upd("dev-0", UNKNOWN, message="probe failed")], now=13.0) == [A]
    assert cache.driver_gone(GPU) == [A]


# ---------------------------------------------------------------------------- pod status and events


@pytest.fixture
async def rig(fake_clock: FakeClock) -> AsyncIterator[Rig]:
    r = build(fake_clock, StateDB.memory(), FakeRegistry(GPU), FakeClaims())
    await r.dra.start()
    yield r
    await r.close()


async def running_pod(rig: Rig) -> Pod:
    pod = claim_pod("p", rig.clock, {"gpu": "gpu-claim"})
    rig.claims.put(claim_doc("gpu-claim", reserved=[pod],
                             results=[("gpu", GPU, "pool-a", "dev-0"), ("gpu", GPU, "pool-a", "dev-1")]))
    await rig.pods.apply(pod)
    await settle()
    return pod


async def send(rig: Rig, *updates: DeviceHealthUpdate) -> None:
    for listener in rig.drivers.health_listeners:
        await listener(GPU, list(updates))
    await settle(5)


def resources(rig: Rig, pod: Pod) -> dict[str, ResourceHealth]:
    (rs,) = rig.pods.status(pod.uid).container_statuses[0].allocated_resources_status
    return {h.resource_id.rsplit("/", 1)[1]: h for h in rs.resources}


async def test_message_in_pod_status_cut_at_1024(rig: Rig) -> None:
    pod = await running_pod(rig)
    long = "uncorrectable ECC error; " * 60  # 1500 characters
    await send(rig, upd("dev-0", HEALTHY), upd("dev-1", UNHEALTHY, message=long))
    got = resources(rig, pod)
    kept = long[:1021] + "..."
    assert got["dev-1"] == ResourceHealth(f"{GPU}/pool-a/dev-1", UNHEALTHY, kept)
    assert got["dev-0"] == ResourceHealth(f"{GPU}/pool-a/dev-0", HEALTHY, "")
    doc = status_to_json(pod, rig.pods.status(pod.uid))
    res = doc["containerStatuses"][0]["allocatedResourcesStatus"][0]["resources"]
    assert res == [{"resourceID": f"{GPU}/pool-a/dev-0", "health": "Healthy"},
                   {"resourceID": f"{GPU}/pool-a/dev-1", "health": "Unhealthy", "message": kept}]
    # no event: the kubelet's DRA manager posts none for a health change (the status carries it)
    assert not [e for e in rig.recorder.for_pod(pod) if e.reason.startswith("Resource")]
    # A new message with the same health is a status change too.
    await send(rig, upd("dev-0", HEALTHY), upd("dev-1", UNHEALTHY, message="row remapping pending"))
    assert resources(rig, pod)["dev-1"].message == "row remapping pending"


async def test_stale_device_turns_unknown_after_its_timeout_and_loses_its_message(rig: Rig) -> None:
    pod = await running_pod(rig)
    await send(rig, upd("dev-0", HEALTHY, timeout=3), upd("dev-1", UNHEALTHY, timeout=8, message="hot"))
    for _ in range(4):  # the manager's health loop runs every second
        await rig.clock.wait_for_sleepers()
        rig.clock.advance(1.0)
        await settle(5)
    got = resources(rig, pod)
    assert (got["dev-0"].health, got["dev-1"].health, got["dev-1"].message) == (UNKNOWN, UNHEALTHY, "hot")
    for _ in range(5):
        await rig.clock.wait_for_sleepers()
        rig.clock.advance(1.0)
        await settle(5)
    got = resources(rig, pod)
    assert (got["dev-1"].health, got["dev-1"].message) == (UNKNOWN, "")
    assert rig.dra.device_health(B) == (UNKNOWN, "")


def test_status_record_keeps_messages_and_reads_old_records() -> None:
    rs = ResourceStatus("claim:gpu/gpu", (ResourceHealth("d/p/a", "Unhealthy", "ECC"),
                                          ResourceHealth("d/p/b", "Healthy")))
    status = PodStatus(phase="Running", allocated_resources_status=(rs,))
    record = status_to_record(status)
    assert record["allocatedResourcesStatus"] == [
        ["claim:gpu/gpu", [["d/p/a", "Unhealthy", "ECC"], ["d/p/b", "Healthy"]]]]  # pairs as before
    assert status_from_record(record).allocated_resources_status == (rs,)
