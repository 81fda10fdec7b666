"""Virtual nodes: config validation with field paths, the Node and ResourceSlice objects, publishing,
and the virtual node agent running pods (and finishing them)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane.controllers import virtual_nodes as vn
from nodeagent.errors import ConfigError
from tests.unit.controlplane.test_scheduler_support import (
    GPU,
    Cluster,
    claim_spec,
    device_class,
    exact,
    make_store,
    pod,
    template,
)

PROFILE: dict[str, Any] = {
    "name": "vnode-{index}",
    "count": 2,
    "labels": {"zone": "a"},
    "capacity": {"cpu": "4", "memory": "32Gi", "pods": "10", "example.com/foo": "2"},
    "reservations": {"cpu": "500m", "memory": "1Gi"},
    "devices": [{"driver": GPU, "count": 3, "name": "gpu-{index}",
                 "attributes": {"model": "a100", "index": {"int": 1}, "root": "pci-{node}-{index}"},
                 "capacity": {"memory": "40Gi"}}],
}


@pytest.mark.parametrize(("raw", "message"), [
    ({"name": "n", "capacity": {"memory": "3x"}},
     'NodeAgentConfiguration.virtualNodes[0].capacity["memory"]: invalid quantity "3x"'),
    ({"name": "n", "reservations": {"cpu": "5"}}, 'virtualNodes[0].reservations["cpu"]: exceeds the capacity'),
    ({"name": "n", "colour": 1}, "virtualNodes[0].colour: unknown field"),
    ({"name": "n-{index}", "count": 0}, "virtualNodes[0].count: must be at least 1"),
    ({"name": "n", "count": 2}, "virtualNodes[0].name: must contain {index} when count > 1"),
    ({"name": "N_1"}, "virtualNodes[0].name"),
    ({"name": "n", "devices": [{"driver": GPU, "count": 200, "name": "d-{index}"}]},
     "virtualNodes[0].devices[0].count: more than 128 devices"),
    ({"name": "n", "devices": [{"driver": "Bad Driver"}]}, "virtualNodes[0].devices[0].driver"),
    ({"name": "n", "devices": [{"driver": GPU, "attributes": {"x": [1]}}]},
     'virtualNodes[0].devices[0].attributes["x"]: expected object'),
    ({"name": "n", "taints": [{"key": "gpu"}]}, "virtualNodes[0].taints[0].effect: Required value"),
    ({"name": "n", "taints": [{"key": "gpu", "effect": "Never"}]},
     'virtualNodes[0].taints[0].effect: Unsupported value: "Never"'),
    ({"name": "n", "taints": [{"effect": "NoSchedule"}]}, "virtualNodes[0].taints[0].key: Required value"),
    ({"name": "n", "taints": {"key": "gpu"}}, "virtualNodes[0].taints: expected array"),
])
def test_parse_errors_name_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        vn.parse([raw])
    assert message in str(err.value)


def test_parse_duplicates_and_local_node() -> None:
    with pytest.raises(ConfigError, match='duplicate node name "local"'):
        vn.parse([{"name": "local"}], local_node="local")
    with pytest.raises(ConfigError, match='duplicate node name "n"'):
        vn.parse([{"name": "n"}, {"name": "n"}])


def test_objects_from_profile() -> None:
    specs = vn.parse([PROFILE])
    assert [s.name for s in specs] == ["vnode-0", "vnode-1"]
    spec = specs[1]
    assert spec.allocatable == {"cpu": "3500m", "memory": str(31 * 2**30), "pods": "10", "example.com/foo": "2"}
    n = vn.node_object(spec)
    assert n["metadata"]["labels"] == {"kubernetes.io/hostname": "vnode-1", "kubernetes.io/os": "linux",
                                       vn.LABEL_VIRTUAL: "true", "zone": "a"}
    assert n["spec"] == {}
    tainted = vn.node_object(vn.parse([{**PROFILE, "taints": [{"key": "gpu", "value": "true",
                                                                "effect": "NoSchedule"}]}])[0])
    assert tainted["spec"] == {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}
    [s] = vn.slice_objects(spec)
    assert s["spec"]["nodeName"] == "vnode-1" and s["spec"]["pool"]["name"] == "vnode-1"
    assert [d["name"] for d in s["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2"]
    assert s["spec"]["devices"][2]["attributes"] == {"model": {"string": "a100"}, "index": {"int": 1},
                                                     "root": {"string": "pci-vnode-1-2"}}
    assert s["spec"]["devices"][0]["capacity"] == {"memory": {"value": "40Gi"}}


async def test_publish_then_schedule_run_and_finish() -> None:
    c = Cluster()
    specs = vn.parse([PROFILE])
    vn.publish(c.store, specs, c.clock.now())
    assert [n["metadata"]["name"] for n in c.store.list("Node")] == ["vnode-0", "vnode-1"]
    assert len(c.store.list("ResourceSlice")) == 2
    # the emulated release's version, parseable as the kubelet's (was "nodeagent-virtual")
    assert {n["status"]["nodeInfo"]["kubeletVersion"] for n in c.store.list("Node")} == {"v1.37.2"}
    vn.publish(c.store, specs, c.clock.now(), kubelet_version="v1.35.0")
    assert {n["status"]["nodeInfo"]["kubeletVersion"] for n in c.store.list("Node")} == {"v1.35.0"}
    vn.publish(c.store, specs, c.clock.now(), node_ips=("10.9.8.7",))
    agent = vn.VirtualNodeAgent(c.store, c.clock, [s.name for s in specs])
    watch = c.store.watch({"Pod", "ResourceClaim"})
    c.add(device_class("gpu", f'device.driver == "{GPU}"'), template("t", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("p", templates={"gpu": "t"}, cpu="1", annotations={"nodeagent.dev/finish-after-seconds": "5",
                                                                 "nodeagent.dev/exit-code": "3"}))

    def step() -> None:
        c.run()
        while (ev := watch.get_nowait()) is not None:
            agent.handle(ev.type, ev.object)
        agent.sync()

    step()
    p = c.get("Pod", "p")
    assert p["spec"]["nodeName"] in ("vnode-0", "vnode-1")
    assert p["status"]["phase"] == "Running"
    assert p["status"]["containerStatuses"][0]["state"]["running"]
    # what every kubelet status has, written by the node's own code (status_resources.add_generated)
    assert (p["status"]["hostIP"], p["status"]["hostIPs"]) == ("10.9.8.7", [{"ip": "10.9.8.7"}])
    assert p["status"]["containerStatuses"][0]["allocatedResources"] == {"cpu": "1"}
    assert p["status"]["allocatedResources"] == {"cpu": "1"}
    c.clock.advance(5)
    step()
    step()
    p = c.get("Pod", "p")
    assert p["status"]["phase"] == "Failed"
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    assert c.store.list("ResourceClaim") == []  # released and deleted by the claim controller
    # a smaller config removes the second node and its slice
    vn.publish(c.store, specs[:1], c.clock.now())
    assert [n["metadata"]["name"] for n in c.store.list("Node")] == ["vnode-0"]
    assert [s["spec"]["nodeName"] for s in c.store.list("ResourceSlice")] == ["vnode-0"]
    watch.close()


def test_republish_bumps_pool_generation_only_on_change() -> None:
    store = make_store()
    spec = vn.parse([{"name": "n", "devices": [{"driver": GPU, "count": 1}]}])
    vn.publish(store, spec, 0.0)
    vn.publish(store, spec, 0.0)
    assert store.list("ResourceSlice")[0]["spec"]["pool"]["generation"] == 1
    spec2 = vn.parse([{"name": "n", "devices": [{"driver": GPU, "count": 2}]}])
    vn.publish(store, spec2, 0.0)
    assert store.list("ResourceSlice")[0]["spec"]["pool"]["generation"] == 2


async def test_a_pod_deleted_with_a_grace_period_is_stopped_and_deleted_by_its_virtual_node() -> None:
    """The kubelet's graceful termination on a virtual node: kube-apiserver's graceful delete marks
    the pod (deletionTimestamp, deletionGracePeriodSeconds); the node writes the terminal status
    (containers exit 0 on SIGTERM: Succeeded) and deletes it with period 0."""
    c = Cluster()
    specs = vn.parse([{**PROFILE, "devices": []}])
    vn.publish(c.store, specs, c.clock.now())
    agent = vn.VirtualNodeAgent(c.store, c.clock, [s.name for s in specs])
    watch = c.store.watch({"Pod", "ResourceClaim"})
    c.add(pod("p", cpu="1"))

    def step() -> None:
        c.run()
        while (ev := watch.get_nowait()) is not None:
            agent.handle(ev.type, ev.object)
        agent.sync()

    step()
    assert c.get("Pod", "p")["status"]["phase"] == "Running"
    seen = c.store.watch({"Pod"})
    with c.store.transaction() as tx:  # what the API server's graceful delete (period 30) writes
        tx.mark_deleting("Pod", "default", "p", deletion_timestamp="2030-01-01T00:00:30Z", grace_period=30)
    step()
    assert c.store.peek("Pod", "default", "p") is None
    events = []
    while (ev := seen.get_nowait()) is not None:
        events.append(ev)
    assert [e.type for e in events] == ["MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
    terminal = events[1].object
    assert terminal["status"]["phase"] == "Succeeded"
    assert terminal["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert events[-1].object["metadata"]["deletionGracePeriodSeconds"] == 0
    assert events[-1].object["metadata"]["deletionTimestamp"] == "2030-01-01T00:00:00Z"


def test_generated_status_remembers_parses_of_equal_pods() -> None:
    """generated_status with a memo gives what it gives without one; replicas differing only in their
    kube-api-access volume share one parse, a pod with other resources gets its own."""
    from nodeagent.util.clock import FakeClock

    clock = FakeClock(start=1_700_000_000.0)

    def replica(name: str, cpu: str) -> dict[str, Any]:
        volume = f"kube-api-access-{name}"
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"nodeName": "vnode-0", "containers": [{
                    "name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}},
                    "volumeMounts": [{"name": volume, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
                    "volumes": [{"name": volume, "projected": {"sources": []}}]}}

    def status() -> dict[str, Any]:
        return {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "c", "state": {"running": {}}}]}

    memo: vn.Parsed = {}
    pods = [replica("a", "1"), replica("b", "1"), replica("c", "250m")]
    got = [vn.generated_status(p, status(), ["10.0.0.1"], None, clock, memo) for p in pods]
    assert got == [vn.generated_status(p, status(), ["10.0.0.1"], None, clock) for p in pods]
    assert [g["containerStatuses"][0]["allocatedResources"] for g in got] == [{"cpu": "1"}, {"cpu": "1"},
                                                                              {"cpu": "250m"}]
    assert len(memo) == 2


def test_start_finish_and_kill_statuses_share_the_parses_of_equal_pods() -> None:
    """running_status, finished_status and killed_status with a memo give what they give without
    one (the model's names are never read): replicas of one template are parsed once for all of them
    and for generated_status; a pod with other containers gets its own parse."""
    from nodeagent.util.clock import FakeClock

    clock = FakeClock(start=1_700_000_000.0)

    def replica(name: str, image: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"nodeName": "vnode-0", "initContainers": [{"name": "init", "image": "busybox"}],
                         "containers": [{"name": "c", "image": image}]},
                "status": {"phase": "Running"}}

    memo: vn.Parsed = {}
    pods = [replica("a", "pause"), replica("b", "pause"), replica("c", "nginx")]
    now = clock.now()
    for make in (lambda p, m: vn.running_status(p, now, clock, m),
                 lambda p, m: vn.finished_status(p, now, clock, 3, parsed=m),
                 lambda p, m: vn.killed_status(p, now, clock, parsed=m)):
        got = [make(p, memo) for p in pods]
        assert got == [make(p, None) for p in pods]
        assert [g["containerStatuses"][0]["image"] for g in got] == ["pause", "pause", "nginx"]
    assert len(memo) == 2


def test_replicas_on_different_nodes_share_one_parse_without_their_status() -> None:
    """The memo's key and model leave out spec.nodeName, the status and managedFields (none read by the
    statuses): one parse for a template's replicas on every node (it was one per node, 16 MiB at 500
    nodes), and what it keeps is the spec, not the pods' statuses and field sets."""
    from nodeagent.util.clock import FakeClock

    clock = FakeClock(start=1_700_000_000.0)

    def replica(name: str, node: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "uid": name,
                             "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                                                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "pause"}]},
                "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}}

    memo: vn.Parsed = {}
    pods = [replica(f"p{i}", f"vnode-{i}") for i in range(4)]
    now = clock.now()
    got = [vn.running_status(p, now, clock, memo) for p in pods]
    assert got == [vn.running_status(p, now, clock) for p in pods]
    assert [vn.generated_status(p, g, ["10.0.0.1"], None, clock, memo) for p, g in zip(pods, got, strict=True)] == [
        vn.generated_status(p, g, ["10.0.0.1"], None, clock) for p, g in zip(pods, got, strict=True)]
    assert len(memo) == 1
    (model, _, _), = memo.values()
    manifest: dict[str, Any] = dict(model.manifest)
    assert "status" not in manifest and "managedFields" not in manifest["metadata"]
    assert "nodeName" not in manifest["spec"]
