"""Property test: any allocation satisfies every selector, constraint and count and never reuses a
device; and a brute-force oracle over tiny inputs agrees on feasibility and on the preferred
(lexicographically first) choice of firstAvailable alternatives."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodeagent.cel.selectors import compile_selector
from nodeagent.controlplane.allocator import (
    ALL,
    EXACT_COUNT,
    Claim,
    Constraint,
    Device,
    DeviceClass,
    DeviceId,
    Node,
    Request,
    ResourceSlice,
    SubRequest,
    allocate,
)

D = "gpu.example.com"
GiB = 2**30
CLASSES = {
    "any": DeviceClass("any"),
    "a1": DeviceClass("a1", (f'device.attributes["{D}"].a == 1',)),
    "big": DeviceClass("big", (f'device.capacity["{D}"].mem.compareTo(quantity("2Gi")) >= 0',)),
}
SELECTORS = ((), (f'device.attributes["{D}"].b == "x"',), (f'device.attributes["{D}"].a != 2',))
NODE = Node("n1")


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[ResourceSlice], list[Claim], frozenset[DeviceId]]:
    n = draw(st.integers(0, 5))
    devices = []
    for i in range(n):
        pool = draw(st.sampled_from(["p", "q"]))
        attrs: dict[str, str | int | bool] = {"a": draw(st.integers(0, 2)), "b": draw(st.sampled_from(["x", "y"]))}
        devices.append(Device(D, pool, f"d{i}", attrs, {"mem": draw(st.sampled_from([1, 2, 4])) * GiB}))
    slices = []
    for pool in ("p", "q"):
        mine = tuple(d for d in devices if d.pool == pool)
        node = draw(st.sampled_from(["n1", "n1", "n2"]))
        slices.append(ResourceSlice(f"s-{pool}", D, pool, mine, node_name=node))
    allocated = frozenset(d.id for d in devices if draw(st.booleans()) and draw(st.booleans()))
    claims = []
    for ci in range(draw(st.integers(1, 2))):
        requests = []
        for ri in range(draw(st.integers(1, 2))):
            def spec() -> tuple[str, tuple[str, ...], str, int]:
                mode = draw(st.sampled_from([EXACT_COUNT, EXACT_COUNT, ALL]))
                return (draw(st.sampled_from(sorted(CLASSES))), draw(st.sampled_from(SELECTORS)), mode,
                        draw(st.integers(1, 2)))
            if draw(st.booleans()):
                cls, sel, mode, count = spec()
                requests.append(Request(f"r{ri}", cls, sel, mode, count, admin_access=draw(st.booleans())))
            else:
                subs = []
                for si in range(draw(st.integers(1, 3))):
                    cls, sel, mode, count = spec()
                    subs.append(SubRequest(f"s{si}", cls, sel, mode, count))
                requests.append(Request(f"r{ri}", first_available=tuple(subs)))
        constraints = []
        if draw(st.booleans()):
            named = draw(st.lists(st.sampled_from([r.name for r in requests]), unique=True, max_size=2))
            if draw(st.booleans()):
                constraints.append(Constraint(tuple(named), match_attribute=f"{D}/a"))
            else:
                constraints.append(Constraint(tuple(named), distinct_attribute=f"{D}/b"))
        claims.append(Claim("ns", f"c{ci}", f"u{ci}", tuple(requests), tuple(constraints)))
    return slices, claims, allocated


def visible(slices: Sequence[ResourceSlice]) -> list[Device]:
    return [d for s in slices if s.node_name == NODE.name for d in s.devices]


def selected(device: Device, cls: str, selectors: Sequence[str]) -> bool:
    return all(compile_selector(e).evaluate(device.view) is True for e in (*CLASSES[cls].selectors, *selectors))


def options(req: Request) -> list[tuple[str, int, str, tuple[str, ...], str, int]]:
    if not req.first_available:
        return [(req.name, 0, req.device_class_name, req.selectors, req.allocation_mode, req.count)]
    return [(f"{req.name}/{s.name}", i, s.device_class_name, s.selectors, s.allocation_mode, s.count)
            for i, s in enumerate(req.first_available)]


def constraint_ok(claim: Claim, chosen: dict[str, list[Device]]) -> bool:
    for c in claim.constraints:
        devs = [d for name, ds in chosen.items() for d in ds
                if not c.requests or name in c.requests or name.split("/")[0] in c.requests]
        attr = c.match_attribute or c.distinct_attribute
        assert attr is not None
        values = [d.attribute(attr) for d in devs]
        if any(v is None for v in values):
            return False
        if c.match_attribute and len({(type(v), v) for v in values}) > 1:
            return False
        if c.distinct_attribute and len({(type(v), v) for v in values}) < len(values):
            return False
    return True


def _usable(combo: Sequence[tuple[int, str, bool, list[Device]]], owners: Sequence[int]) -> bool:
    """Upstream's in-use rule, applied in search order: a device is never twice in one claim; an
    ordinary request needs a device no other request of the pod took; an admin request may take one
    another claim took before it."""
    users: dict[DeviceId, set[int]] = {}
    for (_, _, admin, ds), owner in zip(combo, owners, strict=True):
        for d in ds:
            have = users.setdefault(d.id, set())
            if owner in have or (have and not admin):
                return False
            have.add(owner)
    return True


ERROR: tuple[int, ...] = (-1,)
"""The oracle's answer when upstream aborts the claim: an allocationMode All request reached a device
that a claim constraint refuses ("cannot add device ... because a claim constraint would not be
satisfied"), which is an error, not a reason to try the next alternative."""


def oracle(slices: Sequence[ResourceSlice], claims: Sequence[Claim], allocated: frozenset[DeviceId]
           ) -> tuple[int, ...] | None:
    """The alternative indices of the first valid allocation in upstream's search order: requests in
    order, per request its alternatives in order, each with its device combinations in order; a
    depth-first search that prunes a partial choice as soon as it breaks the in-use rule or a
    constraint (both hold for a whole choice only if they hold for every part of it), and ERROR
    where upstream aborts."""
    devs = visible(slices)
    slots = [(claim, req) for claim in claims for req in claim.requests]
    owners = [next(i for i, c in enumerate(claims) if c is claim) for claim, _ in slots]
    per_slot: list[list[tuple[int, str, bool, list[Device], bool]]] = []
    for _, req in slots:
        choices: list[tuple[int, str, bool, list[Device], bool]] = []
        for k, (name, _, cls, sel, mode, count) in enumerate(options(req)):
            match = [d for d in devs if selected(d, cls, sel)]
            usable = match if req.admin_access else [d for d in match if d.id not in allocated]
            if mode == ALL:
                if match and len(usable) == len(match):
                    choices.append((k, name, req.admin_access, usable, True))
            else:
                choices.extend((k, name, req.admin_access, list(c), False)
                               for c in itertools.combinations(usable, count))
        per_slot.append(choices)

    def fits(prefix: list[tuple[int, str, bool, list[Device]]], claim: Claim) -> bool:
        chosen = {name: ds for (c, _), (_, name, _, ds) in zip(slots, prefix, strict=False) if c is claim}
        return constraint_ok(claim, chosen) and sum(map(len, chosen.values())) <= 32

    def search(prefix: list[tuple[int, str, bool, list[Device]]]) -> tuple[int, ...] | None:
        i = len(prefix)
        if i == len(slots):
            return tuple(k for k, _, _, _ in prefix)
        claim = slots[i][0]
        for k, name, admin, ds, all_mode in per_slot[i]:
            if all_mode:  # devices one by one: in use -> not this alternative; a constraint -> abort
                taken = True
                for j in range(len(ds)):
                    part = [*prefix, (k, name, admin, ds[: j + 1])]
                    if not _usable(part, owners[: i + 1]):
                        taken = False
                        break
                    if not constraint_ok(claim, {n: d for (c, _), (_, n, _, d) in
                                                 zip(slots, part, strict=False) if c is claim}):
                        return ERROR
                if not taken or not fits([*prefix, (k, name, admin, ds)], claim):
                    continue
            elif not _usable([*prefix, (k, name, admin, ds)], owners[: i + 1]) or not fits(
                    [*prefix, (k, name, admin, ds)], claim):
                continue
            found = search([*prefix, (k, name, admin, ds)])
            if found is not None:
                return found
        return None

    return search([])


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_allocations_are_valid_and_agree_with_the_oracle(
    world: tuple[list[ResourceSlice], list[Claim], frozenset[DeviceId]],
) -> None:
    slices, claims, allocated = world
    outcome = allocate(claims, NODE, slices, CLASSES, allocated)
    expected = oracle(slices, claims, allocated)
    if expected == ERROR:
        assert not outcome.ok and outcome.message and outcome.results is None, outcome.message
        return
    assert outcome.ok == (expected is not None), outcome.message
    if outcome.results is None:
        assert outcome.message
        return
    assert expected is not None
    assert outcome.score == sum(expected)
    by_id = {d.id: d for d in visible(slices)}
    used: list[DeviceId] = []
    vector: list[int] = []
    for claim, result in zip(claims, outcome.results, strict=True):
        assert len(result.devices) <= 32
        chosen: dict[str, list[Device]] = {}
        for req in claim.requests:
            got = [d for d in result.devices if d.request.split("/")[0] == req.name]
            names = {d.request for d in got}
            assert len(names) <= 1
            opts = {o[0]: o for o in options(req)}
            name = names.pop() if names else next(iter(opts))
            full, index, cls, sel, mode, count = opts[name]
            vector.append(index)
            devices = [by_id[d.id] for d in got]
            for d in devices:
                assert selected(d, cls, sel)
                assert d.id not in allocated or req.admin_access
            if mode == ALL:
                assert {d.id for d in devices} == {d.id for d in by_id.values() if selected(d, cls, sel)}
            else:
                assert len(devices) == count
            assert all(d.admin_access == req.admin_access for d in got)
            used.extend(d.id for d in got)
            chosen[full] = devices
        assert constraint_ok(claim, chosen)
        assert len(used) == len(set(used)), "a device was allocated twice in one claim"
        used.clear()
    assert tuple(vector) == expected
