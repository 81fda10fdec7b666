"""The PreScore of the default profile's set-level score plugins (scoring.py) for one pod: what each
needs from the cluster cache, or None when its score cannot differ between nodes (upstream's Skip,
or a constant score), so that a plain pod costs a few lookups.

- TaintToleration: the pod's tolerations of PreferNoSchedule taints, when some node has such a taint;
- NodeAffinity: the pod's preferred terms (addedAffinity is a plugin argument: none here);
- InterPodAffinity: the topology score map (processExistingPod over the pods on every node when
  the pod has preferred terms, else over the pods with affinity terms; HardPodAffinityWeight 1);
- PodTopologySpread: the pod's ScheduleAnyway constraints, or with no constraints at all the system
  default ones (hostname maxSkew 3, zone maxSkew 5) over DefaultSelector (the Services selecting the
  pod, its controller ReplicationController, ReplicaSet or StatefulSet), with the matching pods
  counted per node;
- ImageLocality: when a node lists one of the pod's images;
- DynamicResources: when a claim of the pod has firstAvailable requests (DRAPrioritizedList).
Pure: the store's Services and controllers come through the callables given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from nodeagent.controlplane.scheduler import interpod, placement, scoring
from nodeagent.controlplane.scheduler.cache import ClusterCache
from nodeagent.objects.common import label_selector_matches

ZONE = "topology.kubernetes.io/zone"
DEFAULT_CONSTRAINTS = ((scoring.HOSTNAME, 3), (ZONE, 5))  # systemDefaultConstraints
_CONTROLLERS = {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")}

Services = Callable[[str], Iterable[Mapping[str, Any]]]  # namespace -> its Services
Controller = Callable[[str, str, str], Mapping[str, Any] | None]  # (kind, namespace, name) -> object


def prescore(cache: ClusterCache, namespace: str, pod: Mapping[str, Any], place: placement.Placement, *,
             to_allocate: Sequence[Mapping[str, Any]] = (), allocated: Sequence[Mapping[str, Any]] = (),
             prioritized_list: bool = True, services: Services | None = None,
             controller: Controller | None = None,
             namespaces: Callable[[], Mapping[str, Mapping[str, str]]] | None = None) -> scoring.PodScores | None:
    """The pod's set-level score state, None when every such plugin is skipped (the common case)."""
    labels: Mapping[str, str] = pod["metadata"].get("labels") or {}
    terms = place.pod_terms
    taints = None
    if cache.prefer_no_schedule:
        taints = tuple(t for t in place.tolerations if t.effect in ("", placement.PREFER_NO_SCHEDULE))
    preferred = place if any(w and (t.get("matchExpressions") or t.get("matchFields")) for w, t in place.preferred) \
        else None
    affinity = None
    if (terms is not None and (terms.preferred or terms.preferred_anti)) or cache.affinity_pods:
        affinity = _affinity(cache, namespace, labels, terms, namespaces or dict)
    spread = _spread(cache, namespace, pod, labels, place, services, controller)
    images = _images(cache, pod.get("spec") or {}) if cache.images else None
    dra = _dra(to_allocate, allocated) if prioritized_list and (to_allocate or allocated) else None
    scores = scoring.PodScores(taints, preferred, affinity, spread, images, dra)
    return scores if scores.active else None


# --- InterPodAffinity ------------------------------------------------------------------------------


def _affinity(cache: ClusterCache, namespace: str, labels: Mapping[str, str], terms: interpod.PodTerms | None,
              namespaces: Callable[[], Mapping[str, Mapping[str, str]]]) -> dict[str, dict[str, int]] | None:
    """PreScore's topologyScore, None when no term matched (Skip)."""
    mine = [(w, interpod.Resolved(t, namespace, labels, namespaces), 1) for w, t in terms.preferred] if terms else []
    if terms is not None:
        mine += [(w, interpod.Resolved(t, namespace, labels, namespaces), -1) for w, t in terms.preferred_anti]
    pods = (p for p in cache.pods.values() if p.active) if mine else iter(cache.affinity_pods.values())
    ns_labels: list[Mapping[str, str]] = []

    def own_ns() -> Mapping[str, str]:
        if not ns_labels:
            ns_labels.append(namespaces().get(namespace, {}))
        return ns_labels[0]

    out: dict[str, dict[str, int]] = {}

    def add(key: str, node_labels: Mapping[str, str], value: int) -> None:
        if key in node_labels:
            domain = out.setdefault(key, {})
            domain[node_labels[key]] = domain.get(node_labels[key], 0) + value

    for p in pods:
        node = cache.nodes.get(p.node)
        if node is None or not node.obj or not node.node.labels:
            continue
        node_labels = node.node.labels
        md = p.obj["metadata"]
        other = interpod.AssignedPod(md.get("namespace") or "default", md.get("labels") or {},
                                     bool(md.get("deletionTimestamp")), p.placement.pod_terms)
        for weight, term, sign in mine:
            if term.matches(other):
                add(term.key, node_labels, weight * sign)
        theirs = other.terms
        if theirs is None:
            continue
        for weight, t, sign in ((1, t, 1) for t in theirs.affinity):
            if interpod.existing_matches(t, other, namespace, labels, own_ns() if t.ns_selector else {}):
                add(t.topology_key, node_labels, weight * sign)
        for weight, t, sign in [*((w, t, 1) for w, t in theirs.preferred),
                                *((w, t, -1) for w, t in theirs.preferred_anti)]:
            if interpod.existing_matches(t, other, namespace, labels, own_ns() if t.ns_selector else {}):
                add(t.topology_key, node_labels, weight * sign)
    return out or None


