"""The default profile's scores (scoring.py, prescore.py): each plugin's arithmetic against values
worked out from kube-scheduler v1.37.2's formulas, then placements through the scheduler where the
weighted sum decides otherwise than the old lexicographic rank did (the same cases as
tests/integration/test_scoring_real.py, which checks them against the real kube-scheduler)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from nodeagent.controlplane.scheduler import prescore, scoring
from nodeagent.controlplane.scheduler.placement import Taint, Toleration, placement_of
from nodeagent.controlplane.scheduler.shapeindex import ShapeState
from tests.unit.controlplane.test_scheduler_support import Cluster, node, pod

GI = 1024 ** 3
MI = 1024 ** 2
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


# --- per node ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("alloc", "nonzero", "pod_nonzero", "want"), [
    ((4000, 8 * GI), (0, 0), (100, 200 * MI), 97),  # (3900*100//4000=97 + 97) // 2
    ((4000, 8 * GI), (3900, 0), (200, 0), 50),  # cpu over capacity scores 0, memory 100
    ((0, 8 * GI), (0, 4 * GI), (0, 0), 50),  # no cpu: memory alone
    ((0, 0), (0, 0), (100, 100), 0),
])
def test_least_allocated(alloc: tuple[int, int], nonzero: tuple[int, int], pod_nonzero: tuple[int, int],
                         want: int) -> None:
    assert scoring.least_allocated(alloc, nonzero, pod_nonzero) == want


@pytest.mark.parametrize(("alloc", "requested", "pod", "want"), [
    ((4000, 8 * GI), (0, 0), (1000, 2 * GI), 75),  # balanced before and after: 50 + 50 // 2
    ((4000, 8 * GI), (0, 0), (2000, 1 * GI), 65),  # std (.5 - .125) / 2 = .1875: 81; 50 + (50 + 81 - 100) // 2
    ((4000, 8 * GI), (2000, 1 * GI), (0, 3 * GI), 84),  # from 81 to 100: 50 + 69 // 2
    ((4000, 8 * GI), (8000, 0), (0, 8 * GI), 100),  # fractions capped at 1: from 50 to 100
])
def test_balanced_allocation(alloc: tuple[int, int], requested: tuple[int, int], pod: tuple[int, int],
                             want: int) -> None:
    assert scoring.balanced_allocation(alloc, requested, pod) == want


def test_static_score_skips_balance_for_a_best_effort_pod() -> None:
    alloc = (4000, 8 * GI)
    assert scoring.static_score(alloc, (0, 0), (0, 0), (0, 0), (100, 200 * MI)) == 97
    assert scoring.static_score(alloc, (0, 0), (0, 0), (1000, 2 * GI), (1000, 2 * GI)) == 75 + 75


def test_go_division_truncates_toward_zero() -> None:
    assert scoring._div(-7, 2) == -3 and scoring._div(7, 2) == 3 and scoring._div(-8, 2) == -4


# --- normalisers and the set-level plugins ------------------------------------------------------------


def test_normalizers() -> None:
    assert scoring.normalize_default([0, 3, 6]) == [0, 50, 100]
    assert scoring.normalize_default([1, 3]) == [33, 100]
    assert scoring.normalize_default([0, 0]) == [0, 0]
    assert scoring.normalize_default([0, 0], reverse=True) == [100, 100]
    assert scoring.normalize_default([0, 1, 2], reverse=True) == [100, 50, 0]
    assert scoring.normalize_min_max([-5, 0, 5]) == [0, 50, 100]
    assert scoring.normalize_min_max([-3, -1, 0]) == [0, 66, 100]
    assert scoring.normalize_min_max([4, 4]) == [0, 0]


def feasible(name: str, static: int = 0, labels: Mapping[str, str] | None = None,
             taints: Sequence[Taint] = (), dra: int = 0) -> scoring.Feasible:
    return scoring.Feasible(name, {HOST: name, **(labels or {})}, taints, static, dra)


def test_taints_and_node_affinity_weigh_three_to_two() -> None:
    ssd = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
    place = placement_of({"spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": ssd}]}}}})
    soft = Taint("dedicated", "ssd", "PreferNoSchedule")
    nodes = [feasible("ssd", labels={"disk": "ssd"}, taints=[soft]), feasible("hdd")]
    scores = scoring.PodScores(taints=(), preferred=place)
    assert scoring.totals(nodes, scores) == [2 * 100 + 3 * 0, 2 * 0 + 3 * 100]
    assert scoring.pick(nodes, scores) is nodes[1]
    tolerating = scoring.PodScores(taints=(Toleration("dedicated", "Exists"),), preferred=place)
    assert scoring.pick(nodes, tolerating) is nodes[0]


def test_pick_ties_go_to_the_first_name_and_a_lone_node_is_not_scored() -> None:
    nodes = [feasible("b", 10), feasible("a", 10), feasible("c", 5)]
    assert scoring.pick(nodes, scoring.PodScores()) is nodes[1]
    assert scoring.pick(nodes[2:], scoring.PodScores(taints=())) is nodes[2]
    assert scoring.pick([], scoring.PodScores()) is None


def test_spread_score_over_zones() -> None:
    """Two matching pods in z1 (on a), none in z2: log(2 + 2) per pod; b and c are the only ones
    scored, d lacks the key (ignored, 0) as the pod names its own constraints."""
    labels = {"a": {HOST: "a", ZONE: "z1"}, "b": {HOST: "b", ZONE: "z1"}, "c": {HOST: "c", ZONE: "z2"},
              "d": {HOST: "d"}}
    constraint = scoring.SoftConstraint(ZONE, 1, {"a": 2}, lambda name: True)
    state = scoring.SpreadState((constraint,), True, labels)
    nodes = [scoring.Feasible(n, labels[n], (), 0) for n in ("b", "c", "d")]
    raw_b = math.floor(2 * math.log(4) + 0.5)  # 3
    assert scoring._spread(state, nodes) == [100 * (raw_b + 0 - raw_b) // raw_b, 100, 0]
    # the hostname constraint counts the node's own pods, its weight the feasible nodes not ignored
    host = scoring.SoftConstraint(HOST, 3, {"a": 1}, lambda name: True)
    nodes = [scoring.Feasible(n, labels[n], (), 0) for n in ("a", "b", "c")]
    raw_a = math.floor(1 * math.log(3 + 2) + 2 + 0.5)  # 4; b and c: 2
    assert scoring._spread(scoring.SpreadState((host,), False, labels), nodes) == [
        100 * (raw_a + 2 - raw_a) // raw_a, 100 * (raw_a + 2 - 2) // raw_a, 100 * (raw_a + 2 - 2) // raw_a]


def test_image_locality() -> None:
    size = 500 * MI
    state = scoring.ImageState(("app:v1", "sidecar:latest"), 2, {"app:v1": (size, 2)},
                               lambda n: frozenset({"app:v1"}) if n == "a" else frozenset(), 4)
    spread = int(size * (2 / 4))
    top = 2 * scoring.IMAGE_MAX
    assert scoring._image(state, "a") == 100 * (spread - scoring.IMAGE_MIN) // (top - scoring.IMAGE_MIN)
    assert scoring._image(state, "b") == 0
    assert prescore.normalized_image("registry:5000/app") == "registry:5000/app:latest"
    assert prescore.normalized_image("app:v1") == "app:v1"


def test_dra_first_available_score() -> None:
    assert scoring.dra_score([("gpu", ("big", "small"))], ["gpu/small"]) == 7
    assert scoring.dra_score([("gpu", ("big", "small"))], ["gpu/big", "gpu/big"]) == 8
    assert scoring.dra_score([("gpu", ("big", "small")), ("nic", ("a",))], ["gpu/big", "nic/a"]) == 16


def test_dra_normalised_against_free_capacity() -> None:
    """8 - index per firstAvailable request, 100 * s / max, weight 2: the first alternative (8)
    against the second (7) is 200 against 174, which 30 points of free capacity outweigh."""
    nodes = [feasible("first", 100, dra=8), feasible("second", 130, dra=7)]
    scores = scoring.PodScores(dra=scoring.DRAState(0, ()))
    assert scoring.totals(nodes, scores) == [300, 304]
    state = ShapeState()
    state.reset(3)
    state.fits(0, "a", None, (0, "a"), 7)
    state.fits(1, "b", None, (0, "b"), 7)
    assert state.uniform()
    state.fits(2, "c", None, (0, "c"), 8)
    assert not state.uniform()
    state.forget(2, "c")
    assert state.uniform()


def test_default_selector() -> None:
    svc = {"spec": {"selector": {"app": "web"}}}
    other = {"spec": {"selector": {"app": "db"}}}
    rs = {"spec": {"selector": {"matchLabels": {"app": "web", "pod-template-hash": "x"}}}}
    owned = {"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                               "controller": True}]}}
    labels = {"app": "web", "pod-template-hash": "x"}
    got = prescore.default_selector("default", owned, labels, lambda ns: [svc, other, {"spec": {}}],
                                    lambda kind, ns, name: rs if (kind, name) == ("ReplicaSet", "rs") else None)
    assert got == {"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "app", "operator": "In", "values": ["web"]},
        {"key": "pod-template-hash", "operator": "In", "values": ["x"]}]}
    assert prescore.default_selector("default", {"metadata": {}}, {"app": "x"}, lambda ns: [svc], None) is None


# --- through the scheduler ------------------------------------------------------------------------------


def _on(c: Cluster, *names: str) -> dict[str, str]:
    return {n: c.get("Pod", n)["spec"].get("nodeName", "") for n in names}


def _labelled(name: str, labels: Mapping[str, str], **spec: Any) -> dict[str, Any]:
    p = pod(name)
    p["metadata"]["labels"] = dict(labels)
    p["spec"].update(spec)
    return p


async def test_bigger_free_capacity_wins_and_best_effort_pods_spread() -> None:
    c = Cluster()
    c.add(node("big", cpu="8", memory="16Gi"), node("small", cpu="2", memory="4Gi"))
    c.add(pod("sized", cpu="500m", memory="1Gi"))
    c.run()
    assert _on(c, "sized") == {"sized": "big"}
    # the old rank took the first name among equal utilizations: every best-effort pod on one node;
    # LeastAllocated counts 100m / 200Mi for each, so they alternate between equal nodes
    c2 = Cluster()
    c2.add(node("n1"), node("n2"))
    c2.add(*(pod(f"be-{i}") for i in range(4)))
    c2.run()
    assert sorted(_on(c2, *(f"be-{i}" for i in range(4))).values()) == ["n1", "n1", "n2", "n2"]


async def test_prefer_no_schedule_outweighs_preferred_node_affinity() -> None:
    c = Cluster()
    ssd = node("ssd", labels={"disk": "ssd"})
    ssd["spec"]["taints"] = [{"key": "dedicated", "value": "ssd", "effect": "PreferNoSchedule"}]
    c.add(ssd, node("hdd"))
    prefers = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}
    c.add(_labelled("prefers", {}, affinity=prefers))
    c.run()
    c.add(_labelled("tolerates", {}, affinity=prefers,
                    tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "PreferNoSchedule"}]))
    c.run()
    assert _on(c, "prefers", "tolerates") == {"prefers": "hdd", "tolerates": "ssd"}


async def test_preferred_pod_affinity_and_anti_affinity_outweigh_free_capacity() -> None:
    c = Cluster()
    c.add(node("big", cpu="8", memory="16Gi"), node("small", cpu="1", memory="2Gi"))
    c.add(_labelled("db", {"app": "db"}, nodeSelector={HOST: "small"}))
    c.add(_labelled("cache", {"app": "cache"}, nodeSelector={HOST: "big"}))
    c.run()

    def weighted(app: str) -> list[dict[str, Any]]:
        return [{"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}},
                                                    "topologyKey": HOST}}]

    c.add(_labelled("plain", {"app": "x"}),
          _labelled("near", {"app": "x"}, affinity={"podAffinity": {
              "preferredDuringSchedulingIgnoredDuringExecution": weighted("db")}}),
          _labelled("far", {"app": "x"}, affinity={"podAntiAffinity": {
              "preferredDuringSchedulingIgnoredDuringExecution": weighted("cache")}}))
    c.run()
    assert _on(c, "plain", "near", "far") == {"plain": "big", "near": "small", "far": "small"}


async def test_existing_pods_preferred_terms_pull_the_pod() -> None:
    """processExistingPod: an assigned pod's preferred affinity to the incoming pod's labels."""
    c = Cluster()
    c.add(node("big", cpu="8", memory="16Gi"), node("small", cpu="1", memory="2Gi"))
    c.add(_labelled("friend", {"app": "friend"}, nodeSelector={HOST: "small"}, affinity={"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": HOST}}]}}))
    c.run()
    c.add(_labelled("x", {"app": "x"}), _labelled("y", {"app": "y"}))
    c.run()
    assert _on(c, "x", "y") == {"x": "small", "y": "big"}


async def test_schedule_anyway_spread_over_zones() -> None:
    c = Cluster()
    c.add(node("e0", labels={ZONE: "z1"}), node("e1", labels={ZONE: "z1"}),
          node("e2", cpu="2", memory="4Gi", labels={ZONE: "z2"}))
    c.add(*(_labelled(f"old-{i}", {"app": "s"}, nodeSelector={HOST: "e0"}) for i in range(2)))
    c.run()
    soft = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "s"}}}]
    c.add(_labelled("plain", {"app": "p"}), _labelled("spread", {"app": "s"}, topologySpreadConstraints=soft))
    c.run()
    assert _on(c, "plain", "spread") == {"plain": "e1", "spread": "e2"}


async def test_system_default_spreading_follows_a_service() -> None:
    """No constraints of its own: the Service's selector spreads the pods over hostnames (maxSkew 3)
    and zones (5) though the smaller node scores less on free capacity."""
    c = Cluster()
    c.add(node("big", cpu="8", memory="16Gi"), node("small", cpu="1", memory="2Gi"))
    c.add({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    c.add(*(_labelled(f"old-{i}", {"app": "web"}, nodeSelector={HOST: "big"}) for i in range(3)))
    c.run()
    c.add(_labelled("web", {"app": "web"}), _labelled("other", {"app": "other"}))
    c.run()
    assert _on(c, "web", "other") == {"web": "small", "other": "big"}


async def test_image_locality_picks_the_node_listing_the_image() -> None:
    """ImageLocality: node.status.images (nodeagent's own nodes list none; a Node written with them
    does); the pod's `busybox` is `busybox:latest` there."""
    c = Cluster()
    with_image = node("b-images")
    with_image["status"]["images"] = [{"names": ["docker.io/library/busybox:1", "busybox:latest"],
                                       "sizeBytes": 500 * MI}]
    c.add(node("a-plain"), with_image)
    c.add(pod("p"))
    c.run()
    assert _on(c, "p") == {"p": "b-images"}
    assert c.scheduler.cache.images["busybox:latest"] == (500 * MI, {"b-images"})
    c.delete("Node", "b-images")
    c.run()
    assert "busybox:latest" not in c.scheduler.cache.images
