"""Which devices a container gets: topology hints, the policy verdict and candidate selection.

Pure decision code (the kubelet's topologymanager/policy*.go and devicemanager
devicesToAllocate/filterByAffinity/generateDeviceTopologyHints, reduced to what a fake
node needs). No I/O: the one call that needs the plugin (GetPreferredAllocation) is
split out, so the manager does `plan_devices` -> optional plugin call -> `finish`.

Admission runs these on every pod, so the hot paths take what DeviceState keeps ready:
devices already in `device_order` (`plan_ordered`) and NUMA histograms (`numa_counts`,
`decide_topology_counts`) instead of whole device lists. `plan_devices`, `device_hints` and
`decide_topology` are the same rules over plain device lists.

Topology: per container, each device resource yields hints (NUMA masks that can hold
the request; "preferred" when the mask is as narrow as the resource's devices allow);
the CPU manager's exclusive CPUs yield one preferred hint. The policy merges them:
none ignores topology, best-effort takes the best hint and always admits, restricted
admits only a preferred hint, single-numa-node only a preferred single-node hint.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nodeagent.devices.model import Device

NONE = "none"
BEST_EFFORT = "best-effort"
RESTRICTED = "restricted"
SINGLE_NUMA_NODE = "single-numa-node"
POLICIES = (NONE, BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE)

MAX_NUMA_NODES = 8  # the kubelet refuses topology alignment above this, so do we
TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"

# How many devices sit on each NUMA node set (a device's numa_nodes; () = no topology).
NumaCounts = Mapping[tuple[int, ...], int]


@dataclass(frozen=True)
class Hint:
    """A NUMA affinity; None means "any node" (no preference)."""

    affinity: frozenset[int] | None
    preferred: bool


@dataclass(frozen=True)
class TopologyDecision:
    admit: bool
    affinity: frozenset[int] | None  # None: do not align devices


def _natural_key(text: str) -> tuple[object, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def device_order(dev: Device) -> tuple[object, ...]:
    """Stable order: by first NUMA node (devices without topology last), then natural id."""
    numa = min(dev.numa_nodes) if dev.numa_nodes else 1 << 30
    return (numa, _natural_key(dev.id))


def numa_counts(devices: Iterable[Device]) -> dict[tuple[int, ...], int]:
    """The NUMA histogram of `devices`: all that topology hints need to know about them."""
    return dict(Counter(d.numa_nodes for d in devices))


def _mask_value(mask: frozenset[int]) -> int:
    return sum(1 << n for n in mask)


def _narrower(a: frozenset[int], b: frozenset[int]) -> bool:
    if len(a) != len(b):
        return len(a) < len(b)
    return _mask_value(a) < _mask_value(b)


def _masks(nodes: frozenset[int]) -> Iterable[frozenset[int]]:
    ordered = sorted(nodes)
    for size in range(1, len(ordered) + 1):
        for combo in itertools.combinations(ordered, size):
            yield frozenset(combo)


def device_hints(
    request: int,
    all_devices: Sequence[Device],
    available: Sequence[Device],
    reusable: Sequence[Device],
    nodes: frozenset[int],
) -> list[Hint] | None:
    """generateDeviceTopologyHints: None when the resource reports no topology ("don't care")."""
    return hints_from_counts(request, numa_counts(all_devices), numa_counts(available), reusable, nodes)


def hints_from_counts(
    request: int,
    all_devices: NumaCounts,
    available: NumaCounts,
    reusable: Sequence[Device],
    nodes: frozenset[int],
) -> list[Hint] | None:
    """`device_hints` over NUMA histograms of all and of the available devices."""
    if not any(numa for numa, count in all_devices.items() if count):
        return None
    hints: list[Hint] = []
    min_size = len(nodes)
    for mask in _masks(nodes):
        in_mask = sum(n for numa, n in all_devices.items() if not mask.isdisjoint(numa))
        if in_mask >= request and len(mask) < min_size:
            min_size = len(mask)
        if any(d.numa_nodes and mask.isdisjoint(d.numa_nodes) for d in reusable):
            continue
        matching = sum(n for numa, n in available.items() if numa and not mask.isdisjoint(numa))
        if matching >= request:
            hints.append(Hint(mask, False))
    return [Hint(h.affinity, h.affinity is not None and len(h.affinity) == min_size) for h in hints]


def merge_hints(policy: str, providers: Sequence[list[Hint] | None], nodes: frozenset[int]) -> Hint:
    """Cross product of every provider's hints, AND-ed; the preferred-then-narrowest wins."""
    lists: list[list[Hint]] = []
    for hints in providers:
        if hints is None:
            lists.append([Hint(None, True)])
            continue
        if policy == SINGLE_NUMA_NODE:
            hints = [h for h in hints if h.preferred and (h.affinity is None or len(h.affinity) == 1)]
        lists.append(hints or [Hint(None, False)])
    best = Hint(nodes, False)
    for combo in itertools.product(*lists):
        merged = nodes
        for h in combo:
            if h.affinity is not None:
                merged = merged & h.affinity
        if not merged:
            continue
        preferred = all(h.preferred for h in combo)
        assert best.affinity is not None
        if (preferred and not best.preferred) or (
            preferred == best.preferred and _narrower(merged, best.affinity)
        ):
            best = Hint(merged, preferred)
    return best


