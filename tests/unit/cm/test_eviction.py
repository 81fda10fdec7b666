"""Eviction: thresholds, grace periods, conditions, ranking, and the periodic manager."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.cm.eviction import decision as D
from nodeagent.cm.eviction.decision import Observation, ThresholdSpec
from nodeagent.cm.eviction.manager import EvictionManager
from nodeagent.config import Threshold
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.util.clock import FakeClock

Gi = 1 << 30
Mi = 1 << 20
HARD_MEM = ThresholdSpec(Threshold("memory.available", quantity=100 * Mi), hard=True)
SOFT_MEM = ThresholdSpec(Threshold("memory.available", quantity=500 * Mi), hard=False, grace_period=60)
HARD_DISK = ThresholdSpec(Threshold("nodefs.available", percentage=0.1), hard=True)
HARD_PID = ThresholdSpec(Threshold("pid.available", quantity=1000), hard=True)


def pod(name: str, *, usage: str | None = None, request: int = 0, priority: int = 0,
        resource: str = "memory", source: str = "api") -> Pod:
    ann = {f"nodeagent.dev/usage-{resource}": usage} if usage else {}
    requests = {resource: request} if request else {}
    return Pod(uid=name, name=name, annotations=ann, priority=priority, source=source,
               containers=(Container(f"{name}-c", requests=requests),))


def mem(available: int, capacity: int = 8 * Gi) -> dict[str, Observation]:
    return {"memory.available": Observation(available, capacity)}


@pytest.mark.parametrize(
    ("name", "pods", "first"),
    [
        ("besteffort using memory goes first", [pod("burst", usage="600Mi", request=100 * Mi),
                                                pod("be", usage="100Mi")], "burst"),
        ("under requests ranks after over requests",
         [pod("under", usage="100Mi", request=200 * Mi, priority=-10),
          pod("over", usage="300Mi", request=200 * Mi)],
         "over"),
        ("lower priority first among over-request pods",
         [pod("hi", usage="900Mi", priority=100), pod("lo", usage="10Mi", priority=-5)], "lo"),
        ("more usage above requests first",
         [pod("small", usage="200Mi"), pod("big", usage="800Mi", request=100 * Mi)], "big"),
        ("critical pods are never evicted",
         [pod("static", usage="9Gi", source="file"), pod("sys", usage="9Gi", priority=2_000_000_000),
          pod("plain", usage="1Mi")], "plain"),
        ("mirror pods are critical too (kubelettypes.IsCriticalPod)",
         [Pod(uid="m", name="m", annotations={"kubernetes.io/config.mirror": "x", "nodeagent.dev/usage-memory": "9Gi"},
              containers=(Container("m-c"),)),
          pod("plain", usage="1Mi")], "plain"),
    ],
)
def test_memory_ranking(name: str, pods: list[Pod], first: str) -> None:
    result = D.decide(0.0, D.EvictionState(), [HARD_MEM], mem(50 * Mi), pods, 300)
    assert result.victim is not None and result.victim.pod.name == first, name


def test_message_matches_the_kubelet() -> None:
    result = D.decide(0.0, D.EvictionState(), [HARD_MEM], mem(50 * Mi), [pod("x", usage="600Mi")], 300)
    assert result.victim is not None
    assert result.victim.message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
        "Container x-c was using 600Mi, request is 0, has larger consumption of memory."
    )
    assert result.conditions == ("MemoryPressure",)


def test_not_met_no_victim() -> None:
    result = D.decide(0.0, D.EvictionState(), [HARD_MEM], mem(200 * Mi), [pod("x", usage="1Gi")], 300)
    assert result.victim is None and result.met == () and result.conditions == ()


def test_soft_threshold_waits_for_grace_period() -> None:
    pods = [pod("x", usage="1Gi")]
    r1 = D.decide(10.0, D.EvictionState(), [SOFT_MEM], mem(400 * Mi), pods, 300)
    assert r1.victim is None and r1.conditions == ("MemoryPressure",)  # condition shows at once
    r2 = D.decide(69.0, r1.state, [SOFT_MEM], mem(400 * Mi), pods, 300)
    assert r2.victim is None
    r3 = D.decide(70.0, r2.state, [SOFT_MEM], mem(400 * Mi), pods, 300)
    assert r3.victim is not None
    # resolved in between: the grace period starts over
    r4 = D.decide(71.0, r3.state, [SOFT_MEM], mem(900 * Mi), pods, 300)
    r5 = D.decide(72.0, r4.state, [SOFT_MEM], mem(400 * Mi), pods, 300)
    assert r5.victim is None


def test_condition_stays_for_transition_period() -> None:
    r1 = D.decide(0.0, D.EvictionState(), [HARD_MEM], mem(50 * Mi), [], 300)
    assert r1.conditions == ("MemoryPressure",) and r1.victim is None
    r2 = D.decide(299.0, r1.state, [HARD_MEM], mem(5 * Gi), [], 300)
    assert r2.conditions == ("MemoryPressure",)
    r3 = D.decide(300.0, r2.state, [HARD_MEM], mem(5 * Gi), [], 300)
    assert r3.conditions == ()


def test_disk_percentage_and_ranking() -> None:
    obs = {"nodefs.available": Observation(available=5 * Gi, capacity=100 * Gi)}
    pods = [pod("a", usage="1Gi", resource="ephemeral-storage"),
            pod("b", usage="3Gi", resource="ephemeral-storage", request=Gi)]
    result = D.decide(0.0, D.EvictionState(), [HARD_DISK], obs, pods, 300)
    assert result.conditions == ("DiskPressure",)
    assert result.victim is not None and result.victim.pod.name == "b"
    # 10% is a float32 in the kubelet (GetThresholdQuantity): 10737418400 bytes, not 10Gi
    assert result.victim.message.startswith(
        "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 5Gi. "
        "Container b-c was using 3Gi, request is 1Gi"
    )


def test_pid_pressure_ranks_by_priority_then_count() -> None:
    obs = {"pid.available": Observation(available=10, capacity=32768)}
    pods = [pod("few", usage="5", resource="pid"), pod("many", usage="500", resource="pid"),
            pod("low", usage="1", resource="pid", priority=-1)]
    result = D.decide(0.0, D.EvictionState(), [HARD_PID], obs, pods, 0)
    assert result.conditions == ("PIDPressure",)
    assert result.victim is not None and result.victim.pod.name == "low"
    assert result.victim.message == (
        "The node was low on resource: pids. Threshold quantity: 1000, available: 10."
    )


def test_memory_threshold_acts_before_disk() -> None:
    obs = {**mem(50 * Mi), "nodefs.available": Observation(1, 100)}
    pods = [pod("m", usage="1Gi"), pod("d", usage="1Gi", resource="ephemeral-storage")]
    result = D.decide(0.0, D.EvictionState(), [HARD_DISK, HARD_MEM], obs, pods, 300)
    assert result.victim is not None and result.victim.signal == "memory.available"
    assert result.conditions == ("DiskPressure", "MemoryPressure")


def test_bad_usage_annotation_counts_as_zero() -> None:
    assert D.pod_usage(pod("x", usage="lots"), "memory") == 0
    assert D.pod_usage(pod("x", usage="1Ki"), "memory") == 1024


# ---------------------------------------------------------------- manager


class Signals:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity

    def observe(self, pods: Sequence[Pod]) -> Mapping[str, Observation]:
        used = sum(D.pod_usage(p, "memory") for p in pods)
        return mem(max(0, self.capacity - used), self.capacity)


async def test_manager_evicts_one_pod_per_pass(fake_clock: FakeClock, registry: CollectorRegistry) -> None:
    pods = [pod("a", usage="600Mi"), pod("b", usage="500Mi")]
    evicted: list[tuple[str, str, str]] = []

    async def evict(p: Pod, *, reason: str, message: str) -> None:
        evicted.append((p.name, reason, message))
        pods.remove(p)

    instruments = Instruments(registry)
    mgr = EvictionManager([HARD_MEM], 300, 10.0, Signals(Gi), lambda: list(pods), evict, fake_clock,
                          instruments)
    task = asyncio.create_task(mgr.run())
    try:
        for _ in range(5):
            await asyncio.sleep(0)
        assert [e[0] for e in evicted] == ["a"]
        assert evicted[0][1] == "Evicted"
        assert "Threshold quantity: 100Mi, available: 0." in evicted[0][2]
        assert mgr.conditions() == ("MemoryPressure",)
        await fake_clock.wait_for_sleepers()
        fake_clock.advance(10.0)
        for _ in range(5):
            await asyncio.sleep(0)
        assert [e[0] for e in evicted] == ["a"]  # 524Mi available now: no second eviction
        assert registry.get_sample_value(
            "kubelet_evictions", {"eviction_signal": "memory.available"}
        ) == 1.0
        await fake_clock.wait_for_sleepers()
        fake_clock.advance(300.0)
        for _ in range(5):
            await asyncio.sleep(0)
        assert mgr.conditions() == ()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_manager_survives_a_failing_pass(fake_clock: FakeClock) -> None:
    calls = 0

    class Broken:
        def observe(self, pods: Sequence[Pod]) -> Mapping[str, Observation]:
            nonlocal calls
            calls += 1
            raise RuntimeError("probe exploded")

    async def evict(p: Pod, *, reason: str, message: str) -> None:
        raise AssertionError("no eviction expected")

    mgr = EvictionManager([HARD_MEM], 300, 5.0, Broken(), list, evict, fake_clock)
    task = asyncio.create_task(mgr.run())
    try:
        for _ in range(3):
            await asyncio.sleep(0)
        await fake_clock.wait_for_sleepers()
        fake_clock.advance(5.0)
        for _ in range(3):
            await asyncio.sleep(0)
        assert calls == 2
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