# --- PodTopologySpread -----------------------------------------------------------------------------


def default_selector(namespace: str, pod: Mapping[str, Any], labels: Mapping[str, str],
                     services: Services | None, controller: Controller | None) -> dict[str, Any] | None:
    """helper.DefaultSelector as a label selector, None when it is empty."""
    match: dict[str, str] = {}
    for svc in services(namespace) if services is not None else ():
        selector = (svc.get("spec") or {}).get("selector")
        if isinstance(selector, Mapping) and selector and all(labels.get(k) == v for k, v in selector.items()):
            match.update(selector)
    exprs: list[Mapping[str, Any]] = []
    owner = next((r for r in pod["metadata"].get("ownerReferences") or () if r.get("controller")), None)
    if owner is not None and controller is not None and (owner.get("apiVersion"), owner.get("kind")) in _CONTROLLERS:
        obj = controller(str(owner["kind"]), namespace, str(owner.get("name") or ""))
        selector = (obj.get("spec") or {}).get("selector") if obj is not None else None
        if owner["kind"] == "ReplicationController":
            if isinstance(selector, Mapping):
                match.update(selector)
        elif isinstance(selector, Mapping):
            exprs += [{"key": k, "operator": "In", "values": [v]}
                      for k, v in (selector.get("matchLabels") or {}).items()]
            exprs += list(selector.get("matchExpressions") or ())
    if not match and not exprs:
        return None
    return {"matchLabels": match, "matchExpressions": exprs}


def _spread(cache: ClusterCache, namespace: str, pod: Mapping[str, Any], labels: Mapping[str, str],
            place: placement.Placement, services: Services | None,
            controller: Controller | None) -> scoring.SpreadState | None:
    terms = place.pod_terms
    soft: list[tuple[str, int, Mapping[str, Any] | None, bool, bool]] = []
    if terms is not None and terms.constrained:
        soft = [(c.topology_key, c.max_skew, interpod.with_keys(c.selector, labels, c.match_keys), c.honor_affinity,
                 c.honor_taints) for c in terms.soft_spread]
    elif labels or pod["metadata"].get("ownerReferences"):  # else no Service nor controller selects it
        default = default_selector(namespace, pod, labels, services, controller)
        if default is not None:
            soft = [(key, skew, default, True, False) for key, skew in DEFAULT_CONSTRAINTS]
    if not soft:
        return None
    nodes = {name: e.node.labels for name, e in cache.nodes.items() if e.obj}
    counts: list[dict[str, int]] = [{} for _ in soft]
    for p in cache.pods.values():
        if not p.active or p.node not in nodes:
            continue
        md = p.obj["metadata"]
        if md.get("deletionTimestamp") or (md.get("namespace") or "default") != namespace:
            continue
        pod_labels = md.get("labels") or {}
        for i, (_, _, selector, _, _) in enumerate(soft):
            if not _empty(selector) and label_selector_matches(selector, pod_labels):
                counts[i][p.node] = counts[i].get(p.node, 0) + 1

    def inclusion(affinity: bool, taints: bool) -> Callable[[str], bool]:
        def eligible(name: str) -> bool:
            node = cache.nodes[name]
            return ((not affinity or place.node_affinity(name, node.node.labels))
                    and (not taints or place.tolerates(node.taints)))
        return eligible

    constraints = tuple(scoring.SoftConstraint(key, skew, counts[i], inclusion(aff, tnt))
                        for i, (key, skew, _, aff, tnt) in enumerate(soft))
    return scoring.SpreadState(constraints, bool(terms is not None and terms.constrained), nodes)


def _empty(selector: Mapping[str, Any] | None) -> bool:
    return selector is not None and not selector.get("matchLabels") and not selector.get("matchExpressions")


# --- ImageLocality and DynamicResources ------------------------------------------------------------


def normalized_image(name: str) -> str:
    """normalizedImageName: ":latest" when the name has no tag."""
    return name if name.rfind(":") > name.rfind("/") else name + ":latest"


def _images(cache: ClusterCache, spec: Mapping[str, Any]) -> scoring.ImageState | None:
    containers = [c for key in ("initContainers", "containers") for c in spec.get(key) or () if isinstance(c, Mapping)]
    names = [normalized_image(str(c.get("image") or "")) for c in containers]
    volumes = [v["image"] for v in spec.get("volumes") or () if isinstance(v, Mapping) and isinstance(v.get("image"),
                                                                                                      Mapping)]
    names += [normalized_image(str(v.get("reference") or "")) for v in volumes]
    if not any(n in cache.images for n in names):
        return None
    states = {n: (cache.images[n][0], len(cache.images[n][1])) for n in names if n in cache.images}
    total = sum(1 for e in cache.nodes.values() if e.obj)
    nodes = cache.nodes
    return scoring.ImageState(tuple(names), len(containers) + len(volumes), states,
                              lambda name: nodes[name].images, total)


def _first_available(claim: Mapping[str, Any]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
    return tuple((str(r.get("name")), tuple(str(s.get("name")) for s in r["firstAvailable"]))
                 for r in requests if isinstance(r, Mapping) and r.get("firstAvailable"))


def _dra(to_allocate: Sequence[Mapping[str, Any]], allocated: Sequence[Mapping[str, Any]]) -> scoring.DRAState | None:
    per_claim = tuple(_first_available(c) for c in to_allocate)
    constant = 0
    any_first = any(per_claim)
    for claim in allocated:
        requests = _first_available(claim)
        if requests:
            any_first = True
            results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or ()
            constant += scoring.dra_score(requests, [str(r.get("request")) for r in results])
    return scoring.DRAState(constant, per_claim) if any_first else None
