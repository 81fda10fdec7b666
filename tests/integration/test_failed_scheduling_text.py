"""The FailedScheduling text (the pod's PodScheduled=False message and its event, what `kubectl describe pod`
shows) is kube-scheduler's: one case list, checked against the embedded scheduler (always) and the real
kube-scheduler v1.37.2 (controlPlane.kubernetes, the kube-apiserver tier), on the same daemon with its node and
two virtual nodes (three nodes). Each pod fails one way on every node: a nodeSelector nothing matches, more cpu
than any node has, a taint, a cordon and node affinity on one node each, a claim no node can satisfy,
preemptionPolicy Never, and cpu or a host port the virtual nodes have but other pods hold (where preemption would
look, and finds no lower-priority pod).

A claim that does not exist is the one intended difference: kube-scheduler v1.37.2 holds such a pod at
DynamicResources' PreEnqueue, silently (no PodScheduled condition, no event); the embedded scheduler says why
with the FitError text of a PreFilter rejection (tests/integration/test_missing_claim.py, README).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import wait_for
from tests.integration.test_real_control_plane import NODE, RealCP, node_ready

pytestmark = [pytest.mark.integration]

NOT_HELPFUL = "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
TOLERATE_ALL = [{"operator": "Exists"}]


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "pause"}], **spec}}


EXPECTED: dict[str, str] = {
    "selector": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. " + NOT_HELPFUL,
    # more than any node has allocatable: UnschedulableAndUnresolvable, preemption does not look there either
    "cpu": "0/3 nodes are available: 3 Insufficient cpu. " + NOT_HELPFUL,
    "placement": ("0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had "
                  "untolerated taint(s), 1 node(s) were unschedulable. " + NOT_HELPFUL),
    "claim": "0/3 nodes are available: 3 cannot allocate all claims. " + NOT_HELPFUL,
    "never": ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
              "preemption: not eligible due to preemptionPolicy=Never."),
}
FULL = ("0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.")
PORTS = ("0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't have free "
         "ports for the requested pod ports. preemption: 0/3 nodes are available: 1 Preemption is not helpful for "
         "scheduling, 2 No preemption victims found for incoming pod.")
HOST_PORT = [{"containerPort": 80, "hostPort": 8080}]
MISSING = '0/3 nodes are available: resourceclaim "nope" not found. ' + NOT_HELPFUL

OBJECTS: list[dict[str, Any]] = [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "no-preempt"},
     "value": 10, "preemptionPolicy": "Never"},
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "fst-virtual"},
     "spec": {"selectors": [{"cel": {"expression": 'device.driver == "virtual.example.com"'}}]}},
    # two devices per virtual node, none on the node: five fit nowhere
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "five", "namespace": "default"},
     "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "fst-virtual",
                                                                  "allocationMode": "ExactCount", "count": 5}}]}}},
    _pod("selector", nodeSelector={"fst": "none"}, tolerations=TOLERATE_ALL),
    _pod("cpu", containers=[{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1000"}}}],
         tolerations=TOLERATE_ALL),
    _pod("placement", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                     "values": ["rcv-0", "rcv-1"]}]}]}}}),
    _pod("claim", containers=[{"name": "c", "image": "pause", "resources": {"claims": [{"name": "d"}]}}],
         resourceClaims=[{"name": "d", "resourceClaimName": "five"}], tolerations=TOLERATE_ALL),
    _pod("missing", containers=[{"name": "c", "image": "pause", "resources": {"claims": [{"name": "d"}]}}],
         resourceClaims=[{"name": "d", "resourceClaimName": "nope"}], tolerations=TOLERATE_ALL),
    _pod("never", nodeSelector={"fst": "none"}, priorityClassName="no-preempt", tolerations=TOLERATE_ALL),
]


ON_VIRTUAL = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["rcv-0", "rcv-1"]}]}]}}}


def _cpu(name: str, cpu: str, ports: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}
    if ports:
        container["ports"] = ports
    return _pod(name, containers=[container], tolerations=TOLERATE_ALL, **spec)


def _message(cp: RealCP, name: str) -> tuple[str, list[str]] | None:
    """The PodScheduled=False message and the FailedScheduling events' messages, once both are there."""
    pod = cp.get("pod", name)
    cond = next((c for c in pod["status"].get("conditions") or () if c["type"] == "PodScheduled"), None)
    if cond is None or cond["status"] != "False":
        return None
    events = [e["message"] for e in cp.get("events", "--field-selector", f"involvedObject.name={name}")["items"]
              if e["reason"] == "FailedScheduling"]
    return (cond["message"], events) if events else None


@pytest.mark.timeout(600)
def test_failed_scheduling_text_is_kube_schedulers(realcp_twin: tuple[RealCP, bool]) -> None:
    daemon, real = realcp_twin
    _check(daemon, real)


def _check(cp: RealCP, real: bool) -> None:
    cp.start()
    wait_for(lambda: all(node_ready(cp, n) for n in (NODE, "rcv-0", "rcv-1")), timeout=120, what="three nodes Ready")
    cp.kubectl("taint", "node", "rcv-0", "fst=x:NoSchedule")
    cp.kubectl("cordon", "rcv-1")
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(OBJECTS))
    got: dict[str, tuple[str, list[str]]] = {}
    for name in EXPECTED:
        found = wait_for(lambda name=name: _message(cp, name), timeout=120, what=f"FailedScheduling for {name}")
        got[name] = found
    assert {name: cond for name, (cond, _) in got.items()} == EXPECTED
    for name, (cond, events) in got.items():
        assert cond in events, (name, events)
    # 3 of the virtual nodes' 4 cpu and their host port 8080 taken, then a pod asking 2 cpu, one asking the port
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([_cpu(f"fill-{i}", "3", HOST_PORT, nodeName=f"rcv-{i}")
                                                             for i in range(2)]))
    wait_for(lambda: all(cp.get("pod", f"fill-{i}")["status"].get("phase") == "Running" for i in range(2)),
             timeout=120, what="the fillers Running")
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump(_cpu("full", "2", affinity=ON_VIRTUAL)))
    cond, events = wait_for(lambda: _message(cp, "full"), timeout=120, what="FailedScheduling for full")
    assert cond == FULL and cond in events
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump(_cpu("ports", "0", HOST_PORT, affinity=ON_VIRTUAL)))
    cond, events = wait_for(lambda: _message(cp, "ports"), timeout=120, what="FailedScheduling for ports")
    assert cond == PORTS and cond in events
    if real:  # by now the scheduler has seen it for long
        pod = cp.get("pod", "missing")
        assert not pod["status"].get("conditions") and _message(cp, "missing") is None, pod["status"]
    else:
        cond, events = wait_for(lambda: _message(cp, "missing"), timeout=60, what="FailedScheduling for missing")
        assert cond == MISSING and cond in events
