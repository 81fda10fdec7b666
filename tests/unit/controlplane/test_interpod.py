"""Inter-pod affinity, anti-affinity and topology spread (interpod.py): the pure filter against
upstream's cases, then through the scheduler (placements, FailedScheduling text, the queue moving a
pod back when an assigned pod goes, plain pods beside anti-affinity holders)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.controlplane.scheduler import hints, interpod
from nodeagent.controlplane.scheduler.interpod import (
    AFFINITY,
    ANTI_AFFINITY,
    EXISTING_ANTI_AFFINITY,
    SPREAD,
    SPREAD_LABEL,
    AssignedPod,
    NodeView,
    PodTerms,
)
from nodeagent.objects.common import label_selector_matches as selector_matches
from tests.unit.controlplane.test_scheduler_support import Cluster, node, pod

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def term(labels: Mapping[str, str] | None, key: str = HOST, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": None if labels is None else {"matchLabels": dict(labels)}, "topologyKey": key, **extra}


def spec(*, affinity: Sequence[Mapping[str, Any]] = (), anti: Sequence[Mapping[str, Any]] = (),
         spread: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    aff: dict[str, Any] = {}
    if affinity:
        aff["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(affinity)}
    if anti:
        aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(anti)}
    out: dict[str, Any] = {"affinity": aff} if aff else {}
    if spread:
        out["topologySpreadConstraints"] = list(spread)
    return out


def constraint(labels: Mapping[str, str], key: str = ZONE, skew: int = 1, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": dict(labels)}, **extra}


NODES = {"a": {HOST: "a", ZONE: "z1"}, "b": {HOST: "b", ZONE: "z1"}, "c": {HOST: "c", ZONE: "z2"},
         "d": {HOST: "d"}}


def run(terms_spec: Mapping[str, Any], placed: Mapping[str, Sequence[AssignedPod]], labels: Mapping[str, str],
        namespace: str = "default", eligible: Any = None,
        namespaces: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, str | None]:
    terms = interpod.terms_of(terms_spec)
    nodes = [NodeView(n, lbls, eligible or (lambda c: True)) for n, lbls in NODES.items()]
    holders = [(n, p) for n, pods in placed.items() for p in pods if p.terms is not None and p.terms.anti]
    f = interpod.prefilter(namespace, labels, terms, nodes, lambda n: placed.get(n, ()), holders,
                           lambda: namespaces or {})
    if f is None:
        return dict.fromkeys(NODES)
    return {n: f.reason(lbls) for n, lbls in NODES.items()}


def web(ns: str = "default", terms: PodTerms | None = None, **labels: str) -> AssignedPod:
    return AssignedPod(ns, {"app": "web", **labels}, False, terms)


def test_selector_semantics() -> None:
    assert not selector_matches(None, {"a": "1"})  # nil: nothing
    assert selector_matches({}, {"a": "1"})  # {}: everything
    exprs = {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]},
                                  {"key": "b", "operator": "NotIn", "values": ["x"]},
                                  {"key": "c", "operator": "DoesNotExist"}]}
    assert selector_matches(exprs, {"a": "2"})
    assert not selector_matches(exprs, {"a": "2", "b": "x"})
    assert not selector_matches(exprs, {"a": "2", "c": ""})
    assert not selector_matches(exprs, {"b": "y"})


def test_anti_affinity_on_hostname_and_zone() -> None:
    s = spec(anti=[term({"app": "web"})])
    assert run(s, {"a": [web()]}, {"app": "web"}) == {"a": ANTI_AFFINITY, "b": None, "c": None, "d": None}
    # another namespace does not count unless named
    assert run(s, {"a": [web("other")]}, {"app": "web"})["a"] is None
    named = spec(anti=[term({"app": "web"}, namespaces=["other"])])
    assert run(named, {"a": [web("other")]}, {"app": "web"})["a"] == ANTI_AFFINITY
    # a namespaceSelector: {} is every namespace, a selector the namespaces with those labels
    every = spec(anti=[term({"app": "web"}, namespaceSelector={})])
    assert run(every, {"a": [web("x")]}, {"app": "web"})["a"] == ANTI_AFFINITY
    picked = spec(anti=[term({"app": "web"}, namespaceSelector={"matchLabels": {"team": "t"}})])
    assert run(picked, {"a": [web("x")]}, {"app": "web"}, namespaces={"x": {"team": "t"}})["a"] == ANTI_AFFINITY
    assert run(picked, {"a": [web("x")]}, {"app": "web"}, namespaces={"x": {}})["a"] is None
    # the zone: both nodes of z1 are out, the node without the label is not
    zone = spec(anti=[term({"app": "web"}, ZONE)])
    assert run(zone, {"a": [web()]}, {}) == {"a": ANTI_AFFINITY, "b": ANTI_AFFINITY, "c": None, "d": None}


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    holder = web(terms=interpod.terms_of(spec(anti=[term({"app": "db"}, ZONE)])))
    got = run({}, {"a": [holder]}, {"app": "db"})
    assert got == {"a": EXISTING_ANTI_AFFINITY, "b": EXISTING_ANTI_AFFINITY, "c": None, "d": None}
    assert run({}, {"a": [holder]}, {"app": "other"}) == dict.fromkeys(NODES)  # Skip: nothing to check
    assert run({}, {"a": [holder]}, {"app": "db"}, namespace="x") == dict.fromkeys(NODES)  # the holder's namespace


def test_affinity_and_the_first_pod_of_a_group() -> None:
    s = spec(affinity=[term({"app": "web"}, ZONE)])
    # a matching pod in z1: only z1 nodes (d lacks the key)
    assert run(s, {"b": [web()]}, {"app": "web"}) == {"a": None, "b": None, "c": AFFINITY, "d": AFFINITY}
    # no matching pod anywhere: the pod matching its own terms goes where the keys are; else nowhere
    assert run(s, {}, {"app": "web"}) == {"a": None, "b": None, "c": None, "d": AFFINITY}
    assert run(s, {}, {"app": "db"}) == {"a": AFFINITY, "b": AFFINITY, "c": AFFINITY, "d": AFFINITY}
    # a pod must match all terms to count
    both = spec(affinity=[term({"app": "web"}), term({"tier": "x"}, ZONE)])
    assert run(both, {"a": [web()]}, {"app": "web", "tier": "x"})["a"] is None  # self-affinity: a has the keys
    assert run(both, {"a": [web(tier="x")]}, {"app": "web"}) == {
        "a": None, "b": AFFINITY, "c": AFFINITY, "d": AFFINITY}


def test_match_label_keys_are_merged() -> None:
    s = spec(anti=[term({"app": "web"}, matchLabelKeys=["rev"])])
    assert run(s, {"a": [web(rev="1")], "b": [web(rev="2")]}, {"app": "web", "rev": "2"})["a"] is None
    assert run(s, {"a": [web(rev="1")], "b": [web(rev="2")]}, {"app": "web", "rev": "2"})["b"] == ANTI_AFFINITY


def test_spread_skew_min_domains_and_labels() -> None:
    s = spec(spread=[constraint({"app": "web"})])
    # z1 has 1, z2 has 0: z1 would make 2 - 0 > 1; d has no zone label
    assert run(s, {"a": [web()]}, {"app": "web"}) == {"a": SPREAD, "b": SPREAD, "c": None, "d": SPREAD_LABEL}
    assert run(s, {"a": [web()], "c": [web()]}, {"app": "web"})["a"] is None
    # a pod its own selector does not match adds nothing
    assert run(s, {"a": [web()]}, {"app": "db"})["a"] is None
    # deleting pods and other namespaces are not counted
    gone = AssignedPod("default", {"app": "web"}, True, None)
    assert run(s, {"a": [gone, web("x")]}, {"app": "web"})["a"] is None
    # minDomains above the domains there are: the minimum is 0
    md = spec(spread=[constraint({"app": "web"}, minDomains=3)])
    assert run(md, {"a": [web()], "c": [web()]}, {"app": "web"})["a"] == SPREAD
    # nodes the inclusion policies leave out are no domain: none left, the minimum is 0 and nothing counts
    assert run(s, {"a": [web()]}, {"app": "web"}, eligible=lambda c: False)["a"] is None


def test_hints() -> None:
    for reason in (AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY, SPREAD, SPREAD_LABEL):
        events = hints.for_reasons([reason])
        assert events is not None and {hints.ASSIGNED_POD_ADD, hints.ASSIGNED_POD_DELETE, hints.NODE} <= events
    assert hints.POD_TOLERATIONS in (hints.for_reasons([SPREAD]) or ())


def _web_pod(name: str, extra: Mapping[str, Any], app: str = "web") -> dict[str, Any]:
    p = pod(name)
    p["metadata"]["labels"] = {"app": app}
    p["spec"].update(extra)
    return p


def _where(c: Cluster, *names: str) -> dict[str, str]:
    return {n: c.get("Pod", n)["spec"].get("nodeName", "") for n in names}


async def test_scheduler_places_one_per_node_then_fails_with_upstream_text() -> None:
    c = Cluster()
    c.add(*(node(n) for n in ("a", "b", "c")))
    anti = spec(anti=[term({"app": "web"})])
    c.add(*(_web_pod(f"w{i}", anti) for i in range(4)))
    c.run()
    placed = _where(c, "w0", "w1", "w2", "w3")
    assert sorted(v for v in placed.values() if v) == ["a", "b", "c"]
    pending = next(n for n, v in placed.items() if not v)
    msg = c.get("Pod", pending)["status"]["conditions"][0]["message"]
    assert msg == ("0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes "
                   "are available: 3 No preemption victims found for incoming pod.")
    # a plain pod beside them is not held back; one the holders reject is
    c.add(_web_pod("plain", {}, app="other"), _web_pod("rejected", {}))
    c.run()
    assert _where(c, "plain")["plain"]
    assert c.get("Pod", "rejected")["status"]["conditions"][0]["message"].startswith(
        "0/3 nodes are available: 3 node(s) didn't satisfy existing pods anti-affinity rules.")
    # a holder goes: the pending pod moves back (AssignedPod/Delete) and takes its node
    gone = next(n for n, v in placed.items() if v == "b")
    c.delete("Pod", gone)
    c.run()
    assert _where(c, pending)[pending] == "b"


async def test_scheduler_spread_and_affinity() -> None:
    c = Cluster()
    c.add(node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z1"}), node("c", labels={ZONE: "z2"}))
    s = spec(spread=[constraint({"app": "web"})])
    c.add(*(_web_pod(f"s{i}", s) for i in range(4)))
    c.run()
    zones = {"a": "z1", "b": "z1", "c": "z2"}
    got = [zones[v] for v in _where(c, "s0", "s1", "s2", "s3").values()]
    assert sorted(got) == ["z1", "z1", "z2", "z2"]
    # affinity to a label no pod has (and the pod not matching itself): nowhere, unresolvable
    c.add(_web_pod("lonely", spec(affinity=[term({"app": "none"})])))
    c.run()
    assert c.get("Pod", "lonely")["status"]["conditions"][0]["message"] == (
        "0/3 nodes are available: 3 node(s) didn't match pod affinity rules. preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling.")
    # the first pod of a group with affinity to itself goes; the next joins it
    c.add(_web_pod("g0", spec(affinity=[term({"app": "g"})]), app="g"))
    c.run()
    first = _where(c, "g0")["g0"]
    c.add(_web_pod("g1", spec(affinity=[term({"app": "g"})]), app="g"))
    c.run()
    assert first and _where(c, "g1")["g1"] == first


async def test_scheduler_reads_namespace_labels_for_a_namespace_selector() -> None:
    c = Cluster()
    c.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"team": "a"}}},
          node("a"), node("b"))
    holder = pod("holder", namespace="team-a", node_name="a")
    holder["metadata"]["labels"] = {"app": "web"}
    c.add(holder)
    # without the filter "a" wins the tie (same utilisation, name order)
    c.add(_web_pod("p", spec(anti=[term({"app": "web"}, namespaceSelector={"matchLabels": {"team": "a"}})]),
                   app="other"))
    c.run()
    assert _where(c, "p")["p"] == "b"
