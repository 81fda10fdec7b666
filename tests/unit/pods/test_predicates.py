"""The kubelet's admission predicates beyond resource fit, and the eviction manager's admit handler.

Cases from lifecycle/predicate_test.go (TestRejectPodAdmissionBasedOnOSSelector,
TestRejectPodAdmissionBasedOnOSField, TestGeneralPredicates), the scheduler's nodeports
tests (CheckConflict), component-helpers' PodRequests overhead cases and
eviction_manager_test.go (TestMemoryPressure, TestDiskPressureNodeFs, TestAdmitUnderNodeConditions).
"""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods.admission import admit, pod_requests
from nodeagent.pods.eviction_admit import admit as eviction_admit
from nodeagent.pods.resources import pod_limits
from nodeagent.pods.resources import pod_requests as cm_pod_requests

ALLOC = {"cpu": 10000, "memory": 20 * 2**30, "pods": 32}
NODE = "machine1"
LABELS = {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux", "zone": "z1"}


def pod(uid: str, spec: dict[str, Any] | None = None, *, labels: dict[str, str] | None = None,
        cpu: int = 0, memory: int = 0, limits: bool = False, node: str = NODE, priority: int = 0,
        source: str = "api", annotations: dict[str, str] | None = None) -> Pod:
    reqs = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return Pod(uid=uid, name=uid, node_name=node, labels=labels or {}, priority=priority, source=source,
               annotations=annotations or {},
               containers=(Container("c", requests=reqs, limits=reqs if limits else {}),),
               manifest={"spec": spec or {}})


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


def ports(*items: dict[str, Any]) -> dict[str, Any]:
    return {"containers": [{"name": "c", "ports": list(items)}]}


def check(p: Pod, active: list[Pod] | None = None) -> tuple[bool, str, str]:
    r = admit(p, node_name=NODE, allocatable=ALLOC, active=active or [], node_labels=LABELS)
    return r.admit, r.reason, r.message


OS_LABEL = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
OS_FIELD = "Failed to admit pod as the OS field doesn't match node OS"
AFFINITY = "Predicate NodeAffinity failed: node(s) didn't match Node affinity/selector"
PORTS = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"


@pytest.mark.parametrize(("name", "p", "active", "want"), [
    ("os label matches", pod("x", labels={"kubernetes.io/os": "linux"}), [], (True, "", "")),
    ("os label windows", pod("x", labels={"kubernetes.io/os": "windows"}), [],
     (False, "PodOSSelectorNodeLabelDoesNotMatch", OS_LABEL)),
    ("os field linux", pod("x", {"os": {"name": "linux"}}), [], (True, "", "")),
    ("os field windows", pod("x", {"os": {"name": "windows"}}), [], (False, "PodOSNotSupported", OS_FIELD)),
    ("os before fit", pod("x", {"os": {"name": "windows"}}, cpu=99000), [],
     (False, "PodOSNotSupported", OS_FIELD)),
    ("node selector matches", pod("x", {"nodeSelector": {"zone": "z1"}}), [], (True, "", "")),
    ("node selector misses", pod("x", {"nodeSelector": {"zone": "z2"}}), [],
     (False, "NodeAffinity", AFFINITY)),
    ("required affinity In", pod("x", required(
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]})), [],
     (True, "", "")),
    ("required affinity NotIn", pod("x", required(
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]})), [],
     (False, "NodeAffinity", AFFINITY)),
    ("affinity by metadata.name", pod("x", required(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["other"]}]})), [],
     (False, "NodeAffinity", AFFINITY)),
    ("fit before affinity", pod("x", {"nodeSelector": {"zone": "z2"}}, cpu=11000), [],
     (False, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 11000, used: 0, capacity: 10000")),
    ("affinity before node name", pod("x", {"nodeSelector": {"zone": "z2"}}, node="machine2"), [],
     (False, "NodeAffinity", AFFINITY)),
    ("hostport free", pod("x", ports({"containerPort": 80, "hostPort": 8080})),
     [pod("a", ports({"containerPort": 80, "hostPort": 8081}))], (True, "", "")),
    ("hostport conflict", pod("x", ports({"containerPort": 80, "hostPort": 8080})),
     [pod("a", ports({"containerPort": 80, "hostPort": 8080}))], (False, "NodePorts", PORTS)),
    ("hostport other protocol", pod("x", ports({"containerPort": 80, "hostPort": 8080, "protocol": "UDP"})),
     [pod("a", ports({"containerPort": 80, "hostPort": 8080}))], (True, "", "")),
    ("hostport other ip", pod("x", ports({"containerPort": 80, "hostPort": 8080, "hostIP": "127.0.0.1"})),
     [pod("a", ports({"containerPort": 80, "hostPort": 8080, "hostIP": "127.0.0.2"}))], (True, "", "")),
    ("hostport any ip conflicts", pod("x", ports({"containerPort": 80, "hostPort": 8080, "hostIP": "127.0.0.1"})),
     [pod("a", ports({"containerPort": 80, "hostPort": 8080}))], (False, "NodePorts", PORTS)),
    ("sidecar hostport counts", pod("x", ports({"containerPort": 80, "hostPort": 9090})),
     [pod("a", {"initContainers": [{"name": "s", "restartPolicy": "Always",
                                    "ports": [{"containerPort": 1, "hostPort": 9090}]}]})],
     (False, "NodePorts", PORTS)),
])
def test_general_predicates(name: str, p: Pod, active: list[Pod], want: tuple[bool, str, str]) -> None:
    assert check(p, active) == want


