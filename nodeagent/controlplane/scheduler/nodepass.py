"""One pass over the nodes for one pod: the filters, the structured allocator and the score,
with the equivalence cache that makes the hundredth pod of a shape cheap.

One responsibility: given a pod's requests, placement and claims, find feasible nodes (at most
`nodes_to_score`, from a rotating start, as percentageOfNodesToScore does) and explain the
others. Filters in the scheduler's order: placement (cordon, taints, node affinity/selector, host ports),
readiness and allocatable fit, the node selectors of claims already allocated, then the
allocator for the unallocated claims. A candidate carries its static score (scoring.py: the
NodeResourcesFit and BalancedAllocation scores, which depend on the node and the pod alone); the
pass's best node is the one of the highest static score (first name among equals), or, for a pod
whose set-level scores (scoring.py) can differ between nodes, the best total over the feasible
nodes found.

Caches, all keyed so a change on a node invalidates only that node:
- per node, allocation outcomes per (claim shapes, device version) (`NodeEntry.memo`);
- per node, the result per pod shape at the node's version (`NodeEntry.results`);
- per shape, a bitmask of nodes known not to fit at their current version (`_SkipSet`), cleared
  from the cache's node change log, so a pass steps over full nodes instead of probing each.
Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from nodeagent.controlplane import allocator as model
from nodeagent.controlplane.convert import basic as convert
from nodeagent.controlplane.scheduler import interpod, nodealloc, placement, scoring
from nodeagent.controlplane.scheduler.cache import PODS, ClusterCache, NodeEntry
from nodeagent.controlplane.scheduler.extended import ExtendedPlan
from nodeagent.controlplane.scheduler.shapeindex import INF, ShapeState
from nodeagent.objects.common import node_selector_matches
from nodeagent.objects.pod.model import Pod
from nodeagent.util.clock import Clock

MAX_SHAPES = 4096
MAX_RESULTS_PER_NODE = 64
MAX_MEMO_PER_NODE = 64
MAX_SHAPE_STATES = 256  # each holds O(nodes): old shapes (of an earlier global version) are dropped
MIN_PERCENTAGE = 5  # upstream's minFeasibleNodesPercentageToFind
CLAIM_NOT_AVAILABLE = "resourceclaim not available on the node"  # DynamicResources Filter, allocated elsewhere


class Candidate(NamedTuple):
    """A feasible node, ranked by its static score (highest first), then name."""

    static: int
    name: str
    outcome: model.AllocationOutcome | None
    dra: int = 0  # DynamicResources' score before normalising (0 when it is skipped)
    backed: frozenset[str] = frozenset()  # extended resources served by DRA here (last outcome result)
    node_alloc: tuple[Mapping[str, Any], ...] = ()
    """pod.status.nodeAllocatableResourceClaimStatuses for this node (KEP-5517), each entry's
    resourceClaimName the pod claim name (the binder writes the claim's)."""

    def rank(self) -> tuple[int, str]:
        return (-self.static, self.name)


@dataclass(frozen=True)
class PodShape:
    """What a pass needs to know about the pod."""

    requests: Mapping[str, int]
    place: placement.Placement
    allocated: Sequence[tuple[str, Mapping[str, Any]]]  # (pod claim name, claim) already allocated
    models: Sequence[model.Claim]  # the claims to allocate, named by pod claim
    sig: Any  # the claims' signature (see NodePass.signature)
    bound_to: str = ""  # the node its author bound it to: only that one is looked at
    every_node: bool = False  # classic DRA: the port decides among all feasible nodes
    deadline: float | None = None
    extended: ExtendedPlan | None = None  # extended resources a DeviceClass can serve (KEP-5004)
    namespace: str = ""
    claim_containers: Mapping[str, Sequence[str]] | None = None
    """With DRANodeAllocatableResources: pod claim name -> containers referencing it (part of
    the shape, as overheads per container depend on it); None with the gate off."""
    pod_level: frozenset[str] = frozenset()  # resources with a pod-level request
    spec_model: Pod | None = None  # with the gate and pod-level resources: for their cover check
    interpod: interpod.Filter | None = None
    """Spread and inter-pod affinity state (interpod.prefilter): the answer on a node depends on the
    pods on other nodes, so such a pod is not given the equivalence cache's per-node results."""
    nonzero: tuple[int, int] = (0, 0)  # cpu and memory requests with the defaults (LeastAllocated)
    scores: scoring.PodScores | None = None  # the set-level score plugins' state (prescore.py); None: skipped


@dataclass
class PassResult:
    found: list[Candidate] | None = None  # the feasible nodes, when listed during the pass
    reasons: dict[str, str] = field(default_factory=dict)  # node -> why not
    failed_alloc: list[str] = field(default_factory=list)  # nodes where the allocator said no
    timed_out: bool = False
    error: str = ""  # the allocator's error on some node: upstream stops the attempt (CEL runtime error)
    total: int = 0  # nodes considered
    best: Candidate | None = None  # the feasible node of lowest rank, found during the pass
    count: int = 0  # feasible nodes found
    more: Callable[[], list[Candidate]] | None = None  # lists them (valid until the next pass)
    dra_uniform: bool = False  # every feasible node has the same DynamicResources score

    def misfit(self, name: str, reason: str, failed: model.AllocationOutcome | None) -> None:
        self.reasons[name] = reason
        if failed is not None:
            self.failed_alloc.append(name)

    def stopped(self, outcome: model.AllocationOutcome) -> None:
        """The allocator timed out or failed with an error: the pass ends."""
        if outcome.error:
            self.error = outcome.message
        else:
            self.timed_out = True

    @property
    def feasible(self) -> list[Candidate]:
        """The feasible nodes found, in the order looked at."""
        if self.found is None:
            self.found = self.more() if self.more is not None else []
        return self.found


class _Misfit(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def convert_results(result: model.AllocationResult) -> list[dict[str, Any]]:
    """The allocation results as the claim status will hold them (consumedCapacity in its format)."""
    return list(convert.allocation_json(result)["devices"]["results"])


def _rotation(bits: int, start: int, n: int) -> Iterator[int]:
    """The indexes of the set bits of `bits` (< n), from `start` round to `start - 1`."""
    high = bits >> start << start
    for part in (high, bits & ((1 << start) - 1)):
        while part:
            low = part & -part
            yield low.bit_length() - 1
            part ^= low


def _resource_order(item: tuple[str, int]) -> tuple[int, str]:
    order = {"cpu": 0, "memory": 1, "ephemeral-storage": 2}
    return (order.get(item[0], 3), item[0])


class NodePass:
    def __init__(self, cache: ClusterCache, clock: Clock, nodes_to_score: int,
                 features: model.Features = model.DEFAULT_FEATURES, percentage: int = 0) -> None:
        self.cache = cache
        self.clock = clock
        self.nodes_to_score = nodes_to_score  # upstream's minFeasibleNodesToFind
        self.percentage = percentage  # percentageOfNodesToScore; 0: adaptive
        self.features = features
        self._node_names: list[str] | None = None
        self._node_index: dict[str, int] = {}
        self._node_epoch = 0  # bumped whenever the node list is rebuilt
        self._next_start = 0
        self._signatures: dict[str, tuple[int, str]] = {}
        # Pod shapes interned to small ints: the per-node results are probed ~100 times per pod,
        # and hashing the nested shape tuple on every probe was the loop's main cost.
        self._shape_ids: dict[Any, int] = {}
        self._skips: dict[int, ShapeState] = {}

    def reset(self) -> None:
        """The cache was rebuilt (its change log starts again)."""
        self._node_names = None
        self._skips.clear()

    def nodes_changed(self) -> None:
        """A node came or went: the sorted node list is rebuilt on the next pass."""
        self._node_names = None

    def signature(self, claims: Sequence[Mapping[str, Any]]) -> Any:
        """Equal for claims of equal specs while device classes and shared slices are unchanged."""
        return (tuple(self._claim_signature(c) for c in claims), self.cache.global_version)

    def _claim_signature(self, claim: Mapping[str, Any]) -> str:
        uid = str(claim["metadata"].get("uid") or "")
        gen = int(claim["metadata"].get("generation") or 0)
        hit = self._signatures.get(uid)
        if hit is not None and hit[0] == gen:
            return hit[1]
        sig = json.dumps(claim.get("spec") or {}, sort_keys=True, separators=(",", ":"))
        if len(self._signatures) > 100_000:
            self._signatures.clear()
        self._signatures[uid] = (gen, sig)
        return sig

    # --- the pass ----------------------------------------------------------------------------------

    def limit(self, n: int) -> int:
        """Upstream's numFeasibleNodesToFind: every node below `nodes_to_score` (its
        minFeasibleNodesToFind, 100), else percentageOfNodesToScore of them (adaptive when 0:
        50% less 1% per 125 nodes, at least 5%), and at least `nodes_to_score`."""
        if n < self.nodes_to_score:
            return n
        percentage = self.percentage or max(50 - n // 125, MIN_PERCENTAGE)
        if percentage >= 100:
            return n
        return max(n * percentage // 100, self.nodes_to_score)

    def run(self, pod: PodShape) -> PassResult:
        # The equivalence cache: pods of one shape (requests, claim specs, placement) get the same
        # answer on a node whose version did not change. Not for claims already allocated (their
        # node selectors differ per claim) nor for a pod bound by its author, nor for one whose
        # answer depends on the pods on other nodes (spread, inter-pod affinity).
        if pod.allocated or pod.every_node or pod.bound_to or pod.interpod is not None:
            out = self._run_each(pod)
        else:
            refs = None if pod.claim_containers is None else (
                tuple(sorted((k, tuple(v)) for k, v in pod.claim_containers.items())), pod.pod_level,
                None if pod.spec_model is None else repr((pod.spec_model.pod_requests, pod.spec_model.pod_limits,
                                                          [(c.name, c.limits) for c in pod.spec_model.containers])))
            out = self._run_shape(pod, self._shape_id((pod.sig, tuple(sorted(pod.requests.items())), pod.place.key,
                                                       refs, pod.nonzero)))
        scores = pod.scores
        if scores is not None and scores.dra is not None and out.dra_uniform:
            scores = dataclasses.replace(scores, dra=None)  # a constant: only listing the nodes would cost
        if scores is not None and scores.active and out.count > 1 and not out.timed_out and not out.error:
            out.best = self._pick(out.feasible, scores)
        return out

    def _pick(self, found: Sequence[Candidate], scores: scoring.PodScores) -> Candidate | None:
        """The feasible node of the highest total score (scoring.py)."""
        nodes = self.cache.nodes
        best = scoring.pick([scoring.Feasible(c.name, nodes[c.name].node.labels, nodes[c.name].taints, c.static,
                                              c.dra, c) for c in found], scores)
        return None if best is None else best.extra

    def _run_shape(self, pod: PodShape, shape: int) -> PassResult:
        """A pod of a cached shape: only the nodes whose answer is not known at their current
        version are evaluated; the remembered fits are counted and ranked through the shape's
        index (shapeindex.py). The nodes looked at, in order, and the best one are those the loop
        in `_run_each` would find."""
        out = PassResult()
        names = self._nodes()
        n = out.total = len(names)
        if not n:
            return out
        state = self._state(shape)
        start = self._next_start % n
        limit = self.limit(n)
        nodes = self.cache.nodes
        reasons = out.reasons
        count = 0
        pos = start  # the next rotation position not accounted for
        end = start + n  # one past the last position looked at
        for i in _rotation(state.unknown(), start, n):
            p = i if i >= start else i + n
            between = state.count(pos, p)
            if count + between >= limit:
                end = state.nth(pos, limit - count) + 1
                count = limit
                break
            count += between
            pos = p + 1
            name = names[i]
            node = nodes.get(name)
            if node is None or not node.obj:
                reasons[name] = "node not found"
                continue
            hit = node.results.get(shape)
            if hit is not None and hit[0] == node.version:
                reason, found = hit[1], hit[2]
            else:
                reason, found = self._evaluate(node, pod, shape)
            if reason is not None:
                out.misfit(name, reason, found)
                state.misfit |= 1 << i
                continue
            if not isinstance(found, Candidate):
                out.stopped(found)
                end = p + 1
                break
            state.fits(i, name, found, found.rank(), found.dra)
            count += 1
            if count >= limit:
                end = p + 1
                break
        else:
            between = state.count(pos, start + n)
            if count + between >= limit:
                end = state.nth(pos, limit - count) + 1
                count = limit
            else:
                count += between
        out.dra_uniform = state.uniform()
        if not out.timed_out and not out.error:
            rank = state.best(start, end)
            out.best = state.cands[rank[1]] if rank is not INF else None
            cands, window = state.cands, state.window(start, end)
            out.more = lambda: [cands[names[i]] for i in window()]
        out.count = count
        self._next_start = (start + (end - start if count >= limit or out.timed_out or out.error else n)) % max(n, 1)
        if not count and not out.timed_out and not out.error:
            self._explain_skipped(state, names, pod, shape, out)
        return out

    def _run_each(self, pod: PodShape) -> PassResult:
        """Every node evaluated (no equivalence cache): claims already allocated, a pod bound by
        its author (only that node), classic DRA (every node), spread and inter-pod affinity."""
        bound_to = pod.bound_to
        out = PassResult()
        names = [bound_to] if bound_to else self._nodes()
        n = out.total = len(names)
        start = self._next_start % n if n and not bound_to else 0
        limit = self.limit(n) if not pod.every_node else n + 1
        nodes = self.cache.nodes
        feasible, reasons = out.feasible, out.reasons
        last = start - 1  # the last node index looked at, in rotation order (unrolled past n)
        best: Candidate | None = None
        best_rank: tuple[int, str] | None = None
        for i in _rotation((1 << n) - 1, start, n):
            last = i if i >= start else i + n
            name = names[i]
            node = nodes.get(name)
            if node is None or not node.obj:
                reasons[name] = "node not found"
                continue
            reason, found = self._evaluate(node, pod, None)
            if reason is not None:
                out.misfit(name, reason, found)
                continue
            if not isinstance(found, Candidate):
                out.stopped(found)
                break
            feasible.append(found)
            rank = found.rank()
            if best_rank is None or rank < best_rank:
                best, best_rank = found, rank
            if len(feasible) >= limit:
                break
        out.best = best
        out.count = len(feasible)
        if not bound_to:
            processed = last - start + 1 if len(feasible) >= limit or out.timed_out or out.error else n
            self._next_start = (start + processed) % max(n, 1)
        return out

    def _explain_skipped(self, state: ShapeState, names: list[str], pod: PodShape, shape: Any,
                         out: PassResult) -> None:
        """The failure message names every node: those stepped over as known misfits too."""
        for i in _rotation(state.misfit, 0, len(names)):
            node = self.cache.nodes[names[i]]
            hit = node.results.get(shape)
            reason: str | None
            if hit is not None and hit[0] == node.version and hit[1] is not None:
                reason, failed = hit[1], hit[2]
            else:  # the result was evicted from the node's cache: check again
                reason, failed = self._evaluate(node, pod, shape)
                if reason is None:  # cannot happen (the node did not change); look again next time
                    state.misfit &= ~(1 << i)
                    continue
            out.reasons[names[i]] = reason
            if failed is not None:
                out.failed_alloc.append(names[i])

    def _evaluate(self, node: NodeEntry, pod: PodShape, shape: Any) -> tuple[str | None, Any]:
        """The filters and the allocator on one node, remembered for the shape: (reason, the failed
        allocation outcome or None) for a misfit, (None, candidate) when it fits, and (None,
        outcome) for an allocation that timed out."""
        reason = None
        place = pod.place
        requests, models, sig, backed = self._node_view(node, pod)
        if not pod.bound_to:
            if place is not placement.NONE or node.taints or node.cordoned:
                reason = place.reason(node.node.name, node.node.labels, node.taints, node.cordoned, node.used_ports)
            if reason is None:
                reason = self._fit(node, requests)
            if reason is None and pod.interpod is not None:  # PodTopologySpread, InterPodAffinity
                reason = pod.interpod.reason(node.node.labels)
        if reason is None:
            reason = self._claims_fit(node, pod.allocated)
        if reason is not None:
            self._remember(node, shape, reason, None)
            return reason, None
        outcome = None
        if models:
            outcome = self._allocate(node, models, sig, pod.deadline, explain=False)
            if outcome.timed_out or outcome.error:
                return None, outcome
            if not outcome.ok:
                self._remember(node, shape, outcome.message, outcome)
                return outcome.message, outcome
        node_alloc: tuple[Mapping[str, Any], ...] = ()
        if pod.claim_containers is not None:
            try:
                node_alloc = self._node_allocatable(node, pod, requests, outcome)
            except nodealloc.FootprintError as err:
                return None, model.AllocationOutcome(None, message=str(err), error=True)
            except _Misfit as err:
                self._remember(node, shape, err.reason, None)
                return err.reason, None
        dra = 0 if pod.scores is None or pod.scores.dra is None else scoring.dra_raw(pod.scores.dra, outcome)
        cand = Candidate(self._static(node, pod), node.node.name, outcome, dra, backed, node_alloc)
        self._remember(node, shape, None, cand)
        return None, cand

    def _node_allocatable(self, node: NodeEntry, pod: PodShape, requests: Mapping[str, int],
                          outcome: model.AllocationOutcome | None) -> tuple[Mapping[str, Any], ...]:
        """The DynamicResources Filter's node allocatable part (calculateAndCheckNodeAllocatable
        Resources): the status entries of the pod's claims (allocated before, or by `outcome`)
        whose devices carry nodeAllocatableResources, and the check that the pod's requests plus
        those entries fit what the node has left (raises _Misfit)."""
        assert pod.claim_containers is not None
        lookup = self.cache.device_node_allocatable(node.node.name)
        entries: list[Mapping[str, Any]] = []
        claims: list[tuple[str, str, Sequence[Mapping[str, Any]]]] = [
            (pc, str(c["metadata"].get("namespace") or ""),
             ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or ())
            for pc, c in pod.allocated]
        if outcome is not None and outcome.results is not None:
            for m, result in zip(pod.models, outcome.results, strict=False):
                claims.append((m.name, pod.namespace, convert_results(result)))
        for pc, namespace, results in claims:
            entry = nodealloc.claim_status(namespace, pc, results, lookup)
            if entry is not None:
                entries.append(nodealloc.with_containers(entry, pod.claim_containers.get(pc, ())))
        if not entries:
            return ()
        if pod.spec_model is not None:
            uncovered = nodealloc.pod_level_cover(pod.spec_model, entries)
            if uncovered is not None:
                raise _Misfit(uncovered)
        total = nodealloc.demand(requests, entries, pod.pod_level)
        reason = nodealloc.misfit(total, node.allocatable, node.requested)
        if reason is not None:
            raise _Misfit(reason)
        return tuple(entries)

    @staticmethod
    def _node_view(
        node: NodeEntry, pod: PodShape
    ) -> tuple[Mapping[str, int], Sequence[model.Claim], Any, frozenset[str]]:
        """(requests to fit, claims to allocate, their signature, extended resources served by DRA)
        on this node: an extended resource a DeviceClass serves and the node does not advertise is
        left out of the fit and asked of the allocator through the pod's special claim instead."""
        if pod.extended is None:
            return pod.requests, pod.models, pod.sig, frozenset()
        backed = pod.extended.backed_on(node.allocatable)
        if not backed:
            return pod.requests, pod.models, pod.sig, backed
        requests = {k: v for k, v in pod.requests.items() if k not in backed}
        models = [*pod.models, pod.extended.claim_model(pod.namespace, backed)]
        return requests, models, (pod.sig, tuple(sorted(backed))), backed

    def explain(self, node_name: str, pod: PodShape) -> str:
        """The allocator's full explanation of why the pod's claims do not fit on this node."""
        node = self.cache.nodes[node_name]
        _, models, sig, _ = self._node_view(node, pod)
        return self._allocate(node, models, sig, None, explain=True).message

    # --- filters -----------------------------------------------------------------------------------

    @staticmethod
    def _fit(node: NodeEntry, requests: Mapping[str, int]) -> str | None:
        if not node.ready:
            return "node is not ready"
        alloc = node.allocatable
        missing = []
        if PODS in alloc and node.pods + 1 > alloc[PODS]:
            missing.append("Too many pods")
        for name, want in sorted(requests.items(), key=_resource_order):
            if want > 0 and want > alloc.get(name, 0) - node.requested.get(name, 0):
                missing.append(f"Insufficient {name}")
        return ", ".join(missing) if missing else None

    @staticmethod
    def _claims_fit(node: NodeEntry, allocated: Sequence[tuple[str, Mapping[str, Any]]]) -> str | None:
        for _, claim in allocated:
            sel = ((claim.get("status") or {}).get("allocation") or {}).get("nodeSelector")
            if sel and not node_selector_matches(sel, node.node.name, node.node.labels):
                return CLAIM_NOT_AVAILABLE
        return None

    def _allocate(
        self, node: NodeEntry, models: Sequence[model.Claim], sig: Any, deadline: float | None, *, explain: bool
    ) -> model.AllocationOutcome:
        memo_key = (sig, node.device_version)
        if not explain:
            hit = node.memo.get(memo_key)
            if hit is not None:
                return hit
        outcome = model.allocate(
            models,
            node.node,
            self.cache.inventory(node),
            self.cache.classes,
            self.cache.device_owner.keys(),
            deadline=deadline,
            now=self.clock.monotonic,
            explain_failure=explain,
            features=self.features,
            consumed=self.cache.consumed,
        )
        if not explain and not outcome.timed_out:
            if len(node.memo) > MAX_MEMO_PER_NODE:
                node.memo.clear()
            node.memo[memo_key] = outcome
        return outcome

    @staticmethod
    def _static(node: NodeEntry, pod: PodShape) -> int:
        """NodeResourcesFit (LeastAllocated) + NodeResourcesBalancedAllocation on this node."""
        alloc, requested, requests = node.allocatable, node.requested, pod.requests
        return scoring.static_score((alloc.get("cpu", 0), alloc.get("memory", 0)),
                                    (requested.get("cpu", 0), requested.get("memory", 0)), node.nonzero,
                                    (requests.get("cpu", 0), requests.get("memory", 0)), pod.nonzero)

    # --- the equivalence cache ---------------------------------------------------------------------

    def _nodes(self) -> list[str]:
        if self._node_names is None:
            self._node_names = sorted(n for n, e in self.cache.nodes.items() if e.obj)
            self._node_index = {name: i for i, name in enumerate(self._node_names)}
            self._node_epoch += 1
        return self._node_names

    def _shape_id(self, shape: Any) -> int:
        """A small int standing for `shape`. Shapes include the cache's global version, so old
        ones pile up: past a bound the ids, skip sets and every node's results are dropped
        together (an id is never reused for another shape while a node still holds results
        under it)."""
        found = self._shape_ids.get(shape)
        if found is not None:
            return found
        if len(self._shape_ids) >= MAX_SHAPES:
            self._shape_ids.clear()
            self._skips.clear()
            for node in self.cache.nodes.values():
                node.results.clear()
        new = self._shape_ids[shape] = len(self._shape_ids)
        return new

    def _state(self, shape: int) -> ShapeState:
        """The shape's state, brought up to date with the nodes changed since it was last used."""
        names = self._nodes()
        state = self._skips.get(shape)
        if state is None:
            if len(self._skips) >= MAX_SHAPE_STATES:
                self._skips.clear()
            state = self._skips[shape] = ShapeState()
        changed = self.cache.changes_since(state.seen) if state.epoch == self._node_epoch else None
        if changed is None:
            state.reset(len(names))
        elif state.misfit or state.fit:
            index = self._node_index
            for name in changed:
                i = index.get(name)
                if i is not None:
                    state.forget(i, name)
        state.seen = self.cache.change_seq
        state.epoch = self._node_epoch
        return state

    @staticmethod
    def _remember(node: NodeEntry, shape: Any, reason: str | None, value: Any) -> None:
        """Keep (version, reason, failed outcome | candidate, candidate's rank) for pods of the
        same shape."""
        if shape is None:
            return
        if len(node.results) > MAX_RESULTS_PER_NODE:
            node.results.clear()
        node.results[shape] = (node.version, reason, value, value.rank() if reason is None else None)
