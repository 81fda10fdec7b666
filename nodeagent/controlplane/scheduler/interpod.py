"""Constraints between pods: the scheduler's InterPodAffinity and PodTopologySpread filters
(kube-scheduler v1.37.2, pkg/scheduler/framework/plugins/interpodaffinity and podtopologyspread).

A pod's terms are parsed once per pod generation (`terms_of`, kept in its Placement); `prefilter`
counts, over the pods assigned to nodes (the scheduler's cache, its own bindings included), what
the filters compare, once per attempt; `Filter.reason` answers per node.

- PodTopologySpread, whenUnsatisfiable DoNotSchedule only: a node without a constraint's
  topologyKey is out, "node(s) didn't match pod topology spread constraints (missing required
  label)" (UnschedulableAndUnresolvable); else matching pods in the node's domain + the pod itself
  (when its labels match) - the global minimum over the eligible domains (0 with fewer domains than
  minDomains) must not exceed maxSkew: "node(s) didn't match pod topology spread constraints"
  (Unschedulable). Eligible nodes carry every constraint's key and pass nodeAffinityPolicy (default
  Honor: the pod's nodeSelector and required node affinity) and nodeTaintsPolicy (default Ignore;
  Honor: NoSchedule/NoExecute taints tolerated); counted pods are in the pod's namespace, not
  deleting, matched by the selector (matchLabelKeys merged in with the pod's values). The system
  default constraints are all ScheduleAnyway: none for the filter.
- InterPodAffinity: every required affinity term needs the node's topology label and a pod in that
  domain matching all the terms, unless no pod anywhere matches them all and the pod matches its
  own terms (the first of a group): "node(s) didn't match pod affinity rules"
  (UnschedulableAndUnresolvable); no pod matching a required anti-affinity term may be in the
  node's domain for that term: "node(s) didn't match pod anti-affinity rules"; no assigned pod's
  required anti-affinity term may match this pod in a domain of this node: "node(s) didn't
  satisfy existing pods anti-affinity rules" (both Unschedulable). A term's namespaces are its
  own, the pod's namespace when it names none and has no namespaceSelector, plus those its
  namespaceSelector matches ({}: every namespace).
- matchLabelKeys / mismatchLabelKeys of affinity terms: kube-apiserver merges them into the
  labelSelector at pod creation (the embedded API server does not); they are merged here, with the
  pod's current labels, which is the same selector for a pod created by kube-apiserver (a
  requirement added twice) and the API server's for one created here.

Their scores (ScheduleAnyway constraints and the system default spreading, preferred pod affinity and
anti-affinity) are scoring.py's, from the terms parsed here. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.objects.common import label_selector_matches as selector_matches

HOSTNAME = "kubernetes.io/hostname"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL = SPREAD + " (missing required label)"

Labels = Mapping[str, str]


def _empty(selector: Mapping[str, Any] | None) -> bool:
    """labels.Selector.Empty(): no requirements (a nil selector is Nothing, not empty)."""
    return selector is not None and not selector.get("matchLabels") and not selector.get("matchExpressions")


def with_keys(selector: Mapping[str, Any] | None, labels: Labels, match: Sequence[str],
               mismatch: Sequence[str] = ()) -> Mapping[str, Any] | None:
    """The selector with `key In (pod's value)` for each matchLabelKey and `key NotIn (value)` for
    each mismatchLabelKey the pod has (a nil selector gains them too, as the API server does)."""
    extra = [{"key": k, "operator": "In", "values": [labels[k]]} for k in match if k in labels]
    extra += [{"key": k, "operator": "NotIn", "values": [labels[k]]} for k in mismatch if k in labels]
    if not extra:
        return selector
    base = dict(selector or {})
    base["matchExpressions"] = [*(base.get("matchExpressions") or ()), *extra]
    return base


@dataclass(frozen=True)
class Term:
    """A required PodAffinityTerm as written (namespaces resolved against the owner's namespace
    when matching)."""

    selector: Mapping[str, Any] | None
    namespaces: tuple[str, ...]
    ns_selector: Mapping[str, Any] | None
    topology_key: str
    match_keys: tuple[str, ...] = ()
    mismatch_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Spread:
    max_skew: int
    topology_key: str
    selector: Mapping[str, Any] | None
    min_domains: int = 1
    honor_affinity: bool = True  # nodeAffinityPolicy (default Honor)
    honor_taints: bool = False  # nodeTaintsPolicy (default Ignore)
    match_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class PodTerms:
    """A pod's required pod affinity, anti-affinity and DoNotSchedule spread constraints (the
    filters), and what only scores (scoring.py): its preferred terms with their weights and its
    ScheduleAnyway constraints; `constrained`: it has topologySpreadConstraints of either kind (the
    system default constraints are then not used)."""

    affinity: tuple[Term, ...] = ()
    anti: tuple[Term, ...] = ()
    spread: tuple[Spread, ...] = ()
    key: str = field(default="", compare=False)
    preferred: tuple[tuple[int, Term], ...] = ()
    preferred_anti: tuple[tuple[int, Term], ...] = ()
    soft_spread: tuple[Spread, ...] = ()
    constrained: bool = False

    @property
    def filters(self) -> bool:
        """Anything for the filters (else only scores)."""
        return bool(self.affinity or self.anti or self.spread)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _sel(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _terms(raw: Any) -> tuple[Term, ...]:
    return tuple(
        Term(_sel(t.get("labelSelector")), _strs(t.get("namespaces")), _sel(t.get("namespaceSelector")),
             str(t.get("topologyKey") or ""), _strs(t.get("matchLabelKeys")), _strs(t.get("mismatchLabelKeys")))
        for t in raw or () if isinstance(t, Mapping))


def _weighted(raw: Any) -> tuple[tuple[int, Term], ...]:
    """WeightedPodAffinityTerms (weight, term)."""
    items = [t for t in raw or () if isinstance(t, Mapping)]
    terms = _terms([_mapping(t.get("podAffinityTerm")) for t in items])
    return tuple((int(t.get("weight") or 0), term) for t, term in zip(items, terms, strict=True))


def terms_of(spec: Mapping[str, Any]) -> PodTerms | None:
    """The pod's terms, None when it has none."""
    aff = _mapping(spec.get("affinity"))
    if not (aff.get("podAffinity") or aff.get("podAntiAffinity") or spec.get("topologySpreadConstraints")):
        return None  # the common case, once per pod
    pod_aff, pod_anti = _mapping(aff.get("podAffinity")), _mapping(aff.get("podAntiAffinity"))
    affinity = _terms(pod_aff.get("requiredDuringSchedulingIgnoredDuringExecution"))
    anti = _terms(pod_anti.get("requiredDuringSchedulingIgnoredDuringExecution"))
    preferred = _weighted(pod_aff.get("preferredDuringSchedulingIgnoredDuringExecution"))
    preferred_anti = _weighted(pod_anti.get("preferredDuringSchedulingIgnoredDuringExecution"))
    spread: list[Spread] = []
    soft: list[Spread] = []
    constraints = [c for c in spec.get("topologySpreadConstraints") or () if isinstance(c, Mapping)]
    for c in constraints:
        when = c.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            continue
        min_domains = c.get("minDomains")
        (spread if when == "DoNotSchedule" else soft).append(Spread(
            int(c.get("maxSkew") or 0), str(c.get("topologyKey") or ""), _sel(c.get("labelSelector")),
            min_domains if isinstance(min_domains, int) and min_domains > 0 else 1,
            c.get("nodeAffinityPolicy") != "Ignore", c.get("nodeTaintsPolicy") == "Honor",
            _strs(c.get("matchLabelKeys"))))
    if not (affinity or anti or spread or preferred or preferred_anti or constraints):
        return None
    key = json.dumps([aff.get("podAffinity"), aff.get("podAntiAffinity"), spec.get("topologySpreadConstraints")],
                     sort_keys=True, separators=(",", ":"), default=str)
    return PodTerms(affinity, anti, tuple(spread), key, preferred, preferred_anti, tuple(soft), bool(constraints))


