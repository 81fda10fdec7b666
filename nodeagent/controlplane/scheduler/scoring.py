"""Which feasible node a pod goes to: the score plugins of kube-scheduler v1.37.2's default profile
(pkg/scheduler/apis/config/v1/default_plugins.go, the plugins under pkg/scheduler/framework/plugins),
summed as frameworkImpl.RunScorePlugins sums them: each plugin's score per node, normalised over the
feasible nodes found (its NormalizeScore), times its weight.

- NodeResourcesFit (weight 1): LeastAllocated over cpu and memory (weight 1 each), on the non-zero
  requests (a container without a cpu / memory request counts 100m / 200Mi); not normalised.
- NodeResourcesBalancedAllocation (1): 50 + (50 + balance with the pod - balance without) / 2, the
  balance 100 * (1 - std of the cpu and memory fractions), on the requests; skipped for a pod that
  requests neither; not normalised.
- ImageLocality (1): the pod's images the node lists, each size * (nodes with it / all nodes),
  clamped to 23 MiB..1000 MiB per image and scaled to 0..100; not normalised.
- TaintToleration (3): the PreferNoSchedule taints the pod does not tolerate; 100 - 100 * n / max.
- NodeAffinity (2): the summed weights of the preferred terms the node matches; 100 * s / max.
- InterPodAffinity (2): per topology domain, the pod's preferred (anti-)affinity terms matching the
  pods there, and those pods' required affinity (weight 1) and preferred terms matching the pod;
  min-max to 0..100.
- PodTopologySpread (2): ScheduleAnyway constraints, or, for a pod without constraints, the system
  default ones (hostname maxSkew 3, zone maxSkew 5) over what Services, ReplicationControllers,
  ReplicaSets and StatefulSets select the pod with: count * log(domains + 2) + maxSkew - 1, then
  100 * (max + min - s) / max.
- DynamicResources (2): per claim and firstAvailable request, 8 - the index of the subrequest
  allocated (the allocator takes the first that fits); 100 * s / max.

VolumeBinding scores only volumes with capacity (none here); DefaultPreemption and the others do not
score. Integer arithmetic is Go's (division truncates toward zero); float results are truncated as
int64() does, PodTopologySpread's score rounded half away from zero as math.Round.

The per-node plugins (the first three but ImageLocality) give the node's `static` score, which the
node pass keeps in its equivalence cache; the others need the feasible set and are summed here, only
for a pod for which they can differ between nodes (their PreScore's Skip, or a score equal on every
node, which changes no choice).

Ties: upstream pops the highest total from a heap over the feasible list, in the order the parallel
filter found the nodes (its Randomizer is set only for extenders): an arbitrary node of the best.
Here the first name in sort order: placement is deterministic (README, scheduler differences).
Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.controlplane.scheduler.placement import PREFER_NO_SCHEDULE, Placement, Taint, Toleration

MAX_NODE_SCORE = 100
DEFAULT_MILLI_CPU = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest
FIRST_AVAILABLE_MAX = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize
HOSTNAME = "kubernetes.io/hostname"
MIB = 1024 * 1024
IMAGE_MIN = 23 * MIB
IMAGE_MAX = 1000 * MIB

TAINT_WEIGHT = 3
NODE_AFFINITY_WEIGHT = 2
INTERPOD_WEIGHT = 2
SPREAD_WEIGHT = 2
DRA_WEIGHT = 2
IMAGE_WEIGHT = 1


def _div(a: int, b: int) -> int:
    """Go's integer division: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


# --- per node: NodeResourcesFit (LeastAllocated) and NodeResourcesBalancedAllocation ----------------


