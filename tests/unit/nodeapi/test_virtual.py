"""Virtual nodes served by a node process (nodeapi/virtual.py), over the in-process port with the
claim controller and scheduler stepped synchronously: Nodes and slices registered with the
process's label, Leases renewed, a pod with a claim from a template Running once its claim is
reserved and finished after its time, slices of nodes no longer configured removed (a control
plane's own virtual nodes left alone), a deleted Node registered again, an API that fails at
start retried; and the status patch the virtual node sends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from nodeagent.apiserver.catalog import Catalog, builtin_resources
from nodeagent.apiserver.registry import Registry
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.controlplane.controllers import virtual_nodes as vn
from nodeagent.errors import Unavailable
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodeapi.ports import PodEvent
from nodeagent.nodeapi.virtual import VirtualNodeHost
from tests.unit.controlplane.test_scheduler_support import GPU, Cluster, claim_spec, device_class, exact, pod, template

HOST = "proc-a"
PROFILE: dict[str, Any] = {
    "name": "vn-{index}", "count": 2, "labels": {"zone": "a"},
    "capacity": {"cpu": "4", "memory": "32Gi", "pods": "10"},
    "taints": [{"key": "virtual", "value": "true", "effect": "NoSchedule"}],
    "devices": [{"driver": GPU, "count": 2, "name": "gpu-{index}", "capacity": {"memory": "40Gi"}}],
}
TOLERATE = [{"key": "virtual", "operator": "Exists", "effect": "NoSchedule"}]


async def settle(c: Cluster, until: Callable[[], bool], rounds: int = 200) -> None:
    """Step the controllers and let the host's tasks run until `until` holds."""
    for _ in range(rounds):
        c.run()
        for _ in range(5):
            await asyncio.sleep(0)
        if until():
            return
    raise AssertionError("condition not reached")


def phase(c: Cluster, name: str) -> str:
    return str(c.store.get("Pod", "default", name).get("status", {}).get("phase"))


