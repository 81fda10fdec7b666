"""Node scoring as kube-scheduler v1.37.2's default profile scores: one case list placed by the embedded
scheduler (always) and by the real kube-scheduler (controlPlane.kubernetes, the kube-apiserver tier), on the
same daemon with the same virtual nodes; each case's nodes carry a label its pods select, and every case has
a unique best total, so both place deterministically (upstream breaks ties at random, the embedded scheduler
by name).

- a: free capacity (NodeResourcesFit LeastAllocated + BalancedAllocation): a 500m/1Gi pod on the bigger node;
- b: a PreferNoSchedule taint (TaintToleration, weight 3) outweighs preferred node affinity (weight 2): the
  pod preferring the tainted node's label lands on the other one, the one tolerating the taint on it;
- c: preferred pod affinity, preferred anti-affinity and an assigned pod's preferred affinity to the pod
  (InterPodAffinity, 2) outweigh the bigger node's free capacity; a pod without terms takes the bigger node;
- e: a ScheduleAnyway zone spread (PodTopologySpread, 2) sends the pod to the emptier zone's smaller node;
- s: the system default spreading over a Service's selector (no constraints on the pod) does the same.
ImageLocality is left out: nodeagent's nodes list no images (node.status.images), so it scores 0 on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import BIN, wait_for
from tests.integration.test_real_control_plane import RealCP, node_ready

pytestmark = [pytest.mark.integration]

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
CASE = "scoring.example.com/case"
SMALL = {"cpu": "1", "memory": "2Gi", "pods": "20"}
MID = {"cpu": "4", "memory": "8Gi", "pods": "20"}
BIG = {"cpu": "8", "memory": "16Gi", "pods": "20"}


def _vnode(name: str, case: str, capacity: dict[str, str], **extra: Any) -> dict[str, Any]:
    labels = {CASE: case, **extra.pop("labels", {})}
    return {"name": name, "capacity": capacity, "labels": labels, **extra}


VIRTUAL_NODES = [
    _vnode("sc-a-big", "a", BIG), _vnode("sc-a-small", "a", {"cpu": "2", "memory": "4Gi", "pods": "20"}),
    _vnode("sc-b-ssd", "b", MID, labels={"disk": "ssd"},
           taints=[{"key": "dedicated", "value": "ssd", "effect": "PreferNoSchedule"}]),
    _vnode("sc-b-hdd", "b", MID),
    _vnode("sc-c-big", "c", BIG), _vnode("sc-c-small", "c", SMALL),
    _vnode("sc-e-0", "e", MID, labels={ZONE: "z1"}), _vnode("sc-e-1", "e", MID, labels={ZONE: "z1"}),
    _vnode("sc-e-2", "e", {"cpu": "2", "memory": "4Gi", "pods": "20"}, labels={ZONE: "z2"}),
    _vnode("sc-s-big", "s", BIG), _vnode("sc-s-small", "s", SMALL),
]


def _pod(name: str, case: str, app: str, *, on: str = "", **spec: Any) -> dict[str, Any]:
    selector = {CASE: case, **({HOST: on} if on else {})}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "pause", **spec.pop("container", {})}],
                     "nodeSelector": selector, **spec}}


def _weighted(app: str) -> list[dict[str, Any]]:
    return [{"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOST}}]


PREFERS_SSD = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "scoring-web", "namespace": "default"},
           "spec": {"selector": {"app": "web-s"}, "ports": [{"port": 80}]}}

# placed first (pinned to their nodes): what the second phase's scores read
PINNED = [
    _pod("db-c", "c", "db-c", on="sc-c-small"),
    _pod("cache-c", "c", "cache-c", on="sc-c-big"),
    _pod("friend-c", "c", "friend-c", on="sc-c-small",
         affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": _weighted("x-c")}}),
    *(_pod(f"old-e-{i}", "e", "spread-e", on="sc-e-0") for i in range(2)),
    *(_pod(f"old-s-{i}", "s", "web-s", on="sc-s-big") for i in range(3)),
]
SCORED = [
    _pod("sized-a", "a", "sized-a", container={"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}),
    _pod("prefers-b", "b", "prefers-b", affinity=PREFERS_SSD),
    _pod("tolerates-b", "b", "tolerates-b", affinity=PREFERS_SSD,
         tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "PreferNoSchedule"}]),
    _pod("plain-c", "c", "plain-c"),
    _pod("near-c", "c", "near-c", affinity={"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": _weighted("db-c")}}),
    _pod("far-c", "c", "far-c", affinity={"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": _weighted("cache-c")}}),
    _pod("x-c", "c", "x-c"),
    _pod("plain-e", "e", "plain-e"),
    _pod("spread-e", "e", "spread-e", topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "spread-e"}}}]),
    _pod("web-s", "s", "web-s"),
    _pod("other-s", "s", "other-s"),
]
EXPECTED = {
    "sized-a": "sc-a-big",
    "prefers-b": "sc-b-hdd", "tolerates-b": "sc-b-ssd",
    "plain-c": "sc-c-big", "near-c": "sc-c-small", "far-c": "sc-c-small", "x-c": "sc-c-small",
    "plain-e": "sc-e-1", "spread-e": "sc-e-2",
    "web-s": "sc-s-small", "other-s": "sc-s-big",
}


@pytest.fixture(params=["embedded", pytest.param("real", marks=pytest.mark.kube_apiserver)])
def scoring_twin(request: pytest.FixtureRequest, short_dir: Path) -> Iterator[RealCP]:
    """The daemon with the cases' virtual nodes on the embedded control plane and, in the kube-apiserver
    tier, on the real one."""
    from tests.integration.kubeapiserver import fixture_binary

    for tool in ("nodeagent-device-plugin", "nodeagent-dra-driver"):
        if not (BIN / tool).exists():
            pytest.skip(f"{tool} is not installed in this environment")
    daemon = RealCP(short_dir, fixture_binary() if request.param == "real" else None, VIRTUAL_NODES)
    try:
        yield daemon
    finally:
        if daemon.proc is not None:
            daemon.stop()
        print(daemon.log()[-8000:])  # shown for a failed test


def _placed(cp: RealCP, names: list[str]) -> dict[str, str] | None:
    pods = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in cp.get("pods")["items"]}
    got = {n: pods.get(n, "") for n in names}
    return got if all(got.values()) else None


@pytest.mark.timeout(600)
def test_placements_are_kube_schedulers(scoring_twin: RealCP) -> None:
    daemon = scoring_twin
    daemon.start()
    names = [n["name"] for n in VIRTUAL_NODES]
    wait_for(lambda: all(node_ready(daemon, n) for n in names), timeout=120, what="the cases' nodes Ready")
    daemon.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([SERVICE, *PINNED]))
    wait_for(lambda: _placed(daemon, [p["metadata"]["name"] for p in PINNED]), timeout=120, what="pinned pods placed")
    daemon.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(SCORED))
    got = wait_for(lambda: _placed(daemon, list(EXPECTED)), timeout=120, what="scored pods placed")
    assert got == EXPECTED