def _least(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_allocated(alloc: tuple[int, int], nonzero: tuple[int, int], pod_nonzero: tuple[int, int]) -> int:
    """leastResourceScorer over (cpu, memory), weight 1 each; a resource the node lacks is left out."""
    total = weights = 0
    for cap, used, want in zip(alloc, nonzero, pod_nonzero, strict=True):
        if cap == 0:
            continue
        total += _least(used + want, cap)
        weights += 1
    return total // weights if weights else 0


def _balance(requested: Sequence[int], alloc: Sequence[int]) -> int:
    fractions = [min(r / a, 1.0) for r, a in zip(requested, alloc, strict=True) if a]
    std = abs(fractions[0] - fractions[1]) / 2 if len(fractions) == 2 else 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_allocation(alloc: tuple[int, int], requested: tuple[int, int], pod: tuple[int, int]) -> int:
    """balancedResourceScorer: how much the pod improves (or worsens) the cpu/memory balance."""
    with_pod = _balance([r + p for r, p in zip(requested, pod, strict=True)], alloc)
    without = _balance(requested, alloc)
    return MAX_NODE_SCORE // 2 + _div(MAX_NODE_SCORE // 2 + with_pod - without, 2)


def static_score(alloc: tuple[int, int], requested: tuple[int, int], nonzero: tuple[int, int],
                 pod: tuple[int, int], pod_nonzero: tuple[int, int]) -> int:
    """NodeResourcesFit + NodeResourcesBalancedAllocation (weight 1 each) for a pod requesting `pod`
    (cpu millicores, memory bytes; `pod_nonzero` with the defaults) on a node with `alloc`, the
    pods there requesting `requested` (`nonzero` with the defaults)."""
    score = least_allocated(alloc, nonzero, pod_nonzero)
    if pod[0] or pod[1]:  # BalancedAllocation's PreScore skips a best-effort pod
        score += balanced_allocation(alloc, requested, pod)
    return score


# --- normalisers ----------------------------------------------------------------------------------


def normalize_default(scores: list[int], reverse: bool = False) -> list[int]:
    """helper.DefaultNormalizeScore: [0, max] to [0, 100], reversed on request."""
    top = max(scores, default=0)
    if top == 0:
        return [MAX_NODE_SCORE] * len(scores) if reverse else scores
    out = [MAX_NODE_SCORE * s // top for s in scores]
    return [MAX_NODE_SCORE - s for s in out] if reverse else out


def normalize_min_max(scores: list[int]) -> list[int]:
    """InterPodAffinity.NormalizeScore."""
    low, high = min(scores), max(scores)
    diff = high - low
    if diff <= 0:
        return [0] * len(scores)
    return [int(MAX_NODE_SCORE * ((s - low) / diff)) for s in scores]


# --- the set-level plugins' state (their PreScore, made by prescore.py) ---------------------------


@dataclass(frozen=True)
class SoftConstraint:
    """A ScheduleAnyway spread constraint: `matches(node)` counts the matching pods on a node,
    `eligible(node)` says whether the node passes its node inclusion policies."""

    key: str
    max_skew: int
    counts: Mapping[str, int]  # node name -> pods there matching the selector (countPodsMatchSelector)
    eligible: Callable[[str], bool]


@dataclass(frozen=True)
class SpreadState:
    constraints: tuple[SoftConstraint, ...]
    require_all: bool  # the pod has constraints of its own: nodes without every key are ignored
    nodes: Mapping[str, Mapping[str, str]]  # every node: name -> labels


@dataclass(frozen=True)
class ImageState:
    images: tuple[str, ...]  # the pod's images, normalised (":latest" added), init containers first
    count: int  # containers, init containers and image volumes
    states: Mapping[str, tuple[int, int]]  # image name -> (size, nodes having it)
    node_images: Callable[[str], frozenset[str]]
    total_nodes: int


@dataclass(frozen=True)
class DRAState:
    constant: int  # from the claims allocated already
    requests: tuple[tuple[tuple[str, tuple[str, ...]], ...], ...]
    """Per claim to allocate (the allocator's order): (request, its firstAvailable names)."""


@dataclass(frozen=True)
class PodScores:
    """What the set-level plugins need for one pod; a field is None when its plugin is skipped."""

    taints: tuple[Toleration, ...] | None = None
    preferred: Placement | None = None
    affinity: Mapping[str, Mapping[str, int]] | None = None
    spread: SpreadState | None = None
    images: ImageState | None = None
    dra: DRAState | None = None

    @property
    def active(self) -> bool:
        return any(x is not None for x in (self.taints, self.preferred, self.affinity, self.spread, self.images,
                                           self.dra))


@dataclass(frozen=True)
class Feasible:
    """A feasible node as scoring reads it."""

    name: str
    labels: Mapping[str, str]
    taints: Sequence[Taint]
    static: int
    dra: int = 0  # DynamicResources' score before normalising (dra_raw)
    extra: Any = field(default=None, compare=False)  # the caller's candidate, handed back by pick


# --- the set-level plugins ------------------------------------------------------------------------


def _untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int:
    return sum(1 for t in taints if t.effect == PREFER_NO_SCHEDULE and not any(x.tolerates(t) for x in tolerations))


def _affinity(labels: Mapping[str, str], scores: Mapping[str, Mapping[str, int]]) -> int:
    return sum(values.get(labels[key], 0) for key, values in scores.items() if key in labels)


def _image(state: ImageState, name: str) -> int:
    have = state.node_images(name)
    total = 0
    for image in state.images:
        if image in have:
            size, nodes = state.states[image]
            total += int(size * (nodes / state.total_nodes))
    top = IMAGE_MAX * state.count
    total = min(max(total, IMAGE_MIN), top)
    return MAX_NODE_SCORE * (total - IMAGE_MIN) // (top - IMAGE_MIN) if top > IMAGE_MIN else 0


def dra_raw(state: DRAState, outcome: Any) -> int:
    """DynamicResources.Score: the allocated claims' part and the allocation `outcome`'s (its
    results, one per claim to allocate)."""
    score = state.constant
    results = getattr(outcome, "results", None) or ()
    for requests, result in zip(state.requests, results, strict=False):
        if not requests:
            continue
        chosen = {d.request for d in result.devices}
        for req, subs in requests:
            for i, sub in enumerate(subs):
                if f"{req}/{sub}" in chosen:
                    score += FIRST_AVAILABLE_MAX - i
    return score


def dra_score(requests: Sequence[tuple[str, Sequence[str]]], allocated: Sequence[str]) -> int:
    """computeScore for one claim: `requests` (request, firstAvailable names), `allocated` the
    request references of its allocation results."""
    chosen = set(allocated)
    return sum(FIRST_AVAILABLE_MAX - i for req, subs in requests for i, sub in enumerate(subs)
               if f"{req}/{sub}" in chosen)


def _round(x: float) -> int:
    """Go's math.Round (half away from zero) for the non-negative spread scores."""
    return math.floor(x + 0.5)


def _spread(state: SpreadState, nodes: Sequence[Feasible]) -> list[int]:
    """PodTopologySpread's PreScore over the feasible nodes, Score and NormalizeScore."""
    keys = [c.key for c in state.constraints]
    ignored = {n.name for n in nodes if state.require_all and not all(k in n.labels for k in keys)}
    domains: list[dict[str, int]] = [{} for _ in keys]
    for n in nodes:
        if n.name in ignored:
            continue
        for i, c in enumerate(state.constraints):
            if c.key != HOSTNAME:
                domains[i].setdefault(n.labels.get(c.key, ""), 0)
    weights = [math.log((len(nodes) - len(ignored) if c.key == HOSTNAME else len(domains[i])) + 2)
               for i, c in enumerate(state.constraints)]
    for name, labels in state.nodes.items():
        if state.require_all and not all(k in labels for k in keys):
            continue
        for i, c in enumerate(state.constraints):
            if c.key == HOSTNAME or not c.eligible(name):
                continue
            value = labels.get(c.key, "")
            if value in domains[i]:
                domains[i][value] += c.counts.get(name, 0)
    raw: list[int | None] = []
    for n in nodes:
        if n.name in ignored:
            raw.append(None)
            continue
        score = 0.0
        for i, c in enumerate(state.constraints):
            domain = n.labels.get(c.key)
            if domain is not None:
                count = c.counts.get(n.name, 0) if c.key == HOSTNAME else domains[i][domain]
                score += count * weights[i] + (c.max_skew - 1)
        raw.append(_round(score))
    valid = [s for s in raw if s is not None]
    low, high = min(valid, default=0), max(valid, default=0)
    return [0 if s is None else MAX_NODE_SCORE if high == 0 else MAX_NODE_SCORE * (high + low - s) // high
            for s in raw]


def totals(nodes: Sequence[Feasible], scores: PodScores) -> list[int]:
    """Each node's total: its static score plus the weighted, normalised set-level scores."""
    out = [n.static for n in nodes]

    def add(weight: int, values: list[int]) -> None:
        for i, v in enumerate(values):
            out[i] += weight * v

    if scores.taints is not None:
        tolerations = scores.taints
        add(TAINT_WEIGHT, normalize_default([_untolerated(n.taints, tolerations) for n in nodes], reverse=True))
    if scores.preferred is not None:
        place = scores.preferred
        add(NODE_AFFINITY_WEIGHT, normalize_default([place.preference(n.name, n.labels) for n in nodes]))
    if scores.affinity is not None:
        affinity = scores.affinity
        add(INTERPOD_WEIGHT, normalize_min_max([_affinity(n.labels, affinity) for n in nodes]))
    if scores.spread is not None:
        add(SPREAD_WEIGHT, _spread(scores.spread, nodes))
    if scores.images is not None:
        images = scores.images
        add(IMAGE_WEIGHT, [_image(images, n.name) for n in nodes])
    if scores.dra is not None:
        add(DRA_WEIGHT, normalize_default([n.dra for n in nodes]))
    return out


def pick(nodes: Sequence[Feasible], scores: PodScores) -> Feasible | None:
    """The node of the highest total (the first name among equals); a lone node is not scored
    (schedulePod takes it as it is)."""
    if len(nodes) <= 1:
        return nodes[0] if nodes else None
    best: Feasible | None = None
    best_key: tuple[int, str] | None = None
    for node, total in zip(nodes, totals(nodes, scores), strict=True):
        key = (-total, node.name)
        if best_key is None or key < best_key:
            best, best_key = node, key
    return best
