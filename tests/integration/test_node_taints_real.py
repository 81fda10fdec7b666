"""Node taints and health over time, the embedded control plane against kube-apiserver v1.37.2 +
kube-controller-manager's node lifecycle controller (the fixture binary's roles, `--controllers=
nodelifecycle`, short grace periods on both sides).

Nodes written by hand (kubectl), each in its own zone so that no zone's NoExecute rate limiter
holds one back for another: one with no status at all, one that posts Ready once, one that posts
Ready=False, one cordoned (spec.unschedulable) that posts Ready once. A node that stays Ready keeps
the cluster out of the "every node down" mode (the daemon's own node on the embedded side; on the
real side a Node whose Lease the test renews). Compared, normalised (taints sorted, timeAdded as
present or not, the conditions' type, status, reason and whether lastHeartbeatTime is the node's
creation): the Node as created (the TaintNodesByCondition admission), a few seconds later (the
NoSchedule pass) and once the grace periods are over (Unknown, unreachable NoSchedule and
NoExecute). The seconds from the create to Ready=Unknown are printed for each side.

The embedded half always runs; the real half in the kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from nodeagent.util.timefmt import micro_time
from tests.integration.daemon_helpers import running_daemon
from tests.integration.kubeapiserver import fixture_binary, running_kube_apiserver
from tests.integration.test_object_size import MERGE, Send, _daemon_send, _sender

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

GRACE, STARTUP, PERIOD = 6, 9, 1  # seconds: node-monitor-grace-period, node-startup-grace-period, -period
EARLY, LATE = 3.0, STARTUP + 6.0  # when the nodes are looked at, after their creation


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _ready_status(status: str) -> dict[str, Any]:
    stamp = _now()
    return {"status": {"conditions": [
        {"type": "Ready", "status": status, "reason": "KubeletReady" if status == "True" else "KubeletNotReady",
         "message": "by hand", "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}]}}


NODES: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    # name: (spec, the status posted after the create, or None)
    "hand-bare": ({}, None),
    "hand-ready": ({}, _ready_status("True")),
    "hand-notready": ({}, _ready_status("False")),
    "hand-cordoned": ({"unschedulable": True}, _ready_status("True")),
}


def _normal(node: dict[str, Any]) -> dict[str, Any]:
    created = node["metadata"]["creationTimestamp"]
    taints = sorted((t["key"], t["effect"], "timeAdded" in t) for t in (node.get("spec") or {}).get("taints") or [])
    conds = sorted((c["type"], c["status"], c.get("reason"), c.get("lastHeartbeatTime") == created)
                   for c in (node.get("status") or {}).get("conditions") or [])
    return {"taints": taints, "conditions": conds}


def scenario(send: Send) -> tuple[dict[str, Any], dict[str, float]]:
    """The nodes' normalised states (created, early, late) and the seconds from create to Ready=Unknown."""
    out: dict[str, Any] = {}
    for i, (name, (spec, _)) in enumerate(NODES.items()):
        send("DELETE", f"/api/v1/nodes/{name}")
        doc = {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": f"z{i}"}}, "spec": spec}
        code, created = send("POST", "/api/v1/nodes", doc)
        assert code == 201, created
        out[name] = {"created": _normal(created)}
    start = time.monotonic()
    for name, (_, status) in NODES.items():
        if status is not None:
            code, answer = send("PATCH", f"/api/v1/nodes/{name}/status", status, MERGE)
            assert code == 200, answer
    unknown: dict[str, float] = {}
    seen: dict[str, list[Any]] = {name: [] for name in NODES}

    def wait_until(at: float) -> None:
        while time.monotonic() - start < at:
            for name in NODES:
                code, node = send("GET", f"/api/v1/nodes/{name}")
                assert code == 200, node
                state = _normal(node)
                if not seen[name] or seen[name][-1][1] != state:
                    seen[name].append((round(time.monotonic() - start, 1), state))
                if name not in unknown and ("Ready", "Unknown") in {c[:2] for c in state["conditions"]}:
                    unknown[name] = round(time.monotonic() - start, 1)
            time.sleep(0.2)

    wait_until(EARLY)
    for name in NODES:
        out[name]["early"] = seen[name][-1][1]
    wait_until(LATE)
    for name in NODES:
        out[name]["late"] = seen[name][-1][1]
        print(name, json.dumps(seen[name]))
        send("DELETE", f"/api/v1/nodes/{name}")
    return out, unknown


EXPECTED_LATE = {
    "taints": [("node.kubernetes.io/unreachable", "NoExecute", True),
               ("node.kubernetes.io/unreachable", "NoSchedule", True)],
}


def _embedded(base: Path) -> tuple[dict[str, Any], dict[str, float]]:
    cp = {"nodeMonitorGracePeriod": f"{GRACE}s", "nodeStartupGracePeriod": f"{STARTUP}s",
          "nodeMonitorPeriod": f"{PERIOD}s"}
    # the daemon's own node renews its Lease every second (a quarter of its duration), well within GRACE
    with running_daemon(base, kubelet={"nodeLeaseDurationSeconds": 4}, agent={"controlPlane": cp}) as d:
        return scenario(_daemon_send(d))


def test_hand_written_nodes_embedded(short_dir: Path) -> None:
    states, unknown = _embedded(short_dir)
    print("embedded: seconds from create to Ready=Unknown", unknown)
    for name, phases in states.items():
        assert phases["created"]["taints"] == [("node.kubernetes.io/not-ready", "NoSchedule", False)], name
        cordon = [("node.kubernetes.io/unschedulable", "NoSchedule", True)] if name == "hand-cordoned" else []
        assert phases["late"]["taints"] == EXPECTED_LATE["taints"] + cordon, (name, phases)
    assert states["hand-bare"]["early"]["taints"] == []  # no condition calls for one yet
    assert states["hand-ready"]["early"]["taints"] == []
    assert states["hand-cordoned"]["early"]["taints"] == [("node.kubernetes.io/unschedulable", "NoSchedule", True)]
    assert set(unknown) == set(NODES)


@contextmanager
def _kept_alive(server: Any, name: str) -> Iterator[None]:
    """A Node that posts Ready and renews its Lease every second while the block runs (a kubelet's part)."""
    node = server.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    server.merge_patch(f"/api/v1/nodes/{name}/status", _ready_status("True"))
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    server.post(leases, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {
        "name": name, "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                           "uid": node["metadata"]["uid"]}]},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": micro_time(time.time())}})
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(1.0):
            server.merge_patch(f"{leases}/{name}", {"spec": {"renewTime": micro_time(time.time())}})

    thread = threading.Thread(target=renew, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@pytest.mark.kube_apiserver
def test_hand_written_nodes_as_kube_controller_manager(short_dir: Path) -> None:
    binary = fixture_binary()
    with running_kube_apiserver(binary, controller_manager=True, controller_manager_args=[
            "--controllers=nodelifecycle", f"--node-monitor-grace-period={GRACE}s",
            f"--node-startup-grace-period={STARTUP}s", f"--node-monitor-period={PERIOD}s"]) as server, \
            _kept_alive(server, "anchor"):
        theirs, their_unknown = scenario(_sender(server.url, server._ssl(), {}))
    ours, our_unknown = _embedded(short_dir)
    print("seconds from create to Ready=Unknown: kube-controller-manager", their_unknown, "embedded", our_unknown)
    assert ours == theirs
    for name in NODES:
        assert abs(our_unknown[name] - their_unknown[name]) <= 2 * PERIOD + 1, name
