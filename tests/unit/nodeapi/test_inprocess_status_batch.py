"""The in-process API's batched status patch (a node status pass in one store transaction):
each pod's patch as `patch_pod_status` makes it, gone pods answered NotFound without losing the
others, unchanged statuses not written, all written statuses in one commit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.errors import NotFound
from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodesync.loop import NodeSync
from nodeagent.nodesync.status import NODE_CONDITIONS, NODE_STATUS_FIELDS
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock
from tests.unit.pods.fakes import FakeCgroups, FakeResources

OWNED = frozenset(NODE_STATUS_FIELDS)


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "pause"}]}}


@pytest.fixture
def store(fake_clock: FakeClock) -> Iterator[ObjectStore]:
    s = ObjectStore.memory(admitted_kinds({}), fake_clock)
    yield s
    s.close()


async def test_batch_writes_each_change_answers_each_pod_and_commits_once(store: ObjectStore) -> None:
    uids = {n: store.create(_pod(n))["metadata"]["uid"] for n in ("a", "b", "c")}
    scheduled = store.get("Pod", "default", "b")
    scheduled["status"] = {"conditions": [{"type": "PodScheduled", "status": "True"}]}
    store.update_status(scheduled)
    api = InProcessAPI(store)
    await api.patch_pod_status("default", "c", uids["c"], {"phase": "Pending"}, OWNED, NODE_CONDITIONS)
    before = store.resource_version
    _listed, watch = store.list_and_watch(("Pod",))
    answers = await api.patch_pod_statuses([
        ("default", "a", uids["a"], {"phase": "Running"}),
        ("default", "gone", "", {"phase": "Running"}),
        ("default", "b", uids["b"], {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}),
        ("default", "c", "another-uid", {"phase": "Running"}),
    ], OWNED, NODE_CONDITIONS)
    assert answers[0] is None and answers[2] is None
    assert isinstance(answers[1], NotFound) and 'pods "gone" not found' in str(answers[1])
    assert isinstance(answers[3], NotFound)
    assert store.get("Pod", "default", "a")["status"] == {"phase": "Running"}
    b = store.get("Pod", "default", "b")["status"]
    assert b["phase"] == "Pending" and [c["type"] for c in b["conditions"]] == ["PodScheduled", "Ready"]
    assert store.get("Pod", "default", "c")["status"] == {"phase": "Pending"}  # the wrong uid wrote nothing
    assert store.resource_version == before + 2  # a and b, in one transaction
    seen = [watch.get_nowait(), watch.get_nowait()]
    assert [e.object["metadata"]["name"] for e in seen if e is not None] == ["a", "b"]
    assert watch.get_nowait() is None
    # the same statuses again write nothing
    again = await api.patch_pod_statuses([("default", "a", uids["a"], {"phase": "Running"})], OWNED,
                                         NODE_CONDITIONS)
    assert again == [None] and store.resource_version == before + 2 and watch.get_nowait() is None
    watch.close()


async def test_a_node_sync_pass_writes_each_pods_status(store: ObjectStore, fake_clock: FakeClock) -> None:
    """Pods bound at once: one status pass writes each pod's status as the node computes it
    (through the batch, in the pod table's order: no pass sorts the node's pods)."""
    recorder = EventRecorder(clock=fake_clock, host="node-a")
    pods = PodManager(node_name="node-a", resources=FakeResources({"cpu": 8000, "memory": 32 << 30, "pods": 110}),
                      admitters=[], cgroups=FakeCgroups(), db=StateDB.memory(), clock=fake_clock,
                      instruments=Instruments(CollectorRegistry()), recorder=recorder)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}
    sync = NodeSync(node_name="node-a", api=InProcessAPI(store), pods=pods, node_object=lambda: node,
                    recorder=recorder, clock=fake_clock, bind_unscheduled=False)
    await sync.start()
    for name in ("x", "y", "z"):
        store.create(_pod(name))
    await sync.flush()
    for name in ("x", "y", "z"):
        written = store.get("Pod", "default", name)["status"]
        assert written["phase"] == pods.get("default", name).status.phase
        assert written.get("qosClass") == "BestEffort"
    sync.close()
    await pods.close()
