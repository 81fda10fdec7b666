"""The topology manager's policies: merging the providers' NUMA hints into one affinity. Pure.

The kubelet's topologymanager policy*.go, numa_info.go and policy_options.go:
- every provider's hints per resource are filtered (no hints at all: one preferred "any";
  a resource with None: preferred "any"; with an empty list: non-preferred "any");
- the cross product of them is merged permutation by permutation: the AND of the masks,
  preferred only when every hint is preferred AND all their masks are equal;
- the best merged hint: preferred beats non-preferred; among preferred the narrowest
  (or, with prefer-closest-numa-nodes, the one with the smallest average NUMA distance
  among equally wide ones); among non-preferred the one closest to (not above) the
  widest of the providers' narrowest hints;
- none admits without hints; best-effort always admits; restricted admits a preferred
  hint; single-numa-node keeps only preferred single-node (or "any") hints and admits a
  preferred result, the all-nodes affinity turned into "any".
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodeagent.errors import ConfigError
from nodeagent.pods.hints import (
    Hints,
    TopologyHint,
    mask_bits,
    mask_count,
    mask_is_less_than,
    mask_is_narrower_than,
    mask_of,
)

NONE = "none"
BEST_EFFORT = "best-effort"
RESTRICTED = "restricted"
SINGLE_NUMA_NODE = "single-numa-node"
POLICIES = (NONE, BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE)

CONTAINER_SCOPE = "container"
POD_SCOPE = "pod"

PREFER_CLOSEST_NUMA_NODES = "prefer-closest-numa-nodes"
MAX_ALLOWABLE_NUMA_NODES = "max-allowable-numa-nodes"
DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8
_ALPHA: frozenset[str] = frozenset()
_BETA: frozenset[str] = frozenset()
_STABLE = frozenset({PREFER_CLOSEST_NUMA_NODES, MAX_ALLOWABLE_NUMA_NODES})

TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
TOPOLOGY_AFFINITY_MESSAGE = "Resources cannot be allocated with Topology locality"


@dataclass(frozen=True)
class PolicyOptions:
    prefer_closest_numa: bool = False
    max_allowable_numa_nodes: int = DEFAULT_MAX_ALLOWABLE_NUMA_NODES


def parse_policy_options(raw: Mapping[str, str], *, alpha: bool = False, beta: bool = True) -> PolicyOptions:
    """NewPolicyOptions with CheckPolicyOptionAvailable's errors."""
    prefer = False
    max_nodes = DEFAULT_MAX_ALLOWABLE_NUMA_NODES
    for name in sorted(raw):
        value = str(raw[name])
        if name not in _ALPHA | _BETA | _STABLE:
            raise ConfigError(f'unknown Topology Manager Policy option: "{name}"')
        if name in _ALPHA and not alpha:
            raise ConfigError(f'Topology Manager Policy Alpha-level Options not enabled, but option "{name}" provided')
        if name in _BETA and not beta:
            raise ConfigError(f'Topology Manager Policy Beta-level Options not enabled, but option "{name}" provided')
        if name == PREFER_CLOSEST_NUMA_NODES:
            if value not in ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"):
                raise ConfigError(f'bad value for option "{name}": strconv.ParseBool: parsing "{value}": '
                                  f"invalid syntax")
            prefer = value in ("1", "t", "T", "TRUE", "true", "True")
        else:
            try:
                max_nodes = int(value, 10)
            except ValueError:
                raise ConfigError(f'bad value for option "{name}": strconv.Atoi: parsing "{value}": '
                                  f"invalid syntax") from None
            if max_nodes < DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
                raise ConfigError(f'the minimum value of "{name}" should not be less than '
                                  f"{DEFAULT_MAX_ALLOWABLE_NUMA_NODES}")
    return PolicyOptions(prefer_closest_numa=prefer, max_allowable_numa_nodes=max_nodes)


class NUMAInfo:
    """The machine's NUMA nodes and their distances (numa_info.go)."""

    def __init__(self, nodes: Sequence[int], distances: Mapping[int, Mapping[int, int]] | None = None) -> None:
        self.nodes = tuple(sorted(nodes))
        self.distances = distances or {}

    def default_affinity(self) -> int:
        return mask_of(self.nodes)

    def average_distance(self, mask: int) -> float:
        bits = mask_bits(mask)
        if not bits:
            return 0.0
        total = 0
        for a in bits:
            for b in bits:
                total += self.distances.get(a, {}).get(b, 10 if a == b else 20)
        return total / (len(bits) * len(bits))

    def narrowest(self, a: int, b: int) -> int:
        return a if mask_is_narrower_than(a, b) else b

    def closest(self, a: int, b: int) -> int:
        if mask_count(a) != mask_count(b):
            return self.narrowest(a, b)
        da, db = self.average_distance(a), self.average_distance(b)
        if da == db:
            return a if mask_is_less_than(a, b) else b
        return a if da < db else b


