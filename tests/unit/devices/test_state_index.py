"""DeviceState's kept-ready answers (held index, free NUMA histogram, device order) always
equal what a full scan of every allocation and device would give, over random sequences of
plugin snapshots, disconnects, expiries, allocations, restores and releases, with resources
registering on their own plugin socket or taking over another resource's (devices held under
any resource of an endpoint are taken for every resource of it)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nodeagent.devices.allocation import device_order, numa_counts
from nodeagent.devices.model import ContainerRef, Device, PluginOptions, ResourceAllocation
from nodeagent.devices.snapshot import DeviceSnapshot
from nodeagent.devices.state import DeviceState, PodAllocations

RESOURCES = ["example.com/gpu", "example.com/nic"]
IDS = ["d10", "d9", "d2", "a", "b1"]
UIDS = ["u1", "u2", "u3"]

devices = st.lists(
    st.builds(Device, st.sampled_from(IDS), st.sampled_from(["Healthy", "Unhealthy"]),
              st.sampled_from([(), (0,), (1,), (0, 1)])),
    max_size=len(IDS), unique_by=lambda d: d.id,
)
ops = st.one_of(
    st.tuples(st.just("register"), st.sampled_from(RESOURCES), st.sampled_from(["/a.sock", "/b.sock"])),
    st.tuples(st.just("update"), st.sampled_from(RESOURCES), devices),
    st.tuples(st.just("flip"), st.sampled_from(RESOURCES), st.lists(st.sampled_from(IDS), max_size=3)),
    st.tuples(st.just("disconnect"), st.sampled_from(RESOURCES)),
    st.tuples(st.just("expire"), st.sampled_from(RESOURCES)),
    st.tuples(st.just("restore_resource"), st.sampled_from(RESOURCES)),
    st.tuples(st.just("add"), st.sampled_from(UIDS), st.sampled_from(["init", "main"]),
              st.sampled_from(RESOURCES), st.lists(st.sampled_from(IDS), max_size=3, unique=True)),
    st.tuples(st.just("remove"), st.sampled_from(UIDS)),
    st.tuples(st.just("restore_pod"), st.sampled_from(UIDS), st.sampled_from(RESOURCES),
              st.lists(st.sampled_from(IDS), max_size=2, unique=True)),
)


def _register(state: DeviceState, endpoints: dict[str, str], resource: str, endpoint: str) -> None:
    """What the endpoints layer does: take the socket over, then register; the model keeps
    each resource's socket while it is known or held."""
    for name in state.take_endpoint(resource, endpoint):
        if not _own_used(state, name):
            endpoints.pop(name, None)
    state.register(resource, endpoint, PluginOptions())
    endpoints[resource] = endpoint


def _apply(state: DeviceState, endpoints: dict[str, str], op: tuple[Any, ...]) -> None:
    kind = op[0]
    for name in list(endpoints):
        if name not in state.resources and not _own_used(state, name):
            endpoints.pop(name)
    if kind == "register":
        _register(state, endpoints, str(op[1]), str(op[2]))
    elif kind == "update":
        state.update_devices(op[1], op[2])
    elif kind == "flip":  # the same snapshot with some devices' health switched (the in-place path)
        rs = state.resources.get(str(op[1]))
        if rs is not None:
            flipped = set(op[2])

            def flip(d: Device) -> Device:
                return Device(d.id, ("Unhealthy" if d.healthy else "Healthy") if d.id in flipped else d.health,
                              d.numa_nodes)

            if rs.source is not None and len(flipped) % 2:  # as the plugin client says it: what moved since
                new = [flip(d) for d in rs.source]
                moved = tuple(n for n, o in zip(new, rs.source, strict=True) if n.health != o.health)
                state.update_devices(rs.name, DeviceSnapshot(new, base=rs.source, moved=moved))
            else:
                state.update_devices(rs.name, [flip(d) for d in reversed(list(rs.devices.values()))])
    elif kind == "disconnect":
        state.disconnect(str(op[1]), now=1.0)
    elif kind == "expire":
        rs = state.resources.get(str(op[1]))
        if rs is not None:
            state.expire(rs.name, rs.epoch)
    elif kind == "restore_resource":
        state.restore_resource(str(op[1]), now=1.0)
    elif kind == "add":
        _, uid, container, resource, ids = op
        state.add(ContainerRef(uid, container), ResourceAllocation(resource, tuple(ids)))
    elif kind == "remove":
        state.remove_pod(str(op[1]))
    elif kind == "restore_pod":
        _, uid, resource, ids = op
        pod = PodAllocations(uid)
        pod.containers["main"] = {resource: ResourceAllocation(resource, tuple(ids))}
        state.restore_pod(pod)


def _own_used(state: DeviceState, resource: str) -> set[str]:
    return {
        i
        for pod in state.pods.values()
        for per_resource in pod.containers.values()
        for r, alloc in per_resource.items()
        if r == resource
        for i in alloc.device_ids
    }


def _check(state: DeviceState, endpoints: dict[str, str]) -> None:
    for name in list(endpoints):
        if name not in state.resources and not _own_used(state, name):
            endpoints.pop(name)
    for resource in RESOURCES:
        assert state.in_use(resource) == _own_used(state, resource)
        used = set(_own_used(state, resource))
        for other, endpoint in endpoints.items():
            if other != resource and endpoint == endpoints.get(resource):
                used |= _own_used(state, other)
        rs = state.resources.get(resource)
        all_devs = [] if rs is None else list(rs.devices.values())
        assert all_devs == sorted(all_devs, key=device_order)
        healthy = [d for d in all_devs if d.healthy] if rs is not None and rs.connected else []
        free = [d for d in healthy if d.id not in used]
        assert state.free_healthy(resource) == free
        assert state.free_numa_histogram(resource) == numa_counts(free)
        assert state.numa_histogram(resource) == numa_counts(all_devs)
        if rs is not None:
            assert state.allocatable()[resource] == len(healthy)
        for nodes in (frozenset({0}), frozenset({1}), frozenset({0, 1})):
            on = state.iter_free_healthy_on(resource, nodes)
            if rs is not None and rs.connected and any(len(d.numa_nodes) > 1 for d in all_devs):
                assert on is None  # a device spans nodes: only the full walk finds every aligned one
            else:
                assert on is not None
                assert list(on) == [d for d in free if nodes.intersection(d.numa_nodes)]


@settings(deadline=None)
@given(devices, devices, st.lists(ops, max_size=25))
def test_kept_answers_match_a_full_scan(
    gpus: list[Device], nics: list[Device], sequence: list[tuple[Any, ...]]
) -> None:
    state = DeviceState(splice_min=0)  # health changes spliced into the healthy tuple even for these few
    endpoints: dict[str, str] = {}
    for resource, devs, endpoint in zip(RESOURCES, (gpus, nics), ("/a.sock", "/b.sock"), strict=True):
        _register(state, endpoints, resource, endpoint)
        state.update_devices(resource, devs)
    _check(state, endpoints)
    for op in sequence:
        _apply(state, endpoints, op)
        _check(state, endpoints)
