"""The device taint eviction controller (KEP-5055): a NoExecute taint on an allocated device evicts
the pods using it (DisruptionTarget condition, DeviceTaintManagerEviction event, deletion) unless
the allocation tolerates it; tolerationSeconds delays the eviction. Fake clock, no sleeps."""

from __future__ import annotations

from typing import Any

from nodeagent.controlplane.controllers.devicetainteviction import EvictionController
from tests.unit.controlplane.test_scheduler_support import (
    GPU,
    Cluster,
    claim,
    claim_spec,
    device,
    device_class,
    exact,
    node,
    pod,
    resource_slice,
)


def _cluster(tolerations: list[dict[str, Any]] | None = None) -> tuple[Cluster, EvictionController]:
    c = Cluster()
    request = exact("gpu", "gpu")
    if tolerations:
        request["exactly"]["tolerations"] = tolerations
    c.add(node("n1"), device_class("gpu", f'device.driver == "{GPU}"'), resource_slice("n1", GPU, [device("g0")]),
          claim("c", claim_spec(request)), pod("p", claims={"gpu": "c"}))
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "n1"
    ctl = EvictionController(c.store, c.clock)
    ctl.load([*c.store.list("ResourceSlice"), *c.store.list("ResourceClaim"), *c.store.list("Pod")])
    return c, ctl


def _taint(c: Cluster, ctl: EvictionController, effect: str = "NoExecute") -> None:
    s = c.get("ResourceSlice", f"n1-{GPU}")
    s["spec"]["devices"][0]["taints"] = [{"key": "example.com/broken", "effect": effect}]
    ctl.handle("MODIFIED", c.store.update(s))


def _events(c: Cluster) -> list[dict[str, Any]]:
    return [e for e in c.store.list("Event") if e.get("reason") == "DeviceTaintManagerEviction"]


async def test_no_execute_evicts_the_pod_with_an_event() -> None:
    c, ctl = _cluster()
    assert ctl.work(10) == 0
    _taint(c, ctl)
    assert ctl.work(10) == 1
    assert c.store.try_get("Pod", "default", "p") is None
    (event,) = _events(c)
    assert event["message"] == "Marking for deletion" and event["type"] == "Normal"


async def test_no_schedule_and_tolerated_taints_do_not_evict() -> None:
    c, ctl = _cluster()
    _taint(c, ctl, "NoSchedule")
    assert ctl.work(10) == 0
    c, ctl = _cluster([{"key": "example.com/broken", "operator": "Exists", "effect": "NoExecute"}])
    _taint(c, ctl)
    assert ctl.work(10) == 0
    assert c.store.try_get("Pod", "default", "p") is not None


async def test_a_toleration_without_effect_does_not_keep_the_pod() -> None:
    """upstream's claimEvictionTime counts only tolerations with effect NoExecute: one with an empty
    effect let the device be allocated, yet the pod is evicted."""
    c, ctl = _cluster([{"key": "example.com/broken", "operator": "Exists"}])
    _taint(c, ctl)
    assert ctl.work(10) == 1


async def test_toleration_seconds_delays_the_eviction() -> None:
    c, ctl = _cluster([{"key": "example.com/broken", "operator": "Exists", "effect": "NoExecute",
                        "tolerationSeconds": 30}])
    _taint(c, ctl)
    assert ctl.work(10) == 0
    due = ctl.deadline()
    assert due is not None and due == c.clock.monotonic() + 30
    c.clock.advance(29)
    assert ctl.work(10) == 0
    c.clock.advance(1)
    assert ctl.work(10) == 1
    assert c.store.try_get("Pod", "default", "p") is None
