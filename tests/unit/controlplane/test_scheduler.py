"""The scheduler through the store: KEP-4816 prioritized alternatives on nodes of different shapes,
failure messages, resource fit, pre-bound pods, timeouts, gates, classic DRA through a fake port."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from nodeagent.controlplane.scheduler import SchedulerOptions, failure_message, preemption_message
from nodeagent.errors import ValidationError
from tests.unit.controlplane.test_scheduler_support import (
    GPU,
    MEM,
    NIC,
    PCIE,
    Cluster,
    claim,
    claim_spec,
    device,
    device_class,
    exact,
    first_available,
    node,
    pod,
    resource_slice,
    template,
)

CLASSES = [
    device_class("rdma-nic", f'device.driver == "{NIC}"'),
    device_class("big-gpu", f'device.driver == "{GPU}"', f'{MEM}.compareTo(quantity("80Gi")) >= 0'),
    device_class("mid-gpu", f'device.driver == "{GPU}"', f'{MEM}.compareTo(quantity("40Gi")) >= 0',
                 f'{MEM}.isLessThan(quantity("80Gi"))'),
    device_class("small-gpu", f'device.driver == "{GPU}"', f'{MEM}.isLessThan(quantity("40Gi"))'),
]
SMALL_CONFIG = {"sharing": "time-slicing"}
KEP_SPEC = claim_spec(
    exact("nic", "rdma-nic"),
    first_available("gpu", ("big-gpu", "big-gpu", 1), ("mid-gpu", "mid-gpu", 1), ("small-gpu", "small-gpu", 2)),
    constraints=[{"requests": ["nic", "gpu"], "matchAttribute": PCIE}],
    config=[{"requests": ["gpu/small-gpu"], "opaque": {"driver": GPU, "parameters": SMALL_CONFIG}}],
)


def gpus(*sizes_roots: tuple[int, str]) -> list[dict[str, Any]]:
    return [device(f"gpu-{i}", {PCIE: root}, {"memory": f"{gib}Gi"}) for i, (gib, root) in enumerate(sizes_roots)]


def shaped(name: str, gpu_devices: Sequence[Mapping[str, Any]], nic_root: str = "a") -> list[dict[str, Any]]:
    return [node(name), resource_slice(name, GPU, gpu_devices), resource_slice(name, NIC, [device("nic-0", {
        PCIE: nic_root})])]


SHAPES = {
    "big": gpus((80, "a"), (16, "a"), (16, "a")),
    "mid": gpus((40, "a"), (16, "a"), (16, "a")),
    "small": gpus((16, "a"), (16, "a")),
    "split": gpus((80, "b"), (40, "b"), (16, "b"), (16, "b")),  # nothing shares the nic's pcie root
}


def kep_cluster(*shapes: str, **kw: Any) -> Cluster:
    c = Cluster(**kw)
    c.add(*CLASSES, template("net-gpu", KEP_SPEC))
    for shape in shapes:
        c.add(*shaped(f"node-{shape}", SHAPES[shape]))
    return c


def kep_pod(name: str) -> dict[str, Any]:
    return pod(name, templates={"gpu": "net-gpu"})


def results(alloc_claim: Mapping[str, Any]) -> list[tuple[str, str]]:
    return sorted((r["request"], r["device"]) for r in alloc_claim["status"]["allocation"]["devices"]["results"])


@pytest.mark.parametrize(("shape", "want"), [
    ("big", [("gpu/big-gpu", "gpu-0"), ("nic", "nic-0")]),
    ("mid", [("gpu/mid-gpu", "gpu-0"), ("nic", "nic-0")]),
    ("small", [("gpu/small-gpu", "gpu-0"), ("gpu/small-gpu", "gpu-1"), ("nic", "nic-0")]),
])
async def test_kep4816_each_node_gets_its_best_alternative(shape: str, want: list[tuple[str, str]]) -> None:
    c = kep_cluster(shape)
    c.add(kep_pod("p"))
    c.run()
    p = c.get("Pod", "p")
    assert p["spec"]["nodeName"] == f"node-{shape}"
    assert {"type": "PodScheduled", "status": "True"}.items() <= p["status"]["conditions"][0].items()
    cl = c.pod_claim("p")
    assert results(cl) == want
    config = cl["status"]["allocation"]["devices"].get("config", [])
    if shape == "small":
        assert config == [{"source": "FromClaim", "requests": ["gpu/small-gpu"],
                           "opaque": {"driver": GPU, "parameters": SMALL_CONFIG}}]
    else:
        assert config == []
    assert cl["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": p["metadata"]["uid"]}]
    assert cl["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
        f"node-{shape}"]


async def test_kep4816_scheduler_prefers_node_with_better_alternative() -> None:
    c = kep_cluster("small", "mid", "big", "split")
    for i in range(3):
        c.add(kep_pod(f"p{i}"))
        c.run()
    placed = [c.get("Pod", f"p{i}")["spec"].get("nodeName") for i in range(3)]
    # first the big gpu, then the mid one; then only small gpus are left, on node-small
    assert placed == ["node-big", "node-mid", "node-small"]
    hist = c.registry.get_sample_value("nodeagent_dra_first_available_index_bucket", {"le": "0.0"})
    assert hist == 1.0
    assert c.registry.get_sample_value("nodeagent_dra_first_available_index_count") == 3.0
    # a fourth pod: every nic is taken
    c.add(kep_pod("p3"))
    c.run()
    cond = c.get("Pod", "p3")["status"]["conditions"][0]
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == ("0/4 nodes are available: 4 cannot allocate all claims. "
                               "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")


async def test_kep4816_split_node_explains_constraint(caplog: pytest.LogCaptureFixture) -> None:
    """The message is upstream's ("cannot allocate all claims"); the allocator's explanation
    of each node goes to the debug log."""
    c = kep_cluster("split")
    c.add(kep_pod("p"))
    with caplog.at_level(logging.DEBUG, logger="nodeagent.controlplane.scheduler.core"):
        c.run()
    msg = c.get("Pod", "p")["status"]["conditions"][0]["message"]
    assert msg == ("0/1 nodes are available: 1 cannot allocate all claims. "
                   "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
    explained = [r.getMessage() for r in caplog.records if "do not fit on node node-split" in r.getMessage()]
    assert explained and "matchAttribute dra.k8s.io/pcieRoot" in explained[0]
    events = c.store.list("Event")
    assert [(e["reason"], e["involvedObject"]["name"]) for e in events] == [("FailedScheduling", "p")]


async def test_eight_alternatives_last_one_fits() -> None:
    c = Cluster()
    c.add(node("n1"), resource_slice("n1", GPU, [device("g0")]), device_class("real", f'device.driver == "{GPU}"'))
    alts = [(f"alt{i}", f"missing-{i}", 1) for i in range(7)] + [("alt7", "real", 1)]
    c.add(template("t", claim_spec(first_available("gpu", *alts))))
    c.add(pod("p", templates={"gpu": "t"}))
    c.run()
    assert results(c.pod_claim("p")) == [("gpu/alt7", "g0")]
    assert c.registry.get_sample_value("nodeagent_dra_first_available_index_sum") == 7.0


async def test_unsatisfiable_claim_has_clear_message_per_node() -> None:
    c = kep_cluster("split")
    c.add(node("node-tiny", cpu="1"))
    c.add(*shaped("node-x", gpus((16, "a"))))
    c.add(pod("p", templates={"gpu": "net-gpu"}, cpu="2"))
    c.run()
    msg = c.get("Pod", "p")["status"]["conditions"][0]["message"]
    # node-tiny has 1 cpu for a pod asking 2: UnschedulableAndUnresolvable, no preemption either
    assert msg == ("0/3 nodes are available: 1 Insufficient cpu, 2 cannot allocate all claims. "
                   "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."), msg
    assert (c.registry.get_sample_value("scheduler_schedule_attempts_total", {"result": "unschedulable"}) or 0) >= 1


async def test_resource_fit_and_readiness() -> None:
    c = Cluster()
    c.add(node("a", cpu="1", pods="1"), node("b", ready=False), node("c", memory="1Gi"))
    c.add(pod("filler", cpu="100m", node_name="a"))
    c.add(pod("p", cpu="500m", memory="2Gi"))
    c.run()
    msg = c.get("Pod", "p")["status"]["conditions"][0]["message"]
    # a is full (preemption could make room), c has 1Gi for a pod asking 2Gi
    assert msg == ("0/3 nodes are available: 1 Insufficient memory, 1 Too many pods, 1 node is not ready. "
                   "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
                   "2 Preemption is not helpful for scheduling.")
    # the node becomes ready: the pod is retried on the Node event and fits there
    b = c.get("Node", "b")
    b["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    c.store.update_status(b)
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "b"


async def test_least_allocated_node_wins_then_name() -> None:
    c = Cluster()
    c.add(node("a"), node("b"))
    c.add(pod("p1", cpu="1"))
    c.run()
    c.add(pod("p2", cpu="1"))
    c.run()
    assert c.get("Pod", "p1")["spec"]["nodeName"] == "a"
    assert c.get("Pod", "p2")["spec"]["nodeName"] == "b"


async def test_prebound_pod_gets_claims_allocated_for_its_node() -> None:
    c = Cluster()
    c.add(node("n1"), node("n2"), device_class("gpu", f'device.driver == "{GPU}"'),
          resource_slice("n1", GPU, [device("g0")]), resource_slice("n2", GPU, [device("g0")]),
          claim("shared", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("p", claims={"gpu": "shared"}, node_name="n2"))
    c.run()
    cl = c.get("ResourceClaim", "shared")
    assert cl["status"]["allocation"]["devices"]["results"][0]["pool"] == "n2"
    assert [r["name"] for r in cl["status"]["reservedFor"]] == ["p"]
    # a second pod sharing the claim is placed where the claim is usable and only reserved
    c.add(pod("q", claims={"gpu": "shared"}))
    c.run()
    assert c.get("Pod", "q")["spec"]["nodeName"] == "n2"
    assert [r["name"] for r in c.get("ResourceClaim", "shared")["status"]["reservedFor"]] == ["p", "q"]


async def test_allocation_timeout_fails_cleanly() -> None:
    c = Cluster(options=SchedulerOptions(allocation_timeout=0.0, initial_backoff=1.0))
    c.add(node("n1"), device_class("gpu", f'device.driver == "{GPU}"'), resource_slice("n1", GPU, [device("g0")]),
          template("t", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("p", templates={"gpu": "t"}))
    c.run()
    p = c.get("Pod", "p")
    assert "nodeName" not in p["spec"]
    assert p["status"]["conditions"][0]["message"] == "allocating claims timed out after 0s"
    assert "allocation" not in c.pod_claim("p").get("status", {})
    assert c.scheduler.queue.counts()["backoff"] == 1


async def test_prioritized_list_gate_off() -> None:
    c = Cluster(options=SchedulerOptions(prioritized_list=False, initial_backoff=0.0))
    c.add(node("n1"), device_class("gpu", f'device.driver == "{GPU}"'), resource_slice("n1", GPU, [device("g0")]),
          claim("c1", claim_spec(first_available("gpu", ("a", "gpu", 1)))))
    c.add(pod("p", claims={"gpu": "c1"}))
    c.run()
    assert "DRAPrioritizedList feature gate is disabled" in c.get("Pod", "p")["status"]["conditions"][0]["message"]


async def test_container_may_not_reference_subrequest() -> None:
    c = kep_cluster("big")
    c.add(pod("p", templates={"gpu": "net-gpu"}, requests=[("gpu", "gpu/big-gpu")]))
    c.run()
    msg = c.get("Pod", "p")["status"]["conditions"][0]["message"]
    assert "spec.containers[0].resources.claims[0].request" in msg and "not a subrequest" in msg


async def test_cel_errors_rejected_at_admission_and_reported_at_runtime() -> None:
    c = Cluster()
    with pytest.raises(ValidationError) as err:
        c.add(template("bad", claim_spec(exact("gpu", "gpu", selectors=["device.driver ==="]))))
    assert "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression" in str(err.value)
    c.add(node("n1"), resource_slice("n1", GPU, [device("g0")]),
          device_class("gpu", 'device.attributes["gpu.example.com"].model == "x"'),
          template("t", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("p", templates={"gpu": "t"}))
    c.run()
    msg = c.get("Pod", "p")["status"]["conditions"][0]["message"]
    # upstream: the CEL runtime error stops the attempt and is the pod's message
    assert msg == "class gpu: selector #0 on device gpu.example.com/n1/g0: CEL runtime error: no such key: model", msg


@dataclass(frozen=True)
class Decision:
    ready: bool
    node: str | None
    message: str


class FakeClassic:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str], list[str]]] = []
        self.forgotten: list[str] = []
        self.ready_node: str | None = None
        self.store: Any = None

    def step(self, pod: Mapping[str, Any], claims: Sequence[Mapping[str, Any]],
             feasible_nodes: Sequence[str]) -> Decision:
        self.calls.append((pod["metadata"]["name"], [c["metadata"]["name"] for c in claims], list(feasible_nodes)))
        if self.ready_node is None:
            return Decision(False, None, "waiting for driver cxl.example.com")
        for c in claims:  # what the driver controller would have done meanwhile
            cur = self.store.get("ResourceClaim", "default", c["metadata"]["name"])
            cur["status"] = {"allocation": {"devices": {"results": []}, "controller": "cxl.example.com"},
                             "reservedFor": [{"resource": "pods", "name": pod["metadata"]["name"],
                                              "uid": pod["metadata"]["uid"]}]}
            self.store.update_status(cur)
        return Decision(True, self.ready_node, "")

    def forget(self, pod: Mapping[str, Any]) -> None:
        self.forgotten.append(pod["metadata"]["name"])


async def test_classic_claims_go_through_the_port() -> None:
    fake = FakeClassic()
    c = Cluster(classic=fake)
    fake.store = c.store
    classic = claim("cxl", {"controllerName": "cxl.example.com", **claim_spec(exact("acc", "gpu"))})
    c.add(node("n1"), node("n2", cpu="1"), classic, device_class("gpu", f'device.driver == "{GPU}"'),
          resource_slice("n2", GPU, [device("g0")]), template("t", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("p", claims={"acc": "cxl"}, templates={"gpu": "t"}))
    c.run()
    assert fake.calls[-1] == ("p", ["cxl"], ["n2"])  # n1 has no gpu: only n2 is feasible for the rest
    p = c.get("Pod", "p")
    assert p["status"]["conditions"][0]["message"] == "waiting for driver cxl.example.com"
    fake.ready_node = "n2"
    pod_obj = c.get("Pod", "p")
    c.store.update(dict(pod_obj, metadata=dict(pod_obj["metadata"], labels={"poke": "1"})))
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "n2"
    assert fake.forgotten[-1] == "p"
    assert c.pod_claim("p")["status"]["reservedFor"][0]["name"] == "p"


async def test_classic_claims_without_port_are_unschedulable() -> None:
    c = Cluster()
    c.add(node("n1"), claim("cxl", {"controllerName": "cxl.example.com", **claim_spec(exact("acc", "gpu"))}))
    c.add(pod("p", claims={"acc": "cxl"}))
    c.run()
    msg = c.get("Pod", "p")["status"]["conditions"][0]["message"]
    assert "cxl.example.com" in msg and "NodeAgentConfiguration.classicDRA" in msg


def test_failure_message_is_upstreams_histogram() -> None:
    """FitError.Error(): "<count> <reason>" sorted as strings (so "10 ..." before "9 ..."), each of
    NodeResourcesFit's reasons counted apart, absent nodes under the absent status."""
    reasons = ({f"n{i:03d}": "Insufficient cpu" for i in range(10)} | {"x": "node is not ready"}
               | {f"m{i}": "Insufficient cpu, Insufficient memory" for i in range(9)})
    assert failure_message(21, reasons) == (
        "0/21 nodes are available: 1 node is not ready, 19 Insufficient cpu, 9 Insufficient memory.")
    assert failure_message(3, {"a": "x"}, absent="y", post_filter="post.") == (
        "0/3 nodes are available: 1 x, 2 y. post.")
    assert failure_message(2, {}) == "0/2 nodes are available:"