@dataclass(frozen=True)
class AssignedPod:
    """A pod counted on a node: its namespace, labels, whether it is being deleted, its terms."""

    namespace: str
    labels: Labels
    deleting: bool
    terms: PodTerms | None


@dataclass(frozen=True)
class NodeView:
    name: str
    labels: Labels
    eligible: Callable[[Spread], bool]  # the node passes the constraint's node inclusion policies


class Resolved:
    """A term of the incoming pod with its namespaces and selector resolved (PreFilter's merge)."""

    def __init__(self, term: Term, namespace: str, labels: Labels, namespaces: Callable[[], Mapping[str, Labels]]):
        self.key = term.topology_key
        self.selector = with_keys(term.selector, labels, term.match_keys, term.mismatch_keys)
        self.every_ns = term.ns_selector is not None and not term.ns_selector
        names = set(term.namespaces)
        if not term.namespaces and term.ns_selector is None:
            names.add(namespace)
        elif term.ns_selector:
            names.update(n for n, lbls in namespaces().items() if selector_matches(term.ns_selector, lbls))
        self.namespaces = frozenset(names)

    def matches(self, pod: AssignedPod) -> bool:
        return (self.every_ns or pod.namespace in self.namespaces) and selector_matches(self.selector, pod.labels)


def existing_matches(term: Term, owner: AssignedPod, namespace: str, labels: Labels, ns_labels: Labels) -> bool:
    """An assigned pod's term against the incoming pod (AffinityTerm.Matches with the incoming
    pod's namespace labels)."""
    if term.namespaces or term.ns_selector is not None:
        in_ns = namespace in term.namespaces or selector_matches(term.ns_selector, ns_labels)
    else:
        in_ns = namespace == owner.namespace
    return in_ns and selector_matches(with_keys(term.selector, owner.labels, term.match_keys, term.mismatch_keys),
                                      labels)


