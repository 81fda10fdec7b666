"""Device taints and tolerations (KEP-5055) and binding conditions (KEP-5007) in the allocator, as a
table of the upstream structured allocator's cases (allocatortesting: "tainted-device",
"tolerated-device", "tainted-all", "none-effect", "device-binding-conditions", "bindsToNode") plus
the matching rule of resourceclaim.ToleratesTaint and the eviction delay."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from nodeagent.controlplane.allocator import (
    ALL,
    Claim,
    Device,
    DeviceClass,
    Node,
    NodeSelector,
    Request,
    ResourceSlice,
    allocate,
)
from nodeagent.controlplane.allocator.allocator import Features
from nodeagent.controlplane.allocator.taints import Taint, Toleration, eviction_delay, tolerates

DRV = "gpu.example.com"
CLASSES = {"gpu": DeviceClass("gpu", (f'device.driver == "{DRV}"',))}
N1 = Node("n1")
NO_SCHED = Taint("example.com/t", "NoSchedule", "v")
NO_EXEC = Taint("example.com/t", "NoExecute", "v")
INFO = Taint("example.com/t", "None", "v")
TOL_KEY = Toleration("example.com/t", "Exists")
TOL_EXEC = Toleration("example.com/t", "Exists", effect="NoExecute")
TOL_EQ = Toleration("example.com/t", "Equal", "v", "NoSchedule")


def dev(name: str, *taints: Taint, binding: Sequence[str] = (), binds: bool = False) -> Device:
    return Device(DRV, "p", name, taints=tuple(taints), binding_conditions=tuple(binding),
                  binding_failure_conditions=("Failed",) if binding else (), binds_to_node=binds)


def slice_(*devices: Device) -> ResourceSlice:
    return ResourceSlice("s", DRV, "p", tuple(devices), all_nodes=True)


@dataclass
class Case:
    name: str
    devices: Sequence[Device]
    expect: list[str] | None
    tolerations: Sequence[Toleration] = ()
    mode: str = "ExactCount"
    count: int = 1
    features: Features = field(default_factory=Features)


CASES = [
    Case("untainted", [dev("d0")], ["d0"]),
    Case("tainted-device-no-schedule", [dev("d0", NO_SCHED)], None),
    Case("tainted-device-no-execute", [dev("d0", NO_EXEC)], None),
    Case("tainted-skipped-next-used", [dev("d0", NO_SCHED), dev("d1")], ["d1"]),
    Case("tolerated-exists", [dev("d0", NO_SCHED, NO_EXEC)], ["d0"], [TOL_KEY]),
    Case("tolerated-equal-one-effect-only", [dev("d0", NO_SCHED, NO_EXEC)], None, [TOL_EQ]),
    Case("tolerated-equal", [dev("d0", NO_SCHED)], ["d0"], [TOL_EQ]),
    Case("wrong-value", [dev("d0", NO_SCHED)], None, [Toleration("example.com/t", "Equal", "w")]),
    Case("empty-key-exists-tolerates-all", [dev("d0", NO_EXEC)], ["d0"], [Toleration("", "Exists")]),
    Case("effect-none-is-informational", [dev("d0", INFO)], ["d0"]),
    Case("all-mode-skips-tainted", [dev("d0"), dev("d1", NO_SCHED), dev("d2")], ["d0", "d2"], mode=ALL,
         count=0),
    Case("taints-ignored-with-gate-off", [dev("d0", NO_SCHED)], ["d0"], features=Features(device_taints=False)),
    Case("binding-conditions", [dev("d0", binding=["Ready"])], ["d0"]),
    Case("binding-conditions-gate-off", [dev("d0", binding=["Ready"]), dev("d1")], ["d1"],
         features=Features(device_binding=False)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_allocate(case: Case) -> None:
    request = Request("r", "gpu", allocation_mode=case.mode, count=case.count, tolerations=tuple(case.tolerations))
    claim = Claim("default", "c", "uid-c", (request,))
    out = allocate([claim], N1, [slice_(*case.devices)], CLASSES, set(), features=case.features)
    if case.expect is None:
        assert not out.ok
        return
    assert out.results is not None, out.message
    assert [d.device for d in out.results[0].devices] == case.expect


def test_results_record_tolerations_and_binding_conditions() -> None:
    request = Request("r", "gpu", tolerations=(TOL_KEY,))
    claim = Claim("default", "c", "uid-c", (request,))
    out = allocate([claim], N1, [slice_(dev("d0", NO_SCHED, binding=["Ready"], binds=True))], CLASSES, set())
    assert out.results is not None
    result = out.results[0]
    d = result.devices[0]
    assert d.tolerations == (TOL_KEY,)
    assert d.binding_conditions == ("Ready",) and d.binding_failure_conditions == ("Failed",)
    assert result.node_selector == NodeSelector.for_node("n1")  # bindsToNode pins a pool seen by all nodes


@pytest.mark.parametrize(("toleration", "taint", "ok"), [
    (Toleration("k", "Equal", "v"), Taint("k", "NoSchedule", "v"), True),
    (Toleration("k", "", "v"), Taint("k", "NoSchedule", "v"), True),
    (Toleration("k", "Equal", "v"), Taint("k", "NoSchedule", "w"), False),
    (Toleration("k", "Exists"), Taint("k", "NoExecute", "w"), True),
    (Toleration("k", "Exists", effect="NoSchedule"), Taint("k", "NoExecute"), False),
    (Toleration("", "Exists"), Taint("other", "NoExecute"), True),
    (Toleration("j", "Exists"), Taint("k", "NoExecute"), False),
])
def test_tolerates(toleration: Toleration, taint: Taint, ok: bool) -> None:
    assert tolerates(toleration, taint) is ok


@pytest.mark.parametrize(("taints", "tolerations", "delay"), [
    ([NO_SCHED], [], None),
    ([NO_EXEC], [], 0.0),
    ([NO_EXEC], [TOL_EXEC], None),
    ([NO_EXEC], [TOL_KEY], 0.0),  # only NoExecute tolerations keep a pod (claimEvictionTime)
    ([NO_EXEC], [Toleration("example.com/t", "Exists", effect="NoExecute", toleration_seconds=30)], 30.0),
    ([NO_EXEC], [Toleration("example.com/t", "Exists", effect="NoExecute", toleration_seconds=30),
                 Toleration("example.com/t", "Exists", effect="NoExecute", toleration_seconds=10)], 10.0),
    ([NO_EXEC], [Toleration("example.com/t", "Exists", effect="NoExecute", toleration_seconds=30), TOL_EXEC],
     None),  # tolerated forever by one of them
    ([NO_EXEC], [Toleration("example.com/t", "Exists", effect="NoExecute", toleration_seconds=-5)], 0.0),
    ([NO_EXEC], [Toleration("example.com/t", "Exists", toleration_seconds=30)], 0.0),
    ([NO_EXEC, Taint("other", "NoExecute")], [TOL_EXEC], 0.0),
])
def test_eviction_delay(taints: list[Taint], tolerations: list[Toleration], delay: float | None) -> None:
    assert eviction_delay(taints, tolerations) == delay
