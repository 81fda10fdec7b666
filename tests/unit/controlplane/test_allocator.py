"""The structured allocator's rules, table by table: modes, adminAccess, pools, visibility, limits."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from nodeagent.controlplane.allocator import (
    ALL,
    DOES_NOT_FIT,
    TIMED_OUT,
    AllocationOutcome,
    Claim,
    Constraint,
    Device,
    DeviceClass,
    DeviceId,
    Inventory,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Request,
    ResourceSlice,
    SubRequest,
    allocate,
)

GPU = "gpu.example.com"
CLASSES = {
    "gpu": DeviceClass("gpu", (f'device.driver == "{GPU}"',)),
    "any": DeviceClass("any"),
    "broken": DeviceClass("broken", ('device.attributes["gpu.example.com"].nope == 1',)),
    "bad-cel": DeviceClass("bad-cel", ("device.driver ==",)),
}


def devices(n: int, pool: str = "p", **attrs: Callable[[int], str | int | bool]) -> tuple[Device, ...]:
    return tuple(Device(GPU, pool, f"d{i}", {k: f(i) for k, f in attrs.items()}) for i in range(n))


def local(devs: Sequence[Device], node: str = "n1", pool: str = "p", **kw: object) -> ResourceSlice:
    return ResourceSlice(f"{node}-{pool}-{kw.get('generation', 1)}", GPU, pool, tuple(devs), node_name=node,
                         **kw)  # type: ignore[arg-type]


def claim(*requests: Request, name: str = "c", constraints: Sequence[Constraint] = ()) -> Claim:
    return Claim("default", name, f"uid-{name}", tuple(requests), tuple(constraints))


N1 = Node("n1")


def run(claims: Sequence[Claim], slices: Sequence[ResourceSlice], allocated: Sequence[DeviceId] = (),
        node: Node = N1) -> AllocationOutcome:
    return allocate(claims, node, slices, CLASSES, frozenset(allocated))


def names(outcome: AllocationOutcome, i: int = 0) -> list[str]:
    assert outcome.results is not None, outcome.message
    return [d.device for d in outcome.results[i].devices]


def test_exact_count_takes_the_first_free_devices() -> None:
    out = run([claim(Request("r", "gpu", count=2))], [local(devices(4))], allocated=[(GPU, "p", "d0")])
    assert names(out) == ["d1", "d2"]


@pytest.mark.parametrize(
    ("request_", "allocated", "expected", "message"),
    [
        (Request("r", "gpu", allocation_mode=ALL), [], ["d0", "d1", "d2"], ""),
        (Request("r", "gpu", allocation_mode=ALL, selectors=('device.attributes["gpu.example.com"].i > 0',)),
         [(GPU, "p", "d0")], ["d1", "d2"], ""),
        (Request("r", "gpu", allocation_mode=ALL), [(GPU, "p", "d1")], None, "claim c: r: 2 of 3 free, need 3"),
        (Request("r", "gpu", allocation_mode=ALL, admin_access=True), [(GPU, "p", "d1")], ["d0", "d1", "d2"], ""),
        (Request("r", "gpu", allocation_mode=ALL, selectors=('device.attributes["gpu.example.com"].i > 5',)),
         [], None, "claim c: r: no device matches the selectors (3 in class)"),
    ],
)
def test_all_mode(request_: Request, allocated: list[DeviceId], expected: list[str] | None, message: str) -> None:
    out = run([claim(request_)], [local(devices(3, i=lambda i: i))], allocated)
    if expected is None:
        assert out.message == message
    else:
        assert names(out) == expected


def test_an_incomplete_pool_gives_no_devices_and_all_mode_stops_with_upstreams_error() -> None:
    slices = [local(devices(2), resource_slice_count=2)]  # the second slice of the pool is not here
    out = run([claim(Request("r", "gpu", allocation_mode=ALL))], slices)
    assert out.error
    assert out.message == ("claim default/c, request r: asks for all devices, but resource pool gpu.example.com/p "
                           "is currently being updated")
    out = run([claim(Request("r", "gpu"))], slices)
    assert not out.ok and not out.error


def test_admin_access_shares_devices_and_is_not_excluded() -> None:
    admin = Request("watch", "gpu", admin_access=True, count=2)
    out = run([claim(admin, Request("use", "gpu", count=2))], [local(devices(2))], allocated=[(GPU, "p", "d0")])
    # admin takes d0 (allocated elsewhere) and d1; the normal request cannot get two free devices
    assert out.message == "claim c: use: 1 of 2 free, need 2"
    # a device is never twice in one claim: the admin request took both
    out = run([claim(admin, Request("use", "gpu"))], [local(devices(2))], allocated=[(GPU, "p", "d0")])
    assert not out.ok
    out = run([claim(admin, Request("use", "gpu"))], [local(devices(3))], allocated=[(GPU, "p", "d0")])
    assert out.results is not None
    assert [(d.request, d.device, d.admin_access) for d in out.results[0].devices] == [
        ("watch", "d0", True), ("watch", "d1", True), ("use", "d2", False)]


def test_devices_are_distinct_across_the_pods_claims() -> None:
    claims = [claim(Request("r", "gpu"), name="a"), claim(Request("r", "gpu"), name="b")]
    out = run(claims, [local(devices(2))])
    assert names(out, 0) == ["d0"] and names(out, 1) == ["d1"]
    out = run(claims, [local(devices(1))])
    assert out.message == "claims a, b: each fits alone, not all together (not enough distinct devices)"


def test_other_claims_allocations_are_excluded() -> None:
    out = run([claim(Request("r", "gpu"))], [local(devices(2))], allocated=[(GPU, "p", "d0"), (GPU, "p", "d1")])
    assert out.message == "claim c: r: 0 of 2 free"


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    old = local([Device(GPU, "p", "old")], generation=1)
    new = local([Device(GPU, "p", "new")], generation=2)
    for order in ([old, new], [new, old]):
        out = run([claim(Request("r", "gpu", allocation_mode=ALL))], order)
        assert names(out) == ["new"]


@pytest.mark.parametrize(
    ("node", "visible"),
    [
        (Node("n1", {"rack": "r1"}), ["local", "everywhere", "rack"]),
        (Node("n2", {"rack": "r1"}), ["everywhere", "rack"]),
        (Node("n3", {"rack": "r2"}), ["everywhere"]),
        (Node("n4", {}), ["everywhere"]),
    ],
)
def test_slice_visibility(node: Node, visible: list[str]) -> None:
    rack = NodeSelector((NodeSelectorTerm((NodeSelectorRequirement("rack", "In", ("r1",)),)),))
    slices = [
        ResourceSlice("a", GPU, "pa", (Device(GPU, "pa", "local"),), node_name="n1"),
        ResourceSlice("b", GPU, "pb", (Device(GPU, "pb", "everywhere"),), all_nodes=True),
        ResourceSlice("c", GPU, "pc", (Device(GPU, "pc", "rack"),), node_selector=rack),
    ]
    out = run([claim(Request("r", "gpu", allocation_mode=ALL))], slices, node=node)
    assert names(out) == visible


@pytest.mark.parametrize(
    ("slices", "expected"),
    [
        ([ResourceSlice("b", GPU, "pb", (Device(GPU, "pb", "x"),), all_nodes=True)], None),
        ([ResourceSlice("c", GPU, "pc", (Device(GPU, "pc", "x"),), node_selector=NodeSelector.from_labels({"z": "1"}))],
         NodeSelector.from_labels({"z": "1"})),
        ([ResourceSlice("a", GPU, "pa", (Device(GPU, "pa", "x"),), node_name="n1")], NodeSelector.for_node("n1")),
    ],
)
def test_result_node_selector(slices: list[ResourceSlice], expected: NodeSelector | None) -> None:
    out = run([claim(Request("r", "gpu"))], slices, node=Node("n1", {"z": "1"}))
    assert out.results is not None
    assert out.results[0].node_selector == expected


@pytest.mark.parametrize(
    ("operator", "values", "labels", "matches"),
    [
        ("In", ("a", "b"), {"k": "b"}, True),
        ("In", ("a",), {}, False),
        ("NotIn", ("a",), {"k": "b"}, True),
        ("NotIn", ("a",), {"k": "a"}, False),
        ("Exists", (), {"k": ""}, True),
        ("DoesNotExist", (), {"k": ""}, False),
        ("Gt", ("3",), {"k": "4"}, True),
        ("Lt", ("3",), {"k": "4"}, False),
    ],
)
def test_node_selector_requirements(operator: str, values: tuple[str, ...], labels: dict[str, str],
                                    matches: bool) -> None:
    assert NodeSelectorRequirement("k", operator, values).matches(labels) is matches


def test_distinct_attribute() -> None:
    devs = devices(4, numa=lambda i: i // 2)  # numa 0, 0, 1, 1
    c = claim(Request("r", "gpu", count=2), constraints=[Constraint((), distinct_attribute=f"{GPU}/numa")])
    assert names(run([c], [local(devs)])) == ["d0", "d2"]
    c3 = claim(Request("r", "gpu", count=3), constraints=[Constraint((), distinct_attribute=f"{GPU}/numa")])
    assert run([c3], [local(devs)]).message == (
        f"claim c: r: constraint distinctAttribute {GPU}/numa not satisfiable")


def test_match_attribute_backtracks_across_requests() -> None:
    devs = devices(4, root=lambda i: "x" if i in (0, 3) else "y")
    c = claim(Request("a", "gpu", count=2), Request("b", "gpu"),
              constraints=[Constraint(("a", "b"), match_attribute=f"{GPU}/root")])
    # a takes d0,d3 (x); b needs x too: none left, so a moves to y (d1,d2) and b gets... no third y.
    assert run([c], [local(devs)]).message.startswith("claim c: a: constraint matchAttribute")
    devs = devices(5, root=lambda i: "x" if i in (0, 3) else "y")
    assert names(run([c], [local(devs)])) == ["d1", "d2", "d4"]


def test_match_attribute_requires_the_attribute() -> None:
    devs = (Device(GPU, "p", "plain"), Device(GPU, "p", "rooted", {"dra.k8s.io/pcieRoot": "r"}))
    c = claim(Request("r", "gpu"), constraints=[Constraint(("r",), match_attribute="dra.k8s.io/pcieRoot")])
    assert names(run([c], [local(devs)])) == ["rooted"]


def test_match_attribute_compares_typed_values() -> None:
    devs = (Device(GPU, "p", "a", {"v": 1}), Device(GPU, "p", "b", {"v": True}))
    c = claim(Request("r", "gpu", count=2), constraints=[Constraint(("r",), match_attribute=f"{GPU}/v")])
    assert not run([c], [local(devs)]).ok


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (Request("r", "nope"), "claim c: r: device class nope not found"),
        (Request("r", "broken"), "class broken: selector #0 on device gpu.example.com/p/d0: CEL runtime error: "
                                 "no such key: nope"),
        (Request("r", "bad-cel"), "claim c: r: CEL error: ERROR: <input>:1:"),
        (Request("r", "gpu", selectors=("foo",)), "claim c: r: CEL error: ERROR: <input>: undeclared reference"),
        (Request("r", "any", selectors=('device.attributes["gpu.example.com"].i == 1',)),
         "claim default/c: selector #0 on device gpu.example.com/p/d0: CEL runtime error: no such key: i"),
    ],
)
def test_errors_are_reported(request_: Request, message: str) -> None:
    out = run([claim(request_)], [local(devices(2))])
    assert not out.ok
    assert out.message.startswith(message), out.message


def test_a_runtime_cel_error_stops_the_attempt_once_the_search_reaches_the_device() -> None:
    devs = (Device(GPU, "p", "a"), Device(GPU, "p", "b", {"i": 1}))
    c = claim(Request("r", "gpu", selectors=('device.attributes["gpu.example.com"].i == 1',)))
    out = run([c], [local(devs)])
    assert out.error
    assert out.message == ("claim default/c: selector #0 on device gpu.example.com/p/a: CEL runtime error: "
                           "no such key: i")
    # a device in use is skipped before its selectors are evaluated, as upstream
    assert names(run([c], [local(devs)], allocated=[(GPU, "p", "a")])) == ["b"]
    # a device after the solution is never evaluated
    assert names(run([c], [local(tuple(reversed(devs)))])) == ["b"]


@pytest.mark.parametrize(
    ("requests", "message"),
    [
        ((Request("r", "gpu", allocation_mode=ALL),),
         "claim default/c: number of requested devices 40 exceeds the claim limit of 32"),
        ((Request("r", "gpu", count=33),),
         "claim default/c: number of requested devices 33 exceeds the claim limit of 32"),
        ((Request("a", "gpu", count=20), Request("b", "gpu", count=20)),
         "claim default/c: number of requested devices 40 exceeds the claim limit of 32"),
    ],
)
def test_at_most_32_devices_per_claim(requests: tuple[Request, ...], message: str) -> None:
    out = run([claim(*requests)], [local(devices(40))])
    assert out.message == message


def test_32_devices_cap_counts_the_chosen_alternative() -> None:
    request = Request("r", first_available=(SubRequest("many", "gpu", count=33), SubRequest("few", "gpu", count=2)))
    out = run([claim(request)], [local(devices(40))])
    assert out.results is not None and out.score == 1


class JumpingClock:
    """now() is 0 for the first `calls` readings, then far past any deadline."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        return 0.0 if self.readings <= self.calls else 1e9