@dataclass
class Filter:
    """PreFilter's state for one pod: `reason(node)` is the spread then the inter-pod affinity
    Filter's answer."""

    labels: Labels
    spread: list[tuple[Spread, Mapping[str, Any] | None, dict[str, int]]] = field(default_factory=list)
    affinity: list[Resolved] = field(default_factory=list)
    affinity_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    self_affinity: bool = False  # no pod matches all affinity terms and the pod matches them itself
    anti: list[Resolved] = field(default_factory=list)
    anti_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    existing_counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def reason(self, labels: Labels) -> str | None:
        for c, selector, counts in self.spread:
            value = labels.get(c.topology_key)
            if value is None:
                return SPREAD_LABEL
            minimum = min(counts.values()) if len(counts) >= c.min_domains else 0
            own = 1 if selector_matches(selector, self.labels) else 0
            if counts.get(value, 0) + own - minimum > c.max_skew:
                return SPREAD
        if self.affinity:
            if any(t.key not in labels for t in self.affinity):
                return AFFINITY
            found = all(self.affinity_counts.get((t.key, labels[t.key]), 0) > 0 for t in self.affinity)
            if not found and (self.affinity_counts or not self.self_affinity):  # else: the first of its group
                return AFFINITY
        for t in self.anti:
            value = labels.get(t.key)
            if value is not None and self.anti_counts.get((t.key, value), 0) > 0:
                return ANTI_AFFINITY
        if self.existing_counts and any(self.existing_counts.get(kv, 0) > 0 for kv in labels.items()):
            return EXISTING_ANTI_AFFINITY
        return None


def _add(counts: dict[tuple[str, str], int], labels: Labels, key: str) -> None:
    value = labels.get(key)
    if value is not None:
        counts[(key, value)] = counts.get((key, value), 0) + 1


def prefilter(namespace: str, labels: Labels, terms: PodTerms | None, nodes: Sequence[NodeView],
              pods_on: Callable[[str], Iterable[AssignedPod]], anti_holders: Iterable[tuple[str, AssignedPod]],
              namespaces: Callable[[], Mapping[str, Labels]]) -> Filter | None:
    """The state for a pod in `namespace` with `labels` and `terms`: `nodes` are the nodes with
    their labels, `pods_on(node)` the pods assigned there, `anti_holders` (node, pod) for the
    assigned pods with required anti-affinity terms; `namespaces()` namespace -> labels. None when
    nothing constrains the pod (upstream's Skip)."""
    out = Filter(labels)
    by_name = {n.name: n for n in nodes}
    own_ns: list[Labels] = []  # the pod's namespace labels, read once when a term has a namespaceSelector

    def ns_labels() -> Labels:
        if not own_ns:
            own_ns.append(namespaces().get(namespace, {}))
        return own_ns[0]

    for node_name, holder in anti_holders:
        node = by_name.get(node_name)
        if node is None or holder.terms is None:
            continue
        for term in holder.terms.anti:
            if existing_matches(term, holder, namespace, labels, ns_labels() if term.ns_selector else {}):
                _add(out.existing_counts, node.labels, term.topology_key)
    if terms is None or not terms.filters:
        return out if out.existing_counts else None
    out.affinity = [Resolved(t, namespace, labels, namespaces) for t in terms.affinity]
    out.anti = [Resolved(t, namespace, labels, namespaces) for t in terms.anti]
    spread = [(c, with_keys(c.selector, labels, c.match_keys)) for c in terms.spread]
    out.spread = [(c, sel, {}) for c, sel in spread]
    keys = [c.topology_key for c in terms.spread]
    for node in nodes:
        pods = None
        if out.affinity or out.anti:
            pods = list(pods_on(node.name))
            for pod in pods:
                if out.affinity and all(t.matches(pod) for t in out.affinity):
                    for t in out.affinity:
                        _add(out.affinity_counts, node.labels, t.key)
                for t in out.anti:
                    if t.matches(pod):
                        _add(out.anti_counts, node.labels, t.key)
        if not out.spread or not all(k in node.labels for k in keys):
            continue
        if pods is None:
            pods = list(pods_on(node.name))
        for c, sel, counts in out.spread:
            if not node.eligible(c):
                continue
            value = node.labels[c.topology_key]
            matched = 0 if _empty(sel) else sum(  # countPodsMatchSelector: an empty selector counts none
                1 for p in pods if not p.deleting and p.namespace == namespace and selector_matches(sel, p.labels))
            counts[value] = counts.get(value, 0) + matched
    if out.affinity and not out.affinity_counts:
        me = AssignedPod(namespace, labels, False, None)
        out.self_affinity = all(t.matches(me) for t in out.affinity)
    return out