def test_preemption_policy_never_is_not_eligible() -> None:
    assert preemption_message({"spec": {"preemptionPolicy": "Never"}}, 3, ["a"]) == (
        "preemption: not eligible due to preemptionPolicy=Never.")
    assert preemption_message({"spec": {}}, 3, ["a"]) == (
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.")


async def test_node_selector_restricts_nodes() -> None:
    c = Cluster()
    c.add(node("a", labels={"rack": "a"}), node("b", labels={"rack": "b"}))
    selected = pod("p", cpu="1")
    selected["spec"]["nodeSelector"] = {"rack": "b"}
    nowhere = pod("q", cpu="1")
    nowhere["spec"]["nodeSelector"] = {"rack": "c"}
    c.add(selected, nowhere)
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "b"
    msg = c.get("Pod", "q")["status"]["conditions"][0]["message"]
    assert msg == ("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
                   "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")


async def test_known_misfits_are_stepped_over_and_return_when_their_node_changes() -> None:
    """Pods of one shape remember the nodes they do not fit (per node version): a full cluster
    still explains every node, an evicted result is recomputed for the message, and a node
    that frees a device is looked at again."""
    c = Cluster(options=SchedulerOptions(nodes_to_score=2, initial_backoff=0.0, max_backoff=0.0))
    names = [f"n{i}" for i in range(6)]
    c.add(device_class("gpu", f'device.driver == "{GPU}"'), template("t", claim_spec(exact("gpu", "gpu"))))
    for name in names:
        c.add(node(name), resource_slice(name, GPU, [device("g0")]))
    for i in range(6):
        c.add(pod(f"p{i}", templates={"gpu": "t"}))
        c.run()
    assert sorted(c.get("Pod", f"p{i}")["spec"]["nodeName"] for i in range(6)) == names
    c.add(pod("late", templates={"gpu": "t"}))
    c.run()
    msg = c.get("Pod", "late")["status"]["conditions"][0]["message"]
    assert msg == ("0/6 nodes are available: 6 cannot allocate all claims. "
                   "preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."), msg
    for entry in c.scheduler.cache.nodes.values():  # the per-node results are evicted
        entry.results.clear()
    late = c.get("Pod", "late")
    late["metadata"]["labels"] = {"retry": "1"}
    c.store.update(late)
    c.run()
    assert c.get("Pod", "late")["status"]["conditions"][0]["message"] == msg
    holder = next(f"p{i}" for i in range(6) if c.get("Pod", f"p{i}")["spec"]["nodeName"] == "n4")
    c.delete("Pod", holder)
    c.run()
    assert c.get("Pod", "late")["spec"]["nodeName"] == "n4"


def _with_spec(obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    obj["spec"].update(fields)
    return obj


async def test_taints_cordons_and_node_affinity_filter_and_explain() -> None:
    c = Cluster()
    c.add(node("plain", labels={"zone": "b"}),
          _with_spec(node("tainted", labels={"zone": "a"}), taints=[{"key": "gpu", "value": "true",
                                                                     "effect": "NoSchedule"}]),
          _with_spec(node("cordoned", labels={"zone": "a"}), unschedulable=True))
    required = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}
    c.add(_with_spec(pod("p"), affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}))
    c.run()
    msg = c.get("Pod", "p")["status"]["conditions"][0]["message"]
    assert msg == ("0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                   "1 node(s) had untolerated taint(s), 1 node(s) were unschedulable. "
                       "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."), msg
    # uncordon: the Node update brings the pod back
    n = c.get("Node", "cordoned")
    n["spec"] = {}
    c.store.update(n)
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "cordoned"
    # a toleration opens the tainted node
    c.add(_with_spec(pod("q"), tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                     nodeSelector={"kubernetes.io/hostname": "tainted"}))
    c.run()
    assert c.get("Pod", "q")["spec"]["nodeName"] == "tainted"