def decide_topology(
    policy: str,
    requests: Mapping[str, int],
    all_devices: Mapping[str, Sequence[Device]],
    available: Mapping[str, Sequence[Device]],
    reusable: Mapping[str, Sequence[Device]],
    cpu_numa: frozenset[int] | None,
) -> TopologyDecision:
    """The topology manager's verdict for one container (scope "container")."""
    if policy == NONE or not requests:
        return TopologyDecision(True, None)
    return decide_topology_counts(
        policy, requests,
        {r: numa_counts(all_devices.get(r, ())) for r in requests},
        {r: numa_counts(available.get(r, ())) for r in requests},
        reusable, cpu_numa,
    )


def decide_topology_counts(
    policy: str,
    requests: Mapping[str, int],
    all_devices: Mapping[str, NumaCounts],
    available: Mapping[str, NumaCounts],
    reusable: Mapping[str, Sequence[Device]],
    cpu_numa: frozenset[int] | None,
) -> TopologyDecision:
    """`decide_topology` over per-resource NUMA histograms of all and of the available devices."""
    if policy == NONE or not requests:
        return TopologyDecision(True, None)
    nodes: set[int] = set(cpu_numa or ())
    for resource in requests:
        for numa, count in all_devices.get(resource, {}).items():
            if count:
                nodes.update(numa)
    if not nodes or len(nodes) > MAX_NUMA_NODES:
        return TopologyDecision(True, None)
    all_nodes = frozenset(nodes)
    providers: list[list[Hint] | None] = [[Hint(cpu_numa, True)] if cpu_numa else None]
    for resource, count in sorted(requests.items()):
        providers.append(
            hints_from_counts(
                count,
                all_devices.get(resource, {}),
                available.get(resource, {}),
                reusable.get(resource, ()),
                all_nodes,
            )
        )
    best = merge_hints(policy, providers, all_nodes)
    if policy in (RESTRICTED, SINGLE_NUMA_NODE) and not best.preferred:
        return TopologyDecision(False, None)
    return TopologyDecision(True, best.affinity)


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
    free: Sequence[Device],
    reusable: Sequence[Device],
    affinity: frozenset[int] | None,
) -> Selection | None:
    """`plan_devices` for `free` and `reusable` already in `device_order` (as DeviceState keeps them)."""
    reused = tuple(d.id for d in reusable[:request])
    taken = set(reused)
    candidates = [d for d in free if d.id not in taken] if taken else list(free)
    needed = request - len(reused)
    if needed <= 0:
        return Selection(resource, request, reused, (), ())
    if len(candidates) < needed:
        return None
    aligned: list[str] = []
    unaligned: list[str] = []
    no_affinity: list[str] = []
    for d in candidates:
        if affinity is None or not d.numa_nodes:
            no_affinity.append(d.id)
        elif affinity.isdisjoint(d.numa_nodes):
            unaligned.append(d.id)
        else:
            aligned.append(d.id)
    if needed < len(aligned):
        # Everything fits in the aligned set: the plugin may choose within it.
        return Selection(resource, request, reused, tuple(aligned), tuple(aligned))
    chosen = reused + tuple(aligned)
    if len(chosen) >= request:
        return Selection(resource, request, chosen[:request], (), ())
    in_chosen = set(chosen)
    rest = tuple(d.id for d in candidates if d.id not in in_chosen)
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
