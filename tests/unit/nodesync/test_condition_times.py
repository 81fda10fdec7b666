"""The node's pod conditions keep their lastTransitionTime while their status stays (the kubelet status
manager's updateLastTransitionTime against its cache, or the API's pod.Status before its first write).

Before: a joined node's status patch carried PodScheduled with the node's own start second, which the
patch's merge by type wrote over the time the binding set (seen comparing managedFields and conditions
with the real kube-controller-manager's pods); and a pod bound by spec.nodeName on the embedded API had
no PodScheduled at all, where the kubelet writes it True for every pod it runs (PodConditionsByKubelet).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.nodesync.loop import NodeSync
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock
from tests.unit.pods.fakes import FakeCgroups, FakeResources

BOUND_AT = "2025-06-01T10:00:00Z"


class RecordingAPI:
    """The in-process API seen as a remote one: status patches one by one, each recorded as sent."""

    def __init__(self, inner: InProcessAPI) -> None:
        self._inner = inner
        self.sent: list[tuple[str, Mapping[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def patch_pod_status(self, namespace: str, name: str, uid: str, status: Mapping[str, Any],
                               node_owned: frozenset[str], node_conditions: frozenset[str]) -> None:
        self.sent.append((name, status))
        await self._inner.patch_pod_status(namespace, name, uid, status, node_owned, node_conditions)


@pytest.fixture
def store(fake_clock: FakeClock) -> Iterator[ObjectStore]:
    s = ObjectStore.memory(admitted_kinds({}), fake_clock)
    yield s
    s.close()


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "pause"}]}}


def _conditions(status: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("lastTransitionTime")) for c in status.get("conditions") or ()}


async def test_scheduled_time_kept_and_nodename_pods_get_podscheduled(store: ObjectStore,
                                                                     fake_clock: FakeClock) -> None:
    fake_clock.advance(3600.0)  # the node's clock is an hour past the binding
    scheduled = store.create(_pod("scheduled"))
    scheduled["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": BOUND_AT}]}
    store.update_status(scheduled)
    store.create(_pod("direct"))  # bound by spec.nodeName: no scheduler wrote a condition
    recorder = EventRecorder(clock=fake_clock, host="node-a")
    pods = PodManager(node_name="node-a", resources=FakeResources({"cpu": 8000, "memory": 32 << 30, "pods": 110}),
                      admitters=[], cgroups=FakeCgroups(), db=StateDB.memory(), clock=fake_clock,
                      instruments=Instruments(CollectorRegistry()), recorder=recorder)
    api = RecordingAPI(InProcessAPI(store))
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}
    sync = NodeSync(node_name="node-a", api=cast(NodeAPI, api), pods=pods, node_object=lambda: node,
                    recorder=recorder, clock=fake_clock, bind_unscheduled=False)
    await sync.start()
    try:
        for _ in range(100):
            await sync.flush()
            fake_clock.advance(0.05)
            if all(store.get("Pod", "default", n).get("status", {}).get("phase") == "Running"
                   for n in ("scheduled", "direct")):
                break
        sent = {name: status for name, status in api.sent}
        # what a joined node sends: the binding's time, not its own (the patch merges conditions by type)
        assert _conditions(sent["scheduled"])["PodScheduled"] == ("True", BOUND_AT)
        stored = _conditions(store.get("Pod", "default", "scheduled")["status"])
        assert stored["PodScheduled"] == ("True", BOUND_AT)
        assert stored["Ready"][0] == "True" and stored["Ready"][1] != BOUND_AT
        direct = _conditions(store.get("Pod", "default", "direct")["status"])
        assert direct["PodScheduled"] == ("True", direct["Initialized"][1])  # written at the node's first status
        ready_at = stored["Ready"][1]
        fake_clock.advance(60.0)
        await pods.kill(scheduled["metadata"]["uid"])
        for _ in range(100):
            await sync.flush()
            fake_clock.advance(0.05)
            if store.get("Pod", "default", "scheduled")["status"].get("phase") in ("Failed", "Succeeded"):
                break
        after = _conditions(store.get("Pod", "default", "scheduled")["status"])
        assert after["PodScheduled"] == ("True", BOUND_AT)
        assert after["Initialized"] == stored["Initialized"]  # True before and after: its time stays
        assert after["Ready"][0] == "False" and after["Ready"][1] != ready_at
    finally:
        sync.close()
