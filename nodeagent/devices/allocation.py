"""Which devices a container gets: topology hints and candidate selection. Pure.

The kubelet's devicemanager generateDeviceTopologyHints, devicesToAllocate and
filterByAffinity. The device manager is one of the topology manager's hint providers
(cm/topologymanager merges the hints of CPU, memory and devices under its policy); here
are its hints and, given the merged affinity, its choice of devices. No I/O: the one
call that needs the plugin (GetPreferredAllocation) is split out, so admission does
`plan_ordered` -> optional plugin call -> `finish`.

Admission runs these on every pod, so the hot paths take what DeviceState keeps ready:
devices already in `device_order` and NUMA histograms (`numa_counts`) instead of whole
device lists. `plan_devices` is `plan_ordered` over plain device lists.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nodeagent.devices.model import Device
from nodeagent.pods.hints import TopologyHint, iterate_masks, mask_count, mask_of

# NUMA histogram of a resource's devices: how many devices sit on each NUMA node set
# (a device's numa_nodes; () = no topology).
NumaCounts = Mapping[tuple[int, ...], int]


def _natural_key(text: str) -> tuple[object, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def device_order(dev: Device) -> tuple[object, ...]:
    """Stable order: by first NUMA node (devices without topology last), then natural id."""
    numa = min(dev.numa_nodes) if dev.numa_nodes else 1 << 30
    return (numa, _natural_key(dev.id))


def numa_counts(devices: Iterable[Device]) -> dict[tuple[int, ...], int]:
    """The NUMA histogram of `devices`: all that topology hints need to know about them."""
    return dict(Counter(d.numa_nodes for d in devices))


def capped(counts: NumaCounts, request: int) -> tuple[tuple[tuple[int, ...], int], ...]:
    """A histogram with each count capped at `request`, hashable: all generate_hints can tell."""
    return tuple(sorted((numa, min(n, request)) for numa, n in counts.items() if n))


def has_topology(all_devices: NumaCounts) -> bool:
    """deviceHasTopologyAlignment: some device of the resource reports NUMA nodes."""
    return any(numa for numa, count in all_devices.items() if count)


def generate_hints(
    request: int,
    all_devices: NumaCounts,
    available: NumaCounts,
    reusable: Sequence[Device],
    nodes: Sequence[int],
) -> list[TopologyHint]:
    """generateDeviceTopologyHints: every NUMA mask whose devices can hold the request.

    A mask counts when every reusable device with topology is in it; it is preferred when
    it is as narrow as the resource's devices (all of them, used or not) allow.
    """
    min_size = len(nodes)
    masks: list[int] = []
    reusable_masks = [mask_of(d.numa_nodes) for d in reusable if d.numa_nodes]
    for mask in iterate_masks(nodes):
        in_mask = sum(n for numa, n in all_devices.items() if mask & mask_of(numa))
        if in_mask >= request and mask_count(mask) < min_size:
            min_size = mask_count(mask)
        if any(not mask & r for r in reusable_masks):
            continue
        matching = len(reusable_masks) + sum(n for numa, n in available.items() if mask & mask_of(numa))
        if matching >= request:
            masks.append(mask)
    return [TopologyHint(m, mask_count(m) == min_size) for m in masks]


@dataclass(frozen=True)
class Selection:
    """Half-made choice for one (container, resource), waiting for the plugin's preference.

    `chosen` is taken already; `pool` is where the plugin may express a preference;
    `fallback` is the order used for whatever the preference does not cover.
    """

    resource: str
    request: int
    chosen: tuple[str, ...]
    pool: tuple[str, ...]
    fallback: tuple[str, ...]

    @property
    def needed(self) -> int:
        return self.request - len(self.chosen)

    def preferred_request(self) -> tuple[tuple[str, ...], tuple[str, ...], int] | None:
        """(available, must_include, size) for GetPreferredAllocation, or None if nothing to ask."""
        if self.needed <= 0 or not self.pool:
            return None
        return (self.chosen + self.pool, self.chosen, self.request)


def plan_devices(
    resource: str,
    request: int,
    free: Sequence[Device],
    reusable: Sequence[Device],
    affinity: frozenset[int] | None,
) -> Selection | None:
    """devicesToAllocate up to the plugin call; None when not enough healthy free devices."""
    return plan_ordered(
        resource, request, sorted(free, key=device_order), sorted(reusable, key=device_order), affinity
    )


def plan_ordered(
    resource: str,
    request: int,
    free: Iterable[Device],
    reusable: Sequence[Device],
    affinity: frozenset[int] | None,
    *,
    full_pool: bool = True,
    free_aligned: Iterable[Device] | None = None,
) -> Selection | None:
    """`plan_devices` for `free` and `reusable` already in `device_order` (as DeviceState keeps them).

    `full_pool=False` (the plugin has no GetPreferredAllocation) stops reading `free` once the
    choice is made, so admission does not walk every free device of a large node.
    `free_aligned`: the devices of `free` on the NUMA nodes of `affinity` (same order), when
    the caller can list them without a walk; with `full_pool=False` they are tried first and
    `free` is read only when they are too few (the same choice as the walk of `free`).
    """
    reused = tuple(d.id for d in reusable[:request])
    taken = set(reused)
    needed = request - len(reused)
    if needed <= 0:
        return Selection(resource, request, reused, (), ())
    if not full_pool and affinity is not None and free_aligned is not None:
        first = []
        for d in free_aligned:
            if d.id not in taken and d.numa_nodes and not affinity.isdisjoint(d.numa_nodes):
                first.append(d.id)
                if len(first) > needed:  # where the walk of `free` stops, with the same `aligned`
                    return Selection(resource, request, reused, tuple(first), tuple(first))
    aligned: list[str] = []
    unaligned: list[str] = []
    no_affinity: list[str] = []
    seen: list[str] = []
    for d in free:
        if d.id in taken:
            continue
        seen.append(d.id)
        if affinity is None or not d.numa_nodes:
            no_affinity.append(d.id)
        elif affinity.isdisjoint(d.numa_nodes):
            unaligned.append(d.id)
        else:
            aligned.append(d.id)
        if not full_pool and (len(aligned) > needed or (affinity is None and len(no_affinity) >= needed)):
            break
    if len(seen) < needed:
        return None
    if needed < len(aligned):
        # Everything fits in the aligned set: the plugin may choose within it.
        return Selection(resource, request, reused, tuple(aligned), tuple(aligned))
    chosen = reused + tuple(aligned)
    if len(chosen) >= request:
        return Selection(resource, request, chosen[:request], (), ())
    in_chosen = set(chosen)
    rest = tuple(i for i in seen if i not in in_chosen)
    return Selection(resource, request, chosen, rest, tuple(no_affinity + unaligned))


def finish(selection: Selection, preferred: Sequence[str] = ()) -> tuple[str, ...]:
    """Complete a selection: the plugin's preference first (within the pool), then the fallback."""
    chosen = list(selection.chosen)
    pool = set(selection.pool)
    for source in (preferred, selection.fallback):
        for dev_id in source:
            if len(chosen) >= selection.request:
                return tuple(chosen)
            if dev_id in pool and dev_id not in chosen:
                chosen.append(dev_id)
    if len(chosen) < selection.request:
        raise ValueError(
            f"resource {selection.resource}: selected {len(chosen)} of {selection.request} devices"
        )
    return tuple(chosen)
