"""Partitionable devices (KEP-4815) and consumable capacity (KEP-5075) in the allocator, as tables.

Cases follow the upstream structured allocator's tables (k8s.io/dynamic-resource-allocation,
structured/internal/allocatortesting: the partitionable-devices and consumable-capacity cases):
inputs are slices, claims and what other claims already hold; the expected result is the devices
each claim gets (with shareID presence and consumed capacity for shared devices) or no fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from nodeagent.controlplane.allocator import (
    AllocationOutcome,
    Claim,
    Constraint,
    Device,
    DeviceClass,
    DeviceId,
    Inventory,
    Node,
    NodeSelector,
    Request,
    RequestPolicy,
    ResourceSlice,
    SubRequest,
    allocate,
)
from nodeagent.controlplane.allocator.allocator import Features
from nodeagent.controlplane.allocator.consumable import consumed_amount

DRV = "gpu.example.com"
GI = 1 << 30
CLASSES = {"gpu": DeviceClass("gpu", (f'device.driver == "{DRV}"',))}
N1 = Node("n1", {"zone": "a"})
N2 = Node("n2", {"zone": "b"})


def counters_slice(node: str = "n1", pool: str = "p", count: int = 2, **sets: Mapping[str, int]) -> ResourceSlice:
    return ResourceSlice(f"{pool}-counters", DRV, pool, (), resource_slice_count=count, node_name=node,
                         shared_counters=dict(sets))


def part(name: str, pool: str = "p", **consumes: Mapping[str, int]) -> Device:
    return Device(DRV, pool, name, {}, {}, consumes_counters=tuple(consumes.items()))


def devices_slice(devs: Sequence[Device], node: str = "n1", pool: str = "p", count: int = 2) -> ResourceSlice:
    return ResourceSlice(f"{pool}-devices", DRV, pool, tuple(devs), resource_slice_count=count, node_name=node)


def shared(name: str, capacity: Mapping[str, int], policies: Mapping[str, RequestPolicy] | None = None,
           **attrs: str) -> Device:
    """A shared device whose slice writes its capacities by bare names (as the convert layer builds it)."""
    return Device(DRV, "p", name, dict(attrs), {f"{DRV}/{k}": v for k, v in capacity.items()},
                  allow_multiple_allocations=True,
                  request_policies={f"{DRV}/{k}": v for k, v in (policies or {}).items()},
                  capacity_names={f"{DRV}/{k}": k for k in capacity if "/" not in k})


def exclusive(name: str, capacity: Mapping[str, int]) -> Device:
    """A device allowing one allocation, its capacities written by bare names (or qualified ones)."""
    return Device(DRV, "p", name, {}, {k if "/" in k else f"{DRV}/{k}": v for k, v in capacity.items()},
                  capacity_names={f"{DRV}/{k}": k for k in capacity if "/" not in k})


def req(name: str = "r", count: int = 1, **capacity: int) -> Request:
    return Request(name, "gpu", count=count, capacity=dict(capacity))


def claim(*requests: Request, name: str = "c", constraints: Sequence[Constraint] = ()) -> Claim:
    return Claim("default", name, f"uid-{name}", tuple(requests), tuple(constraints))


@dataclass
class Case:
    name: str
    claims: Sequence[Claim]
    slices: Sequence[ResourceSlice]
    expect: list[list[str]] | None
    """Device names per claim, or None when the pod does not fit."""
    allocated: Sequence[DeviceId] = ()
    consumed: Mapping[DeviceId, Mapping[str, int]] = field(default_factory=dict)
    node: Node = N1
    features: Features = field(default_factory=Features)
    capacity: list[list[dict[str, int]]] | None = None
    """Consumed capacity per result (shared devices), when checked."""


MIG = {"mem": 40 * GI, "slices": 7}
P1 = part("gpu0-1g", gpu0={"mem": 10 * GI, "slices": 1})
P2 = part("gpu0-2g", gpu0={"mem": 20 * GI, "slices": 2})
P3 = part("gpu0-3g", gpu0={"mem": 20 * GI, "slices": 3})
PFULL = part("gpu0-full", gpu0={"mem": 40 * GI, "slices": 7})
MIG_SLICES = (counters_slice(gpu0=MIG), devices_slice((PFULL, P3, P2, P1)))

PARTITIONABLE = [
    Case("single partition fits the counters", [claim(req())], MIG_SLICES, [["gpu0-full"]]),
    Case("two partitions fit together", [claim(req(count=2))], MIG_SLICES, [["gpu0-3g", "gpu0-2g"]]),
    Case("three partitions exceed memory", [claim(req(count=3))], MIG_SLICES, None),
    Case("already allocated full device uses all counters", [claim(req())], MIG_SLICES, None,
         allocated=[(DRV, "p", "gpu0-full")]),
    Case("already allocated partition leaves room for a smaller one", [claim(req())], MIG_SLICES, [["gpu0-3g"]],
         allocated=[(DRV, "p", "gpu0-2g")]),
    Case("two partitions already allocated: the rest does not fit", [claim(req())], MIG_SLICES, None,
         allocated=[(DRV, "p", "gpu0-2g"), (DRV, "p", "gpu0-3g")]),
    Case("claims of one pod share the counters", [claim(req(), name="a"), claim(req(), name="b")], MIG_SLICES,
         [["gpu0-3g"], ["gpu0-2g"]]),
    Case("counter set missing in the pool", [claim(req())],
         (counters_slice(other=MIG), devices_slice((P1,))), None),
    Case("counter missing in the counter set", [claim(req())],
         (counters_slice(gpu0={"mem": 40 * GI}), devices_slice((P1,))), None),
    Case("device consuming from two counter sets", [claim(req(count=2))],
         (counters_slice(a={"x": 2}, b={"y": 1}),
          devices_slice((part("d0", a={"x": 1}, b={"y": 1}), part("d1", a={"x": 1}, b={"y": 1}),
                         part("d2", a={"x": 1})))), [["d0", "d2"]]),
    Case("counter slice of another generation is ignored", [claim(req())],
         (ResourceSlice("old", DRV, "p", (), generation=0, node_name="n1", shared_counters={"gpu0": MIG}),
          ResourceSlice("devs", DRV, "p", (P1,), node_name="n1")), None),
    Case("gate off: partitions are not allocatable", [claim(req())], MIG_SLICES, None,
         features=Features(partitionable_devices=False)),
]


def per_device(*devs: Device) -> tuple[ResourceSlice, ...]:
    return (ResourceSlice("counters", DRV, "p", (), resource_slice_count=2, all_nodes=True,
                          shared_counters={"gpu0": MIG}),
            ResourceSlice("devs", DRV, "p", devs, resource_slice_count=2, per_device_node_selection=True))


ZONE_A = NodeSelector.from_labels({"zone": "a"})
PER_DEVICE = [
    Case("per-device nodeName: only the named node sees the device", [claim(req())],
         per_device(Device(DRV, "p", "x", node_name="n2"), Device(DRV, "p", "y", node_name="n1")), [["y"]]),
    Case("per-device nodeSelector", [claim(req())],
         per_device(Device(DRV, "p", "x", node_selector=ZONE_A)), None, node=N2),
    Case("per-device allNodes", [claim(req())], per_device(Device(DRV, "p", "x", all_nodes=True)), [["x"]], node=N2),
]

SHARED = shared("nic0", {"bandwidth": 100})
RANGE = shared("nic0", {"bandwidth": 100}, {"bandwidth": RequestPolicy(default=10, min=10, max=60, step=5)})
VALUES = shared("nic0", {"bandwidth": 100}, {"bandwidth": RequestPolicy(default=25, valid_values=(25, 50, 100))})
NIC = (ResourceSlice("nics", DRV, "p", (SHARED,), node_name="n1"),)
NIC_RANGE = (ResourceSlice("nics", DRV, "p", (RANGE,), node_name="n1"),)
NIC_VALUES = (ResourceSlice("nics", DRV, "p", (VALUES,), node_name="n1"),)
NIC_ID = (DRV, "p", "nic0")
BW = f"{DRV}/bandwidth"
AS_WRITTEN = "bandwidth"  # consumedCapacity is keyed by the slice's own names

CONSUMABLE = [
    Case("request without capacity consumes the whole capacity", [claim(req())], NIC, [["nic0"]],
         capacity=[[{AS_WRITTEN: 100}]]),
    Case("capacity request consumes what it asks", [claim(req(bandwidth=30))], NIC, [["nic0"]],
         capacity=[[{AS_WRITTEN: 30}]]),
    Case("two claims share one device", [claim(req(bandwidth=40), name="a"), claim(req(bandwidth=60), name="b")],
         NIC, [["nic0"], ["nic0"]], capacity=[[{AS_WRITTEN: 40}], [{AS_WRITTEN: 60}]]),
    Case("shared device used up by other claims", [claim(req(bandwidth=30))], NIC, None,
         consumed={NIC_ID: {BW: 80}}),
    Case("shared device with room left", [claim(req(bandwidth=20))], NIC, [["nic0"]], consumed={NIC_ID: {BW: 80}}),
    Case("validRange: below min rounds to min", [claim(req(bandwidth=3))], NIC_RANGE, [["nic0"]],
         capacity=[[{AS_WRITTEN: 10}]]),
    Case("validRange: rounds up to a step", [claim(req(bandwidth=12))], NIC_RANGE, [["nic0"]],
         capacity=[[{AS_WRITTEN: 15}]]),
    Case("validRange: above max does not fit", [claim(req(bandwidth=70))], NIC_RANGE, None),
    Case("validRange: default when not requested", [claim(req())], NIC_RANGE, [["nic0"]],
         capacity=[[{AS_WRITTEN: 10}]]),
    Case("validValues: rounds up to the next value", [claim(req(bandwidth=26))], NIC_VALUES, [["nic0"]],
         capacity=[[{AS_WRITTEN: 50}]]),
    Case("validValues: above every value does not fit", [claim(req(bandwidth=101))], NIC_VALUES, None),
    Case("requested capacity the device lacks", [claim(req(memory=1))], NIC, None),
    Case("exclusive device: capacity request is a filter",
         [claim(req(bandwidth=50))], (ResourceSlice("s", DRV, "p", (exclusive("small", {"bandwidth": 40}),
                                                                     exclusive("big", {"bandwidth": 80})),
                                                   node_name="n1"),), [["big"]], capacity=[[{}]]),
    # upstream's requestsContainNonExistCapacity looks the claim's names up in the slice's map as written:
    # a bare name and its qualified form do not match each other (only CEL qualifies bare names)
    Case("capacity names match as written: qualified request, bare slice name",
         [claim(Request("r", "gpu", capacity={BW: 50}))],
         (ResourceSlice("s", DRV, "p", (exclusive("big", {"bandwidth": 80}),), node_name="n1"),), None),
    Case("capacity names match as written: bare request, qualified slice name", [claim(req(bandwidth=50))],
         (ResourceSlice("s", DRV, "p", (exclusive("big", {BW: 80}),), node_name="n1"),), None),
    Case("capacity names match as written: both qualified", [claim(Request("r", "gpu", capacity={BW: 50}))],
         (ResourceSlice("s", DRV, "p", (exclusive("big", {BW: 80}),), node_name="n1"),), [["big"]], capacity=[[{}]]),
    Case("two requests of one claim share the device", [claim(req("a", bandwidth=50), req("b", bandwidth=50))],
         NIC, [["nic0", "nic0"]]),
    Case("distinctAttribute: shares of two devices with distinct values",
         [claim(req("a", bandwidth=10), req("b", bandwidth=10),
                constraints=[Constraint(distinct_attribute=f"{DRV}/port")])],
         (ResourceSlice("s", DRV, "p", (shared("n0", {"bandwidth": 100}, port="p0"),
                                        shared("n1", {"bandwidth": 100}, port="p1")), node_name="n1"),),
         [["n0", "n1"]]),
    Case("firstAvailable: falls back to a smaller share",
         [claim(Request("r", first_available=(SubRequest("big", "gpu", capacity={"bandwidth": 200}),
                                              SubRequest("small", "gpu", capacity={"bandwidth": 20}))))],
         NIC, [["nic0"]], capacity=[[{AS_WRITTEN: 20}]]),
    Case("gate off: shared devices are not allocatable", [claim(req())], NIC, None,
         features=Features(consumable_capacity=False)),
]


def _run(case: Case) -> AllocationOutcome:
    return allocate(case.claims, case.node, case.slices, CLASSES, frozenset(case.allocated),
                    features=case.features, consumed=case.consumed)


@pytest.mark.parametrize("case", PARTITIONABLE + PER_DEVICE + CONSUMABLE, ids=lambda c: c.name)
def test_table(case: Case) -> None:
    outcome = _run(case)
    if case.expect is None:
        assert not outcome.ok, outcome
        return
    assert outcome.ok, outcome.message
    assert outcome.results is not None
    got = [[d.device for d in r.devices] for r in outcome.results]
    assert got == case.expect
    for r in outcome.results:
        for d in r.devices:
            is_shared = d.id[2] in ("nic0", "n0", "n1")
            assert bool(d.share_id) == is_shared
    if case.capacity is not None:
        consumed = [[dict(d.consumed_capacity) for d in r.devices] for r in outcome.results]
        assert consumed == case.capacity


def test_partitions_that_exceed_the_counters_are_explained() -> None:
    outcome = allocate([claim(req(count=3))], N1, MIG_SLICES, CLASSES, frozenset())
    assert not outcome.ok and outcome.message.startswith("claim c")


def test_share_ids_differ_per_claim_and_stay_stable() -> None:
    case = CONSUMABLE[2]
    first, again = _run(case), _run(case)
    assert first.results is not None and again.results is not None
    ids = [r.devices[0].share_id for r in first.results]
    assert len(set(ids)) == 2
    assert ids == [r.devices[0].share_id for r in again.results]


def test_per_device_selection_puts_the_device_selector_in_the_result() -> None:
    outcome = _run(Case("", [claim(req())], per_device(Device(DRV, "p", "x", node_selector=ZONE_A)), None))
    assert outcome.results is not None
    assert outcome.results[0].node_selector == ZONE_A
    outcome = _run(Case("", [claim(req())], per_device(Device(DRV, "p", "x", all_nodes=True)), None))
    assert outcome.results is not None and outcome.results[0].node_selector is None


def test_inventory_counter_table_is_built_once() -> None:
    inv = Inventory(N1, MIG_SLICES)
    assert inv.counters.capacity == (40 * GI, 7)
    assert len(inv.counters.uses) == 4
    # each allocation starts from the held devices without rebuilding the table
    for held in ([], [(DRV, "p", "gpu0-3g")], [(DRV, "p", "gpu0-full")]):
        outcome = allocate([claim(req())], N1, inv, CLASSES, frozenset(held))
        assert outcome.ok == (held != [(DRV, "p", "gpu0-full")])


@pytest.mark.parametrize(("requested", "value", "policy", "want"), [
    (None, 100, None, 100),
    (None, 100, RequestPolicy(default=7), 7),
    (30, 100, None, 30),
    (1, 100, RequestPolicy(default=4, valid_values=(4, 8)), 4),
    (9, 100, RequestPolicy(default=4, valid_values=(4, 8)), None),
    (11, 100, RequestPolicy(default=10, min=10, step=4), 14),
    (10, 100, RequestPolicy(default=10, min=10, step=4), 10),
    (61, 100, RequestPolicy(default=10, min=10, max=60), None),
])
def test_consumed_amount(requested: int | None, value: int, policy: RequestPolicy | None, want: int | None) -> None:
    assert consumed_amount(requested, value, policy) == want


def test_failure_names_what_ran_out() -> None:
    held = frozenset([(DRV, "p", "gpu0-3g"), (DRV, "p", "gpu0-2g")])
    outcome = allocate([claim(req())], N1, MIG_SLICES, CLASSES, held)
    assert outcome.message == "claim c: r: 0 of 4 free (2 without enough shared counters left)"
    outcome = allocate([claim(req(bandwidth=30))], N1, NIC, CLASSES, frozenset(), consumed={NIC_ID: {BW: 80}})
    assert outcome.message == "claim c: r: 0 of 1 free (1 without the requested capacity left)"


def test_shared_partition_pays_its_counters_once() -> None:
    """A device that both consumes counters and allows multiple allocations: a second share does
    not consume the counters again, while another partition finds them taken."""
    sharedpart = Device(DRV, "p", "s0", {}, {BW: 100}, consumes_counters=(("gpu0", {"mem": 30 * GI}),),
                        allow_multiple_allocations=True)
    other = part("x0", gpu0={"mem": 20 * GI})
    slices = (counters_slice(gpu0={"mem": 40 * GI}), devices_slice((sharedpart, other)))
    held = {(DRV, "p", "s0"): {BW: 50}}
    outcome = allocate([claim(Request("r", "gpu", capacity={BW: 50}))], N1, slices, CLASSES, frozenset(),
                       consumed=held)
    assert outcome.results is not None and outcome.results[0].devices[0].device == "s0"
    outcome = allocate([claim(Request("r", "gpu", selectors=('device.name == "x0"',)))], N1, slices, CLASSES,
                       frozenset(), consumed=held)
    assert not outcome.ok
