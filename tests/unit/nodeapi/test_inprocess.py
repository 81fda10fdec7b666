"""The node's API port in process: the pod watch (SYNC, then this node's pods only, relist after
RESYNC), the status manager's patch (node fields over the control plane's, uid checked), slice
DeleteCollection, the Lease (created owned by the Node, renewed, created again after deletion),
and the node sync registering its Node again when it was deleted under it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.errors import NotFound
from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodeapi.lease import LeaseRenewer, parse_time
from nodeagent.nodeapi.ports import ADDED, DELETED, SYNC
from nodeagent.nodesync.loop import NodeSync
from nodeagent.nodesync.status import NODE_CONDITIONS, NODE_STATUS_FIELDS
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock
from tests.unit.pods.fakes import FakeCgroups, FakeResources

NODE = "node-a"


def _pod(name: str, node: str = NODE) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


@pytest.fixture
def store(fake_clock: FakeClock) -> Iterator[ObjectStore]:
    s = ObjectStore.memory(admitted_kinds({}), fake_clock)
    yield s
    s.close()


async def test_pod_watch_lists_then_follows_only_this_node(store: ObjectStore) -> None:
    store.create(_pod("mine"))
    store.create(_pod("other", "node-b"))
    store.create(_pod("unscheduled", ""))
    api = InProcessAPI(store)
    watch = api.watch_pods(NODE)
    first = await watch.next()
    assert first.type == SYNC and [p["metadata"]["name"] for p in first.items] == ["mine"]
    store.create(_pod("later"))
    store.create(_pod("elsewhere", "node-b"))
    store.delete("Pod", "default", "mine")
    events = [await watch.next(), await watch.next()]
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [(ADDED, "later"), (DELETED, "mine")]
    assert watch.get_nowait() is None
    watch.close()
    binding = api.watch_pods(NODE, unscheduled=True)
    assert sorted(p["metadata"]["name"] for p in (await binding.next()).items) == ["later", "unscheduled"]
    binding.close()


async def test_patch_pod_status_keeps_the_control_planes_part(store: ObjectStore) -> None:
    created = store.create(_pod("p"))
    uid = created["metadata"]["uid"]
    current = store.get("Pod", "default", "p")
    current["status"] = {"conditions": [{"type": "PodScheduled", "status": "True"}], "message": "old",
                         "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu"}]}
    store.update_status(current)
    api = InProcessAPI(store)
    await api.patch_pod_status("default", "p", uid, {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}]}, frozenset(NODE_STATUS_FIELDS), NODE_CONDITIONS)
    status = store.get("Pod", "default", "p")["status"]
    assert status["phase"] == "Running" and "message" not in status
    assert [c["type"] for c in status["conditions"]] == ["PodScheduled", "Ready"]
    assert status["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": "p-gpu"}]
    with pytest.raises(NotFound):
        await api.patch_pod_status("default", "p", "another-uid", {}, frozenset(), frozenset())


async def test_patch_pod_status_writes_only_a_change_and_never_the_shared_object(store: ObjectStore) -> None:
    """The same status again writes nothing (no new resourceVersion, no watch event), as the API
    server's no-op patch; a change is written without touching the store's committed object,
    which readers (peek) share."""
    uid = store.create(_pod("p"))["metadata"]["uid"]
    api = InProcessAPI(store)
    owned, conditions = frozenset(NODE_STATUS_FIELDS), NODE_CONDITIONS
    await api.patch_pod_status("default", "p", uid, {"phase": "Pending"}, owned, conditions)
    shared = store.peek("Pod", "default", "p")
    assert shared is not None
    version = shared["metadata"]["resourceVersion"]
    _listed, watch = store.list_and_watch(("Pod",))
    await api.patch_pod_status("default", "p", uid, {"phase": "Pending"}, owned, conditions)
    assert store.peek("Pod", "default", "p")["metadata"]["resourceVersion"] == version
    assert watch.get_nowait() is None
    await api.patch_pod_status("default", "p", uid, {"phase": "Running"}, owned, conditions)
    assert shared["status"] == {"phase": "Pending"} and shared["metadata"]["resourceVersion"] == version
    after = store.get("Pod", "default", "p")
    assert after["status"]["phase"] == "Running" and after["metadata"]["resourceVersion"] != version
    event = watch.get_nowait()
    assert event is not None and event.object["status"]["phase"] == "Running"
    watch.close()


async def test_delete_node_slices_by_node_and_driver(store: ObjectStore) -> None:
    for name, node, driver in (("a", NODE, "gpu.example.com"), ("b", NODE, "net.example.com"),
                               ("c", "node-b", "gpu.example.com")):
        store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
                      "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                            "resourceSliceCount": 1}, "devices": []}})
    api = InProcessAPI(store)
    assert await api.delete_node_slices(NODE, "gpu.example.com") == 1
    assert await api.delete_node_slices(NODE) == 1
    assert [s["metadata"]["name"] for s in store.list("ResourceSlice")] == ["c"]


async def test_lease_is_created_owned_by_the_node_and_renewed(store: ObjectStore, fake_clock: FakeClock) -> None:
    api = InProcessAPI(store)
    renewer = LeaseRenewer(api, fake_clock, NODE, 40)
    assert renewer.interval == 10.0
    with pytest.raises(NotFound):  # no Node yet: nothing to own the Lease
        await renewer.renew_once()
    node = store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    await renewer.renew_once()
    lease = store.get("Lease", "kube-node-lease", NODE)
    assert lease["spec"]["holderIdentity"] == NODE and lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    first = parse_time(lease["spec"]["renewTime"])
    fake_clock.advance(10.5)
    await renewer.renew_once()
    renewed = parse_time(store.get("Lease", "kube-node-lease", NODE)["spec"]["renewTime"])
    assert first is not None and renewed == pytest.approx(first + 10.5, abs=1e-3)
    store.delete("Lease", "kube-node-lease", NODE)
    await renewer.renew_once()
    assert store.peek("Lease", "kube-node-lease", NODE) is not None


@pytest.fixture
async def sync(store: ObjectStore, fake_clock: FakeClock) -> AsyncIterator[NodeSync]:
    recorder = EventRecorder(clock=fake_clock, host=NODE)
    pods = PodManager(node_name=NODE, resources=FakeResources({"cpu": 8000, "memory": 32 << 30, "pods": 110}),
                      admitters=[], cgroups=FakeCgroups(), db=StateDB.memory(), clock=fake_clock,
                      instruments=Instruments(CollectorRegistry()), recorder=recorder)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {"zone": "a"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    s = NodeSync(node_name=NODE, api=InProcessAPI(store), pods=pods, node_object=lambda: node, recorder=recorder,
                 clock=fake_clock, bind_unscheduled=False, status_interval=10.0)
    await s.start()
    yield s
    s.close()


async def test_node_deleted_under_the_node_is_registered_again(
    sync: NodeSync, store: ObjectStore, fake_clock: FakeClock
) -> None:
    assert store.get("Node", "", NODE)["metadata"]["labels"] == {"zone": "a"}
    store.delete("Node", "", NODE)
    await sync.publish_node()
    assert store.peek("Node", "", NODE) is None  # not before the status update frequency
    fake_clock.advance(10)
    await sync.publish_node()
    assert store.get("Node", "", NODE)["status"]["conditions"][0]["status"] == "True"
    # someone else (the lifecycle controller) changed the status: written again at the next check
    node = store.get("Node", "", NODE)
    node["status"] = {"conditions": [{"type": "Ready", "status": "Unknown"}]}
    store.update_status(node)
    fake_clock.advance(10)
    await sync.publish_node()
    assert store.get("Node", "", NODE)["status"]["conditions"][0]["status"] == "True"


async def test_pods_bound_while_down_run_and_deleted_ones_stop(sync: NodeSync, store: ObjectStore) -> None:
    store.create(_pod("web"))
    await sync.flush()
    assert sync.pod_object("default", "web") is not None
    store.delete("Pod", "default", "web")
    await sync.flush()
    assert sync.pod_object("default", "web") is None


async def test_heartbeat_and_labels_of_others(sync: NodeSync, store: ObjectStore, fake_clock: FakeClock) -> None:
    node = store.get("Node", "", NODE)
    first = node["status"]["conditions"][0]["lastHeartbeatTime"]
    node["metadata"]["labels"]["team"] = "ml"  # kubectl label node: not the kubelet's to remove
    store.update(node)
    fake_clock.advance(10)
    await sync.publish_node()
    node = store.get("Node", "", NODE)
    assert node["metadata"]["labels"] == {"zone": "a", "team": "ml"}
    assert node["status"]["conditions"][0]["lastHeartbeatTime"] == first  # unchanged: no write
    fake_clock.advance(300)  # nodeStatusReportFrequency
    await sync.publish_node()
    assert store.get("Node", "", NODE)["status"]["conditions"][0]["lastHeartbeatTime"] != first
