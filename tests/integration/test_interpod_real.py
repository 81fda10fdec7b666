"""Inter-pod anti-affinity, affinity and topology spread (DoNotSchedule) placed and explained as kube-scheduler
v1.37.2 does: one case list, checked against the embedded scheduler (always) and the real kube-scheduler
(controlPlane.kubernetes, the kube-apiserver tier), on the same daemon with its node and two virtual nodes
(three nodes, each its own kubernetes.io/hostname).

- four pods with required anti-affinity to each other on kubernetes.io/hostname: one per node, the fourth
  pending with "3 node(s) didn't match pod anti-affinity rules" (Unschedulable: preemption looks there);
- a pod with required affinity to a label no pod has (and that it does not carry): "3 node(s) didn't match pod
  affinity rules" (UnschedulableAndUnresolvable);
- six pods spread with maxSkew 1 over the hostname: two per node;
- a spread constraint on a key no node has: "(missing required label)".
Placements are compared as counts per node.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import wait_for
from tests.integration.test_real_control_plane import NODE, RealCP, node_ready

pytestmark = [pytest.mark.integration]

HOST = "kubernetes.io/hostname"
TOLERATE_ALL = [{"operator": "Exists"}]
VICTIMS = "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
NOT_HELPFUL = "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
EXPECTED = {
    "anti": "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. " + VICTIMS,
    "lonely": "0/3 nodes are available: 3 node(s) didn't match pod affinity rules. " + NOT_HELPFUL,
    "nokey": ("0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints (missing required "
              "label). " + NOT_HELPFUL),
}


def _pod(name: str, app: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                            "labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "pause"}], "tolerations": TOLERATE_ALL, **spec}}


def _term(app: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOST}


def _spread(app: str, key: str = HOST) -> list[dict[str, Any]]:
    return [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": app}}}]


ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("anti")]}}
OBJECTS = [
    *(_pod(f"anti-{i}", "anti", affinity=ANTI) for i in range(4)),
    _pod("lonely", "lonely", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term("nobody")]}}),
    *(_pod(f"spread-{i}", "spread", topologySpreadConstraints=_spread("spread")) for i in range(6)),
    _pod("nokey", "nokey", topologySpreadConstraints=_spread("nokey", "example.com/none")),
]


def _pending_message(cp: RealCP, name: str) -> str | None:
    """The PodScheduled=False message, once a FailedScheduling event carries it too."""
    pod = cp.get("pod", name)
    cond = next((c for c in pod["status"].get("conditions") or () if c["type"] == "PodScheduled"), None)
    if cond is None or cond["status"] != "False":
        return None
    events = [e["message"] for e in cp.get("events", "--field-selector", f"involvedObject.name={name}")["items"]
              if e["reason"] == "FailedScheduling"]
    return cond["message"] if cond["message"] in events else None


def _placed(cp: RealCP, prefix: str, want: int) -> dict[str, str] | None:
    pods = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in cp.get("pods")["items"]
            if p["metadata"]["name"].startswith(prefix)}
    return pods if sum(1 for n in pods.values() if n) >= want else None


@pytest.mark.timeout(600)
def test_interpod_placement_and_text_are_kube_schedulers(realcp_twin: tuple[RealCP, bool]) -> None:
    daemon, _ = realcp_twin
    daemon.start()
    nodes = (NODE, "rcv-0", "rcv-1")
    wait_for(lambda: all(node_ready(daemon, n) for n in nodes), timeout=120, what="three nodes Ready")
    daemon.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(OBJECTS))
    anti = wait_for(lambda: _placed(daemon, "anti-", 3), timeout=120, what="three anti-affinity pods placed")
    spread = wait_for(lambda: _placed(daemon, "spread-", 6), timeout=120, what="six spread pods placed")
    assert Counter(n for n in anti.values() if n) == dict.fromkeys(nodes, 1)
    assert Counter(spread.values()) == dict.fromkeys(nodes, 2)
    pending = next(name for name, n in anti.items() if not n)
    got = {key: wait_for(lambda name=name: _pending_message(daemon, name), timeout=120, what=f"{name} explained")
           for key, name in (("anti", pending), ("lonely", "lonely"), ("nokey", "nokey"))}
    assert got == EXPECTED
    # a holder goes: the pending pod takes its node (AssignedPod/Delete moves it back)
    gone = next(name for name, n in anti.items() if n == "rcv-0")
    daemon.kubectl("delete", "pod", gone, "--grace-period=0", "--force")
    wait_for(lambda: daemon.get("pod", pending)["spec"].get("nodeName") == "rcv-0", timeout=120,
             what="the pending anti-affinity pod placed on the freed node")