def test_overhead_counts_in_requests() -> None:
    # The example: 5000m of containers plus 1000m of overhead is 6000m, and limits
    # get the overhead only where the pod sets a limit (PodLimits).
    p = pod("x", {"overhead": {"cpu": "1", "memory": "100Mi"}}, cpu=5000, limits=True)
    assert pod_requests(p)["cpu"] == 6000 and cm_pod_requests(p)["cpu"] == 6000
    assert pod_limits(p) == {"cpu": 6000}
    ok, reason, message = check(p, [pod("a", cpu=4500)])
    assert (ok, reason) == (False, "OutOfcpu")
    assert message == "Node didn't have enough resource: cpu, requested: 6000, used: 4500, capacity: 10000"


PRESSURE = "The node had condition: [MemoryPressure]. "
BEST_EFFORT = pod("be")
BURSTABLE = pod("bu", cpu=100)
TOLERATES = pod("t", {"tolerations": [{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists",
                                        "effect": "NoSchedule"}]})
TOLERATES_ALL = pod("t2", {"tolerations": [{"operator": "Exists"}]})
CRITICAL = pod("c", priority=2_000_000_000)
STATIC = pod("s", source="file")
MIRROR = pod("m", annotations={"kubernetes.io/config.mirror": "x"})


@pytest.mark.parametrize(("name", "p", "conditions", "want"), [
    ("no pressure", BEST_EFFORT, (), (True, "", "")),
    ("memory pressure best effort", BEST_EFFORT, ("MemoryPressure",), (False, "Evicted", PRESSURE)),
    ("memory pressure burstable", BURSTABLE, ("MemoryPressure",), (True, "", "")),
    ("memory pressure toleration", TOLERATES, ("MemoryPressure",), (True, "", "")),
    ("memory pressure tolerate all", TOLERATES_ALL, ("MemoryPressure",), (True, "", "")),
    ("memory pressure critical", CRITICAL, ("MemoryPressure",), (True, "", "")),
    ("disk pressure burstable", BURSTABLE, ("DiskPressure",),
     (False, "Evicted", "The node had condition: [DiskPressure]. ")),
    ("disk pressure toleration", TOLERATES, ("DiskPressure",),
     (False, "Evicted", "The node had condition: [DiskPressure]. ")),
    ("both pressures", BURSTABLE, ("DiskPressure", "MemoryPressure"),
     (False, "Evicted", "The node had condition: [DiskPressure MemoryPressure]. ")),
    ("disk pressure static", STATIC, ("DiskPressure",), (True, "", "")),
    ("disk pressure mirror", MIRROR, ("DiskPressure",), (True, "", "")),
])
def test_eviction_admit(name: str, p: Pod, conditions: tuple[str, ...], want: tuple[bool, str, str]) -> None:
    r = eviction_admit(p, conditions)
    assert (r.admit, r.reason, r.message) == want