# A hint whose affinity is always set (merged hints carry the AND with all nodes).
@dataclass(frozen=True)
class Merged:
    affinity: int
    preferred: bool


def filter_providers_hints(providers: Sequence[Hints]) -> list[list[TopologyHint]]:
    out: list[list[TopologyHint]] = []
    for hints in providers:
        if not hints:
            out.append([TopologyHint(None, True)])
            continue
        for resource in sorted(hints):
            per = hints[resource]
            if per is None:
                out.append([TopologyHint(None, True)])
            elif not per:
                out.append([TopologyHint(None, False)])
            else:
                out.append(list(per))
    return out


def merge_permutation(default: int, permutation: Sequence[TopologyHint]) -> Merged:
    preferred = True
    first: int | None = None
    merged = default
    for hint in permutation:
        if hint.numa_affinity is not None:
            merged &= hint.numa_affinity
            if first is None:
                first = hint.numa_affinity
            elif hint.numa_affinity != first:
                preferred = False
        if not hint.preferred:
            preferred = False
    return Merged(merged, preferred)


def _max_of_min_counts(filtered: Sequence[Sequence[TopologyHint]]) -> int:
    best = 0
    for hints in filtered:
        narrowest: int | None = None
        for h in hints:
            if h.numa_affinity is None:
                continue
            if narrowest is None or mask_is_narrower_than(h.numa_affinity, narrowest):
                narrowest = h.numa_affinity
        if narrowest is not None and mask_count(narrowest) > best:
            best = mask_count(narrowest)
    return best


class HintMerger:
    def __init__(self, info: NUMAInfo, hints: list[list[TopologyHint]], policy: str, opts: PolicyOptions) -> None:
        self.info = info
        self.hints = hints
        self.best_non_preferred = _max_of_min_counts(hints)
        self.closest = policy != SINGLE_NUMA_NODE and opts.prefer_closest_numa

    def _fitter(self, current: Merged, candidate: Merged) -> Merged:
        if candidate.affinity == current.affinity:
            return current
        if self.closest:
            best = self.info.closest(current.affinity, candidate.affinity)
        else:
            best = self.info.narrowest(current.affinity, candidate.affinity)
        return current if best == current.affinity else candidate

    def compare(self, current: Merged | None, candidate: Merged) -> Merged | None:
        if mask_count(candidate.affinity) == 0:
            return current
        if current is None:
            return candidate
        if not current.preferred and candidate.preferred:
            return candidate
        if current.preferred and not candidate.preferred:
            return current
        if current.preferred and candidate.preferred:
            return self._fitter(current, candidate)
        best = self.best_non_preferred
        cur, cand = mask_count(current.affinity), mask_count(candidate.affinity)
        if cur > best:
            return self._fitter(current, candidate)
        if cur == best:
            return current if cand != best else self._fitter(current, candidate)
        if cand > best:
            return current
        if cand == best:
            return candidate
        if cand > cur:
            return candidate
        if cand < cur:
            return current
        return self._fitter(current, candidate)

    def merge(self) -> Merged:
        default = self.info.default_affinity()
        best: Merged | None = None
        for permutation in itertools.product(*self.hints):
            best = self.compare(best, merge_permutation(default, permutation))
        return best if best is not None else Merged(default, False)


def _single_numa_filter(filtered: list[list[TopologyHint]]) -> list[list[TopologyHint]]:
    return [
        [h for h in hints if h.preferred and (h.numa_affinity is None or mask_count(h.numa_affinity) == 1)]
        for hints in filtered
    ]


def merge(policy: str, info: NUMAInfo, opts: PolicyOptions, providers: Sequence[Hints]) -> tuple[TopologyHint, bool]:
    """Policy.Merge: the best hint and whether the pod (or container) is admitted."""
    if policy == NONE:
        return TopologyHint(None, False), True
    filtered = filter_providers_hints(providers)
    if policy == SINGLE_NUMA_NODE:
        filtered = _single_numa_filter(filtered)
    best = HintMerger(info, filtered, policy, opts).merge()
    hint = TopologyHint(best.affinity, best.preferred)
    if policy == SINGLE_NUMA_NODE and best.affinity == info.default_affinity():
        hint = TopologyHint(None, best.preferred)
    if policy == BEST_EFFORT:
        return hint, True
    return hint, hint.preferred