async def test_registers_publishes_renews_and_runs_pods() -> None:
    c = Cluster(lifecycle=True)
    # the API server's field manager, as the daemon gives the store (the slices' managedFields)
    c.store.field_manager = Registry(c.store, Catalog(builtin_resources()), builtin_definitions(),
                                     builtin_strategies(), c.clock).in_process_fields
    host = VirtualNodeHost(InProcessAPI(c.store), c.clock, vn.parse([PROFILE]), host=HOST, lease_duration=8)
    await host.start()
    try:
        assert host.ready()
        c.run()
        nodes = {n["metadata"]["name"]: n for n in c.store.list("Node")}
        assert sorted(nodes) == ["vn-0", "vn-1"]
        node = nodes["vn-1"]
        assert node["metadata"]["labels"][vn.LABEL_HOST] == HOST and node["metadata"]["labels"]["zone"] == "a"
        # the profile's taint; TaintNodesByCondition's not-ready taint went once the node was seen Ready
        assert node["spec"]["taints"] == [{"key": "virtual", "value": "true", "effect": "NoSchedule"}]
        assert node["status"]["allocatable"] == {"cpu": "4", "memory": "32Gi", "pods": "10"}
        assert [x["status"] for x in node["status"]["conditions"] if x["type"] == "Ready"] == ["True"]
        slices = c.store.list("ResourceSlice")
        assert sorted(s["spec"]["nodeName"] for s in slices) == ["vn-0", "vn-1"]
        assert all(s["metadata"]["labels"][vn.LABEL_HOST] == HOST for s in slices)
        assert all(s["metadata"]["managedFields"][0]["manager"] == vn.SLICE_MANAGER for s in slices)
        # the Leases: the first renewed at once, the second half an interval (2 s of 8 s * 0.25) later
        await settle(c, lambda: c.store.try_get("Lease", "kube-node-lease", "vn-0") is not None)
        await c.clock.wait_for_sleepers(3)  # both Lease renewals and the status loop
        c.clock.advance(1.0)
        await settle(c, lambda: c.store.try_get("Lease", "kube-node-lease", "vn-1") is not None)
        first = c.store.get("Lease", "kube-node-lease", "vn-0")["spec"]["renewTime"]
        await c.clock.wait_for_sleepers(3)
        c.clock.advance(2.0)
        await settle(c, lambda: c.store.get("Lease", "kube-node-lease", "vn-0")["spec"]["renewTime"] != first)
        assert host.leases["vn-0"].renewed == 2

        c.add(device_class("gpu", f'device.driver == "{GPU}"'), template("t", claim_spec(exact("gpu", "gpu"))))
        p = pod("p", templates={"gpu": "t"}, cpu="1",
                annotations={"nodeagent.dev/finish-after-seconds": "5", "nodeagent.dev/exit-code": "3"})
        p["spec"]["tolerations"] = TOLERATE
        c.add(p)
        await settle(c, lambda: phase(c, "p") == "Running")
        got = c.store.get("Pod", "default", "p")
        assert got["spec"]["nodeName"] in ("vn-0", "vn-1")
        types = {x["type"]: x["status"] for x in got["status"]["conditions"]}
        assert types == {"PodScheduled": "True", "Initialized": "True", "ContainersReady": "True", "Ready": "True",
                         "PodReadyToStartContainers": "True"}  # the node's conditions, as the main node writes
        assert got["status"]["resourceClaimStatuses"]  # the control plane's fields are kept by the patch
        assert got["status"]["containerStatuses"][0]["state"]["running"]
        assert host.writes == 1
        await c.clock.wait_for_sleepers(3)
        c.clock.advance(5)
        await settle(c, lambda: phase(c, "p") == "Failed")
        got = c.store.get("Pod", "default", "p")
        assert got["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
        assert host.writes == 2
    finally:
        await host.stop()


async def test_republish_removes_own_slices_only_and_registers_deleted_node_again() -> None:
    c = Cluster(lifecycle=True)
    # the control plane's own virtual node (no host label) and another process's slice stay
    vn.publish(c.store, vn.parse([{"name": "cp-node", "devices": [{"driver": GPU}]}]), c.clock.now())
    specs = vn.parse([PROFILE])
    first = VirtualNodeHost(InProcessAPI(c.store), c.clock, specs, host=HOST)
    await first.start()
    await first.stop()
    assert len(c.store.list("ResourceSlice")) == 3
    version = {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in c.store.list("ResourceSlice")}
    host = VirtualNodeHost(InProcessAPI(c.store), c.clock, specs[:1], host=HOST)
    await host.start()
    try:
        after = {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in c.store.list("ResourceSlice")}
        assert sorted(after) == sorted(n for n in version if not n.startswith("vn-1"))
        assert all(after[n] == version[n] for n in after)  # unchanged slices are not written again
        # the control plane republishing its own virtual nodes leaves the hosted ones alone
        vn.publish(c.store, vn.parse([{"name": "cp-node", "devices": [{"driver": GPU}]}]), c.clock.now())
        assert sorted(n["metadata"]["name"] for n in c.store.list("Node")) == ["cp-node", "vn-0", "vn-1"]
        assert len(c.store.list("ResourceSlice")) == 2
        c.store.delete("Node", "", "vn-0")
        assert await host._maintain_once()
        assert c.store.get("Node", "", "vn-0")["metadata"]["labels"][vn.LABEL_HOST] == HOST
    finally:
        await host.stop()


class FlakyAPI(InProcessAPI):
    """The in-process port whose Node list fails while `down` is set."""

    down = True

    async def list_nodes(self, label_selector: str) -> list[Mapping[str, Any]]:
        if self.down:
            raise Unavailable("GET /api/v1/nodes on https://127.0.0.1:1: connection refused")
        return await super().list_nodes(label_selector)


async def test_api_down_at_start_is_retried() -> None:
    c = Cluster(lifecycle=True)
    api = FlakyAPI(c.store)
    host = VirtualNodeHost(api, c.clock, vn.parse([PROFILE]), host=HOST)
    await host.start()  # does not raise: retried in the background
    try:
        assert not host.ready() and c.store.list("Node") == []
        api.down = False
        await settle(c, lambda: c.clock.sleepers > 0)  # the retry is waiting for its backoff
        c.clock.advance(0.5)
        await settle(c, host.ready)
        assert len(c.store.list("Node")) == 2 and len(c.store.list("ResourceSlice")) == 2
    finally:
        await host.stop()


def test_status_patch_sends_the_virtual_nodes_fields_and_conditions_only() -> None:
    """The node's fields and the conditions it owns, as the process's own node patches them (nodesync):
    PodScheduled too (the kubelet's, with the binding's lastTransitionTime kept), DisruptionTarget kept as the
    API has it unless the node sets it."""
    from nodeagent.util.clock import FakeClock

    clock = FakeClock()
    p = pod("p", cpu="1")
    p["status"] = {"phase": "Pending", "qosClass": "Burstable",
                   "conditions": [{"type": "PodScheduled", "status": "True",
                                   "lastTransitionTime": "2025-12-31T23:59:00Z"},
                                  {"type": "DisruptionTarget", "status": "False"}]}
    running = vn.running_status(p, 1767225600.0, clock)
    patch = vn.status_patch(running)
    assert set(patch) == {"phase", "qosClass", "startTime", "conditions", "containerStatuses"}
    assert sorted(x["type"] for x in patch["conditions"]) == [
        "ContainersReady", "Initialized", "PodReadyToStartContainers", "PodScheduled", "Ready"]
    done = vn.status_patch(vn.finished_status({**p, "status": running}, 1767225660.0, clock))
    assert done["phase"] == "Succeeded"
    assert sorted((x["type"], x["status"]) for x in done["conditions"]) == [
        ("ContainersReady", "False"), ("Initialized", "True"), ("PodReadyToStartContainers", "False"),
        ("PodScheduled", "True"), ("Ready", "False")]
    # the binding's time stays (updateLastTransitionTime: the status did not change), and Initialized's too
    times = {x["type"]: x["lastTransitionTime"] for x in done["conditions"]}
    assert times["PodScheduled"] == "2025-12-31T23:59:00Z"
    assert times["Initialized"] == {x["type"]: x["lastTransitionTime"] for x in patch["conditions"]}["Initialized"]
    assert times["Ready"] == "2026-01-01T00:01:00Z"
    assert done["startTime"] == running["startTime"] == "2026-01-01T00:00:00Z"


async def test_a_stale_pod_event_after_the_status_write_does_not_write_it_again() -> None:
    """The kubelet's status manager keeps what it wrote: an event of another writer that the watch
    delivers before the patch comes back (the object without Running) is not a reason to send the
    same status again; once the API shows it, or for another pod of that name, the API's object counts."""
    c = Cluster(lifecycle=True)
    host = VirtualNodeHost(InProcessAPI(c.store), c.clock, vn.parse([PROFILE]), host=HOST)
    await host.start()
    try:
        p = pod("p", cpu="1")
        p["spec"]["tolerations"] = TOLERATE
        c.add(p)
        await settle(c, lambda: phase(c, "p") == "Running")
        assert host.writes == 1
        bound = dict(c.store.get("Pod", "default", "p"))
        stale = {**bound, "status": {k: v for k, v in bound["status"].items() if k != "phase"}}
        assert host._statuses == {}  # the watch brought the write back
        # the write done, its echo not yet delivered; another writer's event (older status) arrives
        host._statuses[("default", "p")] = (bound["metadata"]["uid"], bound["status"])
        host._apply(PodEvent("MODIFIED", stale), host._pods)
        assert host._pods.objects[("default", "p")]["status"]["phase"] == "Running"
        host._wake.set()
        await settle(c, lambda: True)
        for _ in range(20):
            await asyncio.sleep(0)
        assert host.writes == 1
        host._apply(PodEvent("MODIFIED", bound), host._pods)  # the API caught up: the record goes
        assert host._statuses == {}
        other = {**stale, "metadata": {**stale["metadata"], "uid": "another"}}
        host._apply(PodEvent("MODIFIED", other), host._pods)
        assert "phase" not in host._pods.objects[("default", "p")]["status"]
    finally:
        await host.stop()


async def test_the_status_has_what_the_kubelet_adds_to_every_status() -> None:
    """hostIP/hostIPs and the pod's and containers' resources/allocatedResources, written by the same code
    as the process's own node (status_resources.add_generated), gated per release as its kubelet is."""
    for gate, pod_level in ((None, True), (lambda name: name != "InPlacePodLevelResourcesVerticalScaling", False)):
        c = Cluster(lifecycle=True)
        host = VirtualNodeHost(InProcessAPI(c.store), c.clock, vn.parse([PROFILE]), host=HOST, lease_duration=8,
                               node_ips=("10.1.2.3",), gate=gate)
        await host.start()
        try:
            p = pod("p", cpu="1")
            p["spec"]["tolerations"] = TOLERATE
            c.add(p)
            await settle(c, lambda: phase(c, "p") == "Running")  # noqa: B023  # the loop's own cluster
            status = c.store.get("Pod", "default", "p")["status"]
            assert (status["hostIP"], status["hostIPs"]) == ("10.1.2.3", [{"ip": "10.1.2.3"}])
            main = status["containerStatuses"][0]
            assert main["resources"]["requests"]["cpu"] == "1" and main["allocatedResources"]["cpu"] == "1"
            assert ("allocatedResources" in status) is pod_level and ("resources" in status) is pod_level
        finally:
            await host.stop()
