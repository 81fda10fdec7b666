"""General admission predicates: each OutOf reason, the kubelet's message, node name."""

from __future__ import annotations

import dataclasses

import pytest

from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods.admission import admit, held_requests, insufficient_resources, pod_requests

ALLOC = {
    "cpu": 4000,
    "memory": 8 * 2**30,
    "ephemeral-storage": 10 * 2**30,
    "hugepages-2Mi": 8 * 2**20,
    "example.com/gpu": 2,
    "pods": 3,
}


def pod(
    uid: str, requests: dict[str, int] | None = None, *, node: str = "", limits: dict[str, int] | None = None
) -> Pod:
    reqs = requests or {}
    return Pod(
        uid=uid,
        name=uid,
        node_name=node,
        containers=(Container("c", requests=reqs, limits=limits if limits is not None else {}),),
    )


USED = [
    pod("a", {"cpu": 2000, "memory": 2**30}),
    pod("b", {"example.com/gpu": 1, "hugepages-2Mi": 4 * 2**20}),
]

CASES = [
    ("fits", pod("x", {"cpu": 2000}), USED, True, "", ""),
    ("best effort fits", pod("x"), USED, True, "", ""),
    (
        "cpu",
        pod("x", {"cpu": 3000}),
        USED,
        False,
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000",
    ),
    (
        "memory",
        pod("x", {"memory": 8 * 2**30}),
        USED,
        False,
        "OutOfmemory",
        f"Node didn't have enough resource: memory, requested: {8 * 2**30}, "
        f"used: {2**30}, capacity: {8 * 2**30}",
    ),
    (
        "ephemeral storage",
        pod("x", {"ephemeral-storage": 11 * 2**30}),
        USED,
        False,
        "OutOfephemeral-storage",
        f"Node didn't have enough resource: ephemeral-storage, requested: {11 * 2**30}, used: 0, "
        f"capacity: {10 * 2**30}",
    ),
    (
        "extended",
        pod("x", {"example.com/gpu": 2}),
        USED,
        False,
        "OutOfexample.com/gpu",
        "Node didn't have enough resource: example.com/gpu, requested: 2, used: 1, capacity: 2",
    ),
    (
        "hugepages",
        pod("x", {"hugepages-2Mi": 6 * 2**20}),
        USED,
        False,
        "OutOfhugepages-2Mi",
        f"Node didn't have enough resource: hugepages-2Mi, requested: {6 * 2**20}, used: {4 * 2**20}, "
        f"capacity: {8 * 2**20}",
    ),
    (
        "pods",
        pod("x"),
        [*USED, pod("c")],
        False,
        "OutOfpods",
        "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
    ),
    (
        "pods reported before cpu",
        pod("x", {"cpu": 9000}),
        [*USED, pod("c")],
        False,
        "OutOfpods",
        "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
    ),
    (
        "cpu reported before memory",
        pod("x", {"cpu": 9000, "memory": 2**40}),
        USED,
        False,
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 9000, used: 2000, capacity: 4000",
    ),
    ("unknown extended left to the device manager", pod("x", {"other.com/fpga": 1}), USED, True, "", ""),
    (
        "unknown hugepages size",
        pod("x", {"hugepages-1Gi": 2**30}),
        USED,
        False,
        "OutOfhugepages-1Gi",
        f"Node didn't have enough resource: hugepages-1Gi, requested: {2**30}, used: 0, capacity: 0",
    ),
    ("other node", pod("x", node="node-b"), USED, False, "NodeName",
     "Predicate NodeName failed: node(s) didn't match the requested node name"),
    ("this node", pod("x", node="node-a"), USED, True, "", ""),
    (
        "resources before node name",
        pod("x", {"cpu": 9000}, node="node-b"),
        USED,
        False,
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 9000, used: 2000, capacity: 4000",
    ),
    ("self not counted", pod("a", {"cpu": 4000}), USED, True, "", ""),
]


@pytest.mark.parametrize(
    ("p", "active", "ok", "reason", "message"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_admit(p: Pod, active: list[Pod], ok: bool, reason: str, message: str) -> None:
    result = admit(p, node_name="node-a", allocatable=ALLOC, active=active)
    assert (result.admit, result.reason, result.message) == (ok, reason, message)


def test_effective_requests_use_init_max_and_sidecars() -> None:
    p = Pod(
        uid="x",
        name="x",
        containers=(Container("a", requests={"cpu": 1000}),),
        init_containers=(
            Container("side", requests={"cpu": 500}, restart_policy="Always"),
            Container("init", requests={"cpu": 2000}),
        ),
    )
    assert pod_requests(p) == {"cpu": 2500}  # init phase: 2000 + sidecar 500 > 1000 + 500
    assert insufficient_resources(p, {"cpu": 2400, "pods": 10}, [])[0].requested == 2500


def test_pod_level_requests_replace_cpu_and_memory() -> None:
    p = Pod(
        uid="x",
        name="x",
        containers=(Container("a", requests={"cpu": 100, "example.com/gpu": 1}),),
        pod_requests={"cpu": 3000},
    )
    assert pod_requests(p) == {"cpu": 3000, "example.com/gpu": 1}


def test_all_failures_listed_in_kubelet_order() -> None:
    p = pod("x", {"cpu": 9000, "memory": 2**40, "example.com/gpu": 5, "hugepages-2Mi": 2**30})
    names = [r.resource for r in insufficient_resources(p, ALLOC, [*USED, pod("c")])]
    assert names == ["pods", "cpu", "memory", "example.com/gpu", "hugepages-2Mi"]


def _with_node_allocatable(p: Pod) -> Pod:
    """The pod as the 1.37 scheduler bound it: 1 cpu of overhead and 2Gi of mapped memory from its claim."""
    status = {"nodeAllocatableResourceClaimStatuses": [{
        "resourceClaimName": "x-gpu", "containers": ["c"], "mapping": [{"name": "memory", "quantity": "2Gi"}],
        "overhead": [{"name": "cpu", "perPod": "500m", "perContainer": "500m"}]}]}
    return dataclasses.replace(p, manifest={"status": status})


def test_node_allocatable_claim_statuses_count_with_the_gate() -> None:
    """AdmissionCheck with EnableDRANodeAllocatableResources: the pod's and the active pods' entries
    count (KEP-5517); without the gate they do not."""
    new = _with_node_allocatable(pod("x", {"cpu": 1500}))
    active = [_with_node_allocatable(pod("a", {"cpu": 1000}))]
    assert admit(new, node_name="n", allocatable=ALLOC, active=active).admit
    result = admit(new, node_name="n", allocatable=ALLOC, active=active, node_allocatable=True)
    assert (result.admit, result.reason) == (False, "OutOfcpu")
    assert result.message == "Node didn't have enough resource: cpu, requested: 2500, used: 2000, capacity: 4000"
    assert held_requests(new, True) == {"cpu": 2500, "memory": 2 * 2**30}
    assert held_requests(new) == {"cpu": 1500}