def test_deadline_stops_the_search_cleanly() -> None:
    # 30 devices with 2 numa values, 3 distinct wanted: the search tries every combination.
    devs = devices(30, numa=lambda i: i % 2)
    c = claim(Request("r", "gpu", count=3), constraints=[Constraint((), distinct_attribute=f"{GPU}/numa")])
    clock = JumpingClock(calls=2)
    out = allocate([c], Node("n1"), [local(devs)], CLASSES, frozenset(), deadline=10.0, now=clock)
    assert out.timed_out and out.results is None and out.message == TIMED_OUT
    assert clock.readings == 3
    # without the jump the same search completes and explains
    out = allocate([c], Node("n1"), [local(devs)], CLASSES, frozenset(), deadline=10.0, now=lambda: 0.0)
    assert not out.timed_out and "distinctAttribute" in out.message


def test_deadline_already_passed() -> None:
    out = allocate([claim(Request("r", "gpu"))], Node("n1"), [local(devices(1))], CLASSES, frozenset(),
                   deadline=1.0, now=lambda: 2.0)
    assert out.timed_out


def test_no_claims_is_trivially_satisfied() -> None:
    out = run([], [local(devices(1))])
    assert out.results == () and out.score == 0


def test_inventory_is_reusable_and_keyed_by_class_content() -> None:
    inventory = Inventory(N1, [local(devices(3, i=lambda i: i))])
    c = claim(Request("r", "gpu"))
    assert names(allocate([c], N1, inventory, CLASSES, frozenset())) == ["d0"]
    assert names(allocate([c], N1, inventory, CLASSES, frozenset({(GPU, "p", "d0")}))) == ["d1"]
    changed = {"gpu": DeviceClass("gpu", ('device.attributes["gpu.example.com"].i == 2',))}
    assert names(allocate([c], N1, inventory, changed, frozenset())) == ["d2"]
    with pytest.raises(ValueError, match="inventory is for node n1, not n2"):
        allocate([c], Node("n2"), inventory, CLASSES, frozenset())


def test_failure_without_explanation() -> None:
    out = allocate([claim(Request("r", "gpu", count=2))], N1, [local(devices(1))], CLASSES, frozenset(),
                   explain_failure=False)
    assert not out.ok and out.message == DOES_NOT_FIT