async def test_a_pod_tolerating_the_cordon_goes_to_a_cordoned_node() -> None:
    """NodeUnschedulable lets a pod that tolerates node.kubernetes.io/unschedulable:NoSchedule onto
    a cordoned node (the cordon is not the Ready condition)."""
    c = Cluster()
    c.add(_with_spec(node("cordoned"), unschedulable=True))
    c.add(_with_spec(pod("p"), tolerations=[{"operator": "Exists"}]))
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "cordoned"


async def test_preferred_node_affinity_outranks_least_allocated() -> None:
    c = Cluster()
    c.add(node("a"), node("b", labels={"disk": "ssd"}))
    c.add(pod("filler", cpu="2", node_name="b"))
    prefer = [{"weight": 50, "preference": {"matchExpressions": [{"key": "disk", "operator": "In",
                                                                  "values": ["ssd"]}]}}]
    c.add(_with_spec(pod("p", cpu="1"), affinity={"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": prefer}}))
    c.add(pod("q", cpu="1"))
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "b"  # preferred, though b is fuller
    assert c.get("Pod", "q")["spec"]["nodeName"] == "a"  # no preference: least allocated


async def test_toleration_added_to_a_pending_pod_is_seen() -> None:
    c = Cluster()
    c.add(_with_spec(node("only"), taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]))
    c.add(pod("p"))
    c.run()
    assert "untolerated taint(s)" in c.get("Pod", "p")["status"]["conditions"][0]["message"]
    p = c.get("Pod", "p")
    p["spec"]["tolerations"] = [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    c.store.update(p)
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "only"
