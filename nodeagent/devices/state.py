"""The device manager's in-memory state: devices per resource and who holds which device.

Pure and synchronous (no I/O, no grpc, no clock reads: callers pass `now`). It answers
the questions every other part asks (capacity, allocatable, free healthy devices, the
health a holder sees) so that those rules live in one place:

* capacity = every device the plugin reported; allocatable = healthy devices while a
  plugin stream is live, 0 once it ended (the kubelet marks them unhealthy);
* a device id appears in at most one pod's allocation, except that a pod's app
  containers may reuse its finished init containers' devices (kubelet behaviour);
* a held device's health is Unknown while its plugin is gone or no longer reports it;
* a plugin is its socket path: one endpoint serves one resource at a time (a registration of
  another resource there replaces the old one, see `take_endpoint`), and a device id held
  under one resource of an endpoint is never free under another resource of that endpoint,
  so one device of one plugin is never handed out under two resource names.

Admission asks "which healthy devices are free" for every pod, so the answer is kept
ready rather than rebuilt from every allocation: devices are stored in
allocation.device_order with their NUMA histogram (both computed once per ListAndWatch
snapshot), and the held device ids and the NUMA histogram of the free healthy devices
are kept up to date by `add`/`restore_pod`/`remove_pod`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from nodeagent.devices.allocation import device_order, numa_counts
from nodeagent.devices.model import (
    HEALTHY,
    UNHEALTHY,
    UNKNOWN,
    ContainerRef,
    Device,
    PluginOptions,
    ResourceAllocation,
    ResourceSummary,
)
from nodeagent.devices.snapshot import DeviceSnapshot


@dataclass
class ResourceState:
    """One extended resource served by (at most) one plugin endpoint."""

    name: str
    devices: dict[str, Device] = field(default_factory=dict)  # in allocation.device_order
    numa: dict[tuple[int, ...], int] = field(default_factory=dict)  # NUMA histogram of `devices`
    healthy: tuple[Device, ...] = ()  # the healthy ones of `devices`, in the same order
    free_numa: dict[tuple[int, ...], int] = field(default_factory=dict)  # NUMA histogram of free_healthy
    endpoint: str = ""  # plugin socket path
    options: PluginOptions = field(default_factory=PluginOptions)
    connected: bool = False  # registered and its stream not ended
    stopped_at: float | None = None  # monotonic time the stream ended
    epoch: int = 0  # bumped on every registration and stop, to spot stale callbacks
    # DeviceState.generation when `devices` was last replaced: equal only while every id keeps
    # its NUMA nodes (health-only snapshots leave it), for readers caching per-device answers
    layout: int = 0
    source: Sequence[Device] | None = None  # the snapshot `devices` was last set from (see update_devices)
    # NUMA node -> index into `healthy`: the devices of that node's run before it are all held.
    # A hint for iter_free_healthy_on, which would otherwise skip every held device of the node
    # on each admission; lowered when a device there is freed, dropped when `healthy` changes.
    free_from: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SnapshotChange:
    """What a ListAndWatch snapshot changed: the device layout (ids, NUMA nodes) or only health."""

    layout: bool = False
    health: tuple[str, ...] = ()  # ids whose health changed (when the layout did not)

    @property
    def changed(self) -> bool:
        return self.layout or bool(self.health)


@dataclass
class PodAllocations:
    uid: str
    namespace: str = ""
    name: str = ""
    # container -> resource -> allocation
    containers: dict[str, dict[str, ResourceAllocation]] = field(default_factory=dict)


class DeviceState:
    def __init__(self, splice_min: int = 256) -> None:
        """`splice_min`: resources of more devices than this have health changes spliced into
        their healthy tuple (see _healthy_after); smaller ones rebuild it, which is cheaper."""
        self._splice_min = splice_min
        # Bumped on every change, so readers (pod-resources) can reuse answers until it moves.
        self.generation = 0
        self.resources: dict[str, ResourceState] = {}
        # Change through add / restore_pod / remove_pod only: they keep the held-device index.
        self.pods: dict[str, PodAllocations] = {}
        # resource -> device id -> how many container allocations hold it (a pod's app
        # containers may reuse its init containers' devices, so a count, not a flag)
        self._held: dict[str, dict[str, int]] = {}
        # resource -> plugin socket path, kept while the resource is known or any of it is held,
        # so devices held under a replaced resource stay taken for the endpoint's new resource
        self._endpoint_of: dict[str, str] = {}
        # How many generation bumps were health-only snapshots (see listing_generation).
        self._health_only = 0

    def reset(self) -> None:
        """Forget everything (a simulated kubelet restart, before restoring from the checkpoint); the
        generation moves on, so readers never take the restored state for an older answer."""
        generation, splice_min = self.generation + 1, self._splice_min
        self.__dict__.clear()
        DeviceState.__init__(self, splice_min)
        self.generation = generation

    # ------------------------------------------------------------------ plugins

    def register(self, resource: str, endpoint: str, options: PluginOptions) -> ResourceState:
        """A plugin registered: it owns the resource from now on (the newest one wins)."""
        self.generation += 1
        rs = self.resources.get(resource)
        if rs is None:
            rs = self.resources[resource] = ResourceState(resource)
        rs.endpoint = endpoint
        self._endpoint_of[resource] = endpoint
        rs.options = options
        rs.connected = True
        rs.stopped_at = None
        rs.epoch += 1
        # The endpoint may have changed, and with it which holds count against whom (here and
        # at the endpoint it left): recount every resource's free devices (registrations are rare).
        for each in self.resources.values():
            self._set_devices(each, each.devices)
        return rs

    def take_endpoint(self, resource: str, endpoint: str) -> list[str]:
        """`resource` registers at `endpoint`: drop every other resource registered there.

        The kubelet keys plugins by resource, and a socket serves one DevicePlugin: the newest
        registration on an endpoint owns it, so the devices it lists are never counted under
        two names. The dropped resources leave capacity at once (their plugin now serves
        `resource`); what pods hold of them stays held, and stays out of `resource`'s free devices.
        Returns the dropped resource names.
        """
        dropped = sorted(
            name for name, rs in self.resources.items() if name != resource and rs.endpoint == endpoint
        )
        for name in dropped:
            self.generation += 1
            del self.resources[name]
            if not self._held.get(name):
                self._endpoint_of.pop(name, None)
        return dropped

    def update_devices(self, resource: str, devices: Sequence[Device]) -> SnapshotChange:
        """A ListAndWatch snapshot: the complete device list replaces the old one.

        A plugin of 100,000 devices sends all of them for every health change of one; sorting
        and recounting them each time once held the event loop ~0.8 s per snapshot. So when the
        snapshot has the same ids on the same NUMA nodes as before (a health change, or none),
        only the devices whose health moved are touched, in place (the order stays valid), and
        the listing generation (see `listing_generation`) does not move. Any other snapshot is
        sorted and counted afresh.
        """
        rs = self.resources.get(resource)
        if rs is None or not rs.connected:
            self.generation += 1
            return SnapshotChange(layout=True)
        source, rs.source = rs.source, devices
        if isinstance(devices, DeviceSnapshot) and devices.moved is not None and source is not None \
                and devices.base is source and len(devices) == len(rs.devices):  # (no duplicate ids)
            # the plugin client already knows what moved since the snapshot applied last
            self._set_health(rs, devices.moved)
            return SnapshotChange(health=tuple(d.id for d in devices.moved))
        old = rs.devices
        new = {d.id: d for d in devices}
        if len(new) == len(devices) == len(old):  # no duplicate ids, same count: maybe same layout
            moved: list[Device] = []
            for d in devices:
                was = old.get(d.id)
                if was is None or was.numa_nodes != d.numa_nodes:
                    break
                if was.health != d.health:
                    moved.append(d)
            else:
                self._set_health(rs, moved)
                return SnapshotChange(health=tuple(d.id for d in moved))
        self.generation += 1
        self._set_devices(rs, {d.id: d for d in sorted(devices, key=device_order)})
        return SnapshotChange(layout=True)

    def _set_health(self, rs: ResourceState, moved: Sequence[Device]) -> None:
        """Only the health of `moved` changed: replace them in place, adjust the kept answers."""
        if not moved:
            return  # an identical snapshot: nothing any reader sees changed
        self.generation += 1
        self._health_only += 1
        held = self._held_ids(rs)
        was_healthy = {d.id: rs.devices[d.id].healthy for d in moved}
        for d in moved:
            rs.devices[d.id] = d  # an existing key keeps its place: the order stays valid
            if d.healthy != was_healthy[d.id] and d.id not in held:
                delta = 1 if d.healthy else -1
                left = rs.free_numa.get(d.numa_nodes, 0) + delta
                if left > 0:
                    rs.free_numa[d.numa_nodes] = left
                else:
                    rs.free_numa.pop(d.numa_nodes, None)
        rs.healthy = _healthy_after(rs, moved, was_healthy, self._splice_min)
        rs.free_from = {}

    def listing_generation(self) -> int:
        """Like `generation`, but unmoved by health-only snapshots: what pod-resources List shows
        (allocations, device ids and NUMA nodes) can only have changed when this moves."""
        return self.generation - self._health_only

    def _set_devices(self, rs: ResourceState, devices: dict[str, Device]) -> None:
        rs.devices = devices
        rs.layout = self.generation
        rs.numa = numa_counts(devices.values())
        rs.healthy = tuple(d for d in devices.values() if d.healthy)
        rs.free_from = {}
        held = self._held_ids(rs)
        rs.free_numa = numa_counts(d for d in rs.healthy if d.id not in held)

    def _held_ids(self, rs: ResourceState) -> Mapping[str, int] | set[str]:
        """Device ids taken for `rs`: its own holds plus those of other resources of its endpoint."""
        own = self._held.get(rs.name, {})
        siblings = self._siblings(rs.name)
        if not siblings:
            return own
        out = set(own)
        for name in siblings:
            out.update(self._held.get(name, ()))
        return out

    def _siblings(self, resource: str) -> list[str]:
        """Other resources (known or still held) whose plugin socket is `resource`'s."""
        endpoint = self._endpoint_of.get(resource)
        if not endpoint:
            return []
        return [r for r, e in self._endpoint_of.items() if e == endpoint and r != resource]

    def disconnect(self, resource: str, now: float) -> None:
        """The plugin's stream ended: every device unhealthy, capacity kept for the grace period."""
        self.generation += 1
        rs = self.resources.get(resource)
        if rs is None or not rs.connected:
            return
        rs.connected = False
        rs.stopped_at = now
        rs.epoch += 1
        rs.source = None
        self._set_devices(rs, {i: Device(d.id, UNHEALTHY, d.numa_nodes) for i, d in rs.devices.items()})

    def restore_resource(self, resource: str, now: float) -> None:
        """After a restart: a resource known before, stopped until its plugin registers again."""
        self.generation += 1
        if resource not in self.resources:
            self.resources[resource] = ResourceState(resource, stopped_at=now)

    def expire(self, resource: str, epoch: int) -> bool:
        """Drop a resource whose grace period ran out, unless it re-registered meanwhile."""
        self.generation += 1
        rs = self.resources.get(resource)
        if rs is None or rs.connected or rs.epoch != epoch:
            return False
        del self.resources[resource]
        if not self._held.get(resource):
            self._endpoint_of.pop(resource, None)
        return True

    def is_device_resource(self, resource: str) -> bool:
        return resource in self.resources

    # ------------------------------------------------------------------ figures

    def capacity(self) -> dict[str, int]:
        return {name: len(rs.devices) for name, rs in self.resources.items()}

    def allocatable(self) -> dict[str, int]:
        return {name: (len(rs.healthy) if rs.connected else 0) for name, rs in self.resources.items()}

    def healthy_devices(self, resource: str) -> list[Device]:
        rs = self.resources.get(resource)
        if rs is None or not rs.connected:
            return []
        return list(rs.healthy)

    def all_devices(self, resource: str) -> list[Device]:
        rs = self.resources.get(resource)
        return [] if rs is None else list(rs.devices.values())

    def device(self, resource: str, device_id: str) -> Device | None:
        rs = self.resources.get(resource)
        return None if rs is None else rs.devices.get(device_id)

    def numa_histogram(self, resource: str) -> Mapping[tuple[int, ...], int]:
        """How many devices (healthy or not) sit on each NUMA node set, for topology hints."""
        rs = self.resources.get(resource)
        return {} if rs is None else rs.numa

    def free_numa_histogram(self, resource: str) -> Mapping[tuple[int, ...], int]:
        """allocation.numa_counts(free_healthy(resource)), kept up to date instead of recounted."""
        rs = self.resources.get(resource)
        return {} if rs is None else rs.free_numa

    def summaries(self) -> list[ResourceSummary]:
        out = []
        for name in sorted(self.resources):
            rs = self.resources[name]
            healthy = len(rs.healthy)
            out.append(
                ResourceSummary(
                    resource=name,
                    capacity=len(rs.devices),
                    allocatable=healthy if rs.connected else 0,
                    healthy=healthy if rs.connected else 0,
                    unhealthy=len(rs.devices) - (healthy if rs.connected else 0),
                    allocated=len(self.in_use(name)),
                    registered=rs.connected,
                    endpoint=rs.endpoint,
                )
            )
        return out

    def device_health(self, resource: str, device_id: str) -> str:
        """Health as a holder sees it: Unknown while the plugin is gone or the device vanished."""
        rs = self.resources.get(resource)
        if rs is None or not rs.connected:
            return UNKNOWN
        dev = rs.devices.get(device_id)
        return UNKNOWN if dev is None else dev.health

    def numa_nodes(self, resource: str, device_id: str) -> tuple[int, ...]:
        rs = self.resources.get(resource)
        dev = None if rs is None else rs.devices.get(device_id)
        return () if dev is None else dev.numa_nodes

    # ------------------------------------------------------------------ allocations

    def in_use(self, resource: str) -> set[str]:
        return set(self._held.get(resource, ()))

    def held_counts(self) -> dict[str, int]:
        """How many devices pods hold, per resource (no copies: admission asks once per pod)."""
        return {name: len(ids) for name, ids in self._held.items() if ids}

    def free_healthy(self, resource: str) -> list[Device]:
        """Healthy devices no pod holds, in allocation.device_order."""
        rs = self.resources.get(resource)
        if rs is None or not rs.connected:
            return []
        held = self._held_ids(rs)
        if not held:
            return list(rs.healthy)
        return [d for d in rs.healthy if d.id not in held]

    def iter_free_healthy(self, resource: str) -> Iterator[Device]:
        """`free_healthy` lazily (admission usually needs only the first few), with their count."""
        rs = self.resources.get(resource)
        if rs is None or not rs.connected:
            return
        held = self._held_ids(rs)
        for d in rs.healthy:
            if d.id not in held:
                yield d

    def iter_free_healthy_on(self, resource: str, nodes: frozenset[int]) -> Iterator[Device] | None:
        """`iter_free_healthy` restricted to the devices on NUMA nodes `nodes`, or None when the
        resource has devices spanning several NUMA nodes (then only a walk of all finds them).

        Devices are kept in device_order, by their NUMA node first, so the devices of one node
        are a run found by bisection: an admission aligned to the second node no longer walks
        every free device of the first (hundreds on a large node) to reach them.
        """
        rs = self.resources.get(resource)
        if rs is None or not rs.connected:
            return iter(())
        if any(len(n) > 1 for n in rs.numa):
            return None
        return self._free_on(rs, sorted(nodes))

    def _free_on(self, rs: ResourceState, nodes: list[int]) -> Iterator[Device]:
        held = self._held_ids(rs)
        healthy = rs.healthy
        for node in nodes:
            start = bisect.bisect_left(healthy, node, key=_first_numa)
            end = bisect.bisect_left(healthy, node + 1, lo=start, key=_first_numa)
            i = max(start, rs.free_from.get(node, start))
            while i < end and healthy[i].id in held:
                i += 1
            rs.free_from[node] = i
            for d in healthy[i:end]:
                if d.id not in held:
                    yield d

    def free_count(self, resource: str) -> int:
        """len(free_healthy(resource)), from the kept NUMA histogram."""
        rs = self.resources.get(resource)
        return 0 if rs is None or not rs.connected else sum(rs.free_numa.values())

    def add(self, ref: ContainerRef, alloc: ResourceAllocation) -> None:
        self.generation += 1
        pod = self.pods.get(ref.pod_uid)
        if pod is None:
            pod = self.pods[ref.pod_uid] = PodAllocations(ref.pod_uid, ref.namespace, ref.pod_name)
        per_resource = pod.containers.setdefault(ref.container, {})
        old = per_resource.get(alloc.resource)
        per_resource[alloc.resource] = alloc
        self._hold(alloc)  # before releasing the old one, so what stays held never looks free meanwhile
        if old is not None:
            self._release(old)

    def restore_pod(self, pod: PodAllocations) -> None:
        """A pod's allocations read back from the checkpoint (replacing any it had).

        The replacement is one step: a resource known only through the pod's old holds (its
        plugin's socket since taken over by another resource) keeps its endpoint, so what the
        pod holds again stays out of the free devices of the socket's new resource."""
        endpoints = dict(self._endpoint_of)
        self.remove_pod(pod.uid)
        self.pods[pod.uid] = pod
        for per_resource in pod.containers.values():
            for alloc in per_resource.values():
                if alloc.resource not in self._endpoint_of and alloc.resource in endpoints:
                    self._endpoint_of[alloc.resource] = endpoints[alloc.resource]
                self._hold(alloc)

    def remove_pod(self, pod_uid: str) -> PodAllocations | None:
        self.generation += 1
        pod = self.pods.pop(pod_uid, None)
        if pod is not None:
            for per_resource in pod.containers.values():
                for alloc in per_resource.values():
                    self._release(alloc)
        return pod

    def _hold(self, alloc: ResourceAllocation) -> None:
        held = self._held.setdefault(alloc.resource, {})
        rs = self.resources.get(alloc.resource)
        for i in alloc.device_ids:
            count = held.get(i, 0)
            held[i] = count + 1
            if count == 0 and rs is not None:
                self._count_free(rs, i, -1)
        self._refresh_siblings(alloc.resource)

    def _release(self, alloc: ResourceAllocation) -> None:
        held = self._held.get(alloc.resource)
        if held is None:
            return
        rs = self.resources.get(alloc.resource)
        for i in alloc.device_ids:
            left = held.get(i, 0) - 1
            if left > 0:
                held[i] = left
            elif held.pop(i, None) is not None and rs is not None:
                self._count_free(rs, i, +1)
        self._refresh_siblings(alloc.resource)
        if not held:
            del self._held[alloc.resource]
            if alloc.resource not in self.resources:
                self._endpoint_of.pop(alloc.resource, None)

    def _refresh_siblings(self, resource: str) -> None:
        """A hold of `resource` changed: recount the free devices of the other resources of its endpoint."""
        siblings = self._siblings(resource)
        for name in [resource, *siblings] if siblings else ():
            rs = self.resources.get(name)
            if rs is not None:
                self._set_devices(rs, rs.devices)

    @staticmethod
    def _count_free(rs: ResourceState, device_id: str, delta: int) -> None:
        """A device became held (-1) or free (+1): adjust the free histogram if it is healthy."""
        dev = rs.devices.get(device_id)
        if dev is None or not dev.healthy:
            return  # not in free_healthy either way (a disconnected plugin's devices are unhealthy)
        if delta > 0 and len(dev.numa_nodes) == 1 and dev.numa_nodes[0] in rs.free_from:
            at = bisect.bisect_left(rs.healthy, device_order(dev), key=device_order)
            node = dev.numa_nodes[0]
            rs.free_from[node] = min(rs.free_from[node], at)
        left = rs.free_numa.get(dev.numa_nodes, 0) + delta
        if left > 0:
            rs.free_numa[dev.numa_nodes] = left
        else:
            rs.free_numa.pop(dev.numa_nodes, None)

    def container_allocations(self, pod_uid: str, container: str) -> Mapping[str, ResourceAllocation]:
        pod = self.pods.get(pod_uid)
        return {} if pod is None else pod.containers.get(container, {})

    def holders(self, resource: str, device_ids: Iterable[str]) -> list[ContainerRef]:
        """Containers holding any of `device_ids` of `resource`, in a stable order."""
        wanted = set(device_ids)
        out = []
        for uid in sorted(self.pods):
            pod = self.pods[uid]
            for cname in sorted(pod.containers):
                alloc = pod.containers[cname].get(resource)
                if alloc is not None and wanted.intersection(alloc.device_ids):
                    out.append(ContainerRef(uid, cname, pod.namespace, pod.name))
        return out


