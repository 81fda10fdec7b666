"""A pod status the API server refuses (422, a ValidationError; or 500 for a status too large for etcd,
RequestTooLarge, as the kubelet's status manager logs it and tries again later) is not retried in a loop.

The first run against a real kube-apiserver saw the node patch a refused status about 14 times
per pod per second (1,875 refusals in 66 s). Now the pod's retries back off on the injected clock
(1 s doubling to 2m2s), the refusal is logged once and posted once as a Warning event, and the
first accepted write clears it all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.errors import NodeAgentError, RequestTooLarge, ValidationError
from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.nodeapi.refusals import REASON as REFUSED_REASON
from nodeagent.nodesync.loop import NodeSync
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock
from tests.unit.pods.fakes import FakeCgroups, FakeResources


class RefusingAPI:
    """The in-process API seen as a remote one (status patches one by one) whose status writes
    kube-apiserver's validation refuses while `refuse` is set."""

    def __init__(self, inner: InProcessAPI, error: type[NodeAgentError] = ValidationError) -> None:
        self._inner = inner
        self._error = error
        self.refuse = True
        self.attempts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def patch_pod_status(self, namespace: str, name: str, uid: str, status: Mapping[str, Any],
                               node_owned: frozenset[str], node_conditions: frozenset[str]) -> None:
        self.attempts += 1
        if self.refuse and self._error is RequestTooLarge:
            raise RequestTooLarge(f"PATCH /api/v1/namespaces/{namespace}/pods/{name}/status: "
                                  "etcdserver: request is too large")
        if self.refuse:
            raise ValidationError("", f'PATCH /api/v1/namespaces/{namespace}/pods/{name}/status: Pod "{name}" is '
                                  "invalid: status.containerStatuses[0].allocatedResourcesStatus[0].name: ...")
        await self._inner.patch_pod_status(namespace, name, uid, status, node_owned, node_conditions)


@pytest.fixture
def store(fake_clock: FakeClock) -> Iterator[ObjectStore]:
    s = ObjectStore.memory(admitted_kinds({}), fake_clock)
    yield s
    s.close()


@pytest.mark.parametrize("error", [ValidationError, RequestTooLarge])
async def test_refused_status_backs_off_logs_once_and_posts_one_event(
        store: ObjectStore, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture,
        error: type[NodeAgentError]) -> None:
    recorder = EventRecorder(clock=fake_clock, host="node-a")
    pods = PodManager(node_name="node-a", resources=FakeResources({"cpu": 8000, "memory": 32 << 30, "pods": 110}),
                      admitters=[], cgroups=FakeCgroups(), db=StateDB.memory(), clock=fake_clock,
                      instruments=Instruments(CollectorRegistry()), recorder=recorder)
    api = RefusingAPI(InProcessAPI(store), error)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}
    sync = NodeSync(node_name="node-a", api=cast(NodeAPI, api), pods=pods, node_object=lambda: node,
                    recorder=recorder, clock=fake_clock, bind_unscheduled=False)
    await sync.start()
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "default"},
                  "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "pause"}]}})
    caplog.set_level(logging.DEBUG, logger="nodeagent.nodeapi.refusals")
    for _ in range(66 * 20):  # 66 s of 50 ms passes, the first run's measurement
        await sync.flush()
        fake_clock.advance(0.05)
    # at 0, 1, 3, 7, 15, 31 and 63 s: the backoff's schedule, not one try per pass
    assert api.attempts == 7
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "refused" in r.getMessage()]
    assert len(warnings) == 1
    pod = pods.get("default", "x").pod
    assert [e.reason for e in recorder.for_pod(pod)].count(REFUSED_REASON) == 1
    assert "phase" not in (store.get("Pod", "default", "x").get("status") or {})

    api.refuse = False
    for _ in range(70 * 20):  # the next retry (at 127 s) is accepted
        await sync.flush()
        fake_clock.advance(0.05)
    assert store.get("Pod", "default", "x")["status"]["phase"] == "Running"
    assert api.attempts == 8
    assert any("written after refusals" in r.getMessage() for r in caplog.records)
    sync.close()
    await pods.close()