_SPLICE_MAX = 64  # more health changes than this in one snapshot: rebuild the healthy tuple


def _first_numa(dev: Device) -> int:
    """The first component of allocation.device_order (devices without topology last)."""
    return min(dev.numa_nodes) if dev.numa_nodes else 1 << 30


def _healthy_after(
    rs: ResourceState, moved: Sequence[Device], was_healthy: Mapping[str, bool], splice_min: int
) -> tuple[Device, ...]:
    """rs.healthy after `moved` changed health in place (rs.devices already updated).

    Rebuilding it walks every device (~0.1 s for 100,000 on a busy node) for each flip of one, so
    a few changes are spliced in at their place in allocation.device_order, found by bisection;
    where that place is ambiguous (equal order keys) the tuple is rebuilt."""
    healthy: tuple[Device, ...] | None = rs.healthy
    if len(moved) <= _SPLICE_MAX and len(rs.devices) > splice_min:
        for d in moved:
            if healthy is None:
                break
            if d.healthy != was_healthy[d.id]:  # else Unhealthy <-> Unknown: not in the tuple either way
                healthy = _splice(healthy, d, insert=d.healthy)
        if healthy is not None:
            return healthy
    return tuple(d for d in rs.devices.values() if d.health == HEALTHY)  # Device.healthy, inlined


def _splice(healthy: tuple[Device, ...], dev: Device, insert: bool) -> tuple[Device, ...] | None:
    """`healthy` with `dev` inserted at (or removed from) its place; None when that place is ambiguous."""
    key = device_order(dev)
    lo = bisect.bisect_left(healthy, key, key=device_order)
    hi = bisect.bisect_right(healthy, key, lo=lo, key=device_order)
    if insert:
        return (*healthy[:lo], dev, *healthy[lo:]) if lo == hi else None
    return healthy[:lo] + healthy[hi:] if hi - lo == 1 and healthy[lo].id == dev.id else None
