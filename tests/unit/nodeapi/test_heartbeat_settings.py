"""The node heartbeat follows the configuration (issue 11): the Lease is renewed every quarter of the
KubeletConfiguration's nodeLeaseDurationSeconds (or NodeAgentConfiguration.node's override), and an
unchanged Node status is written again every nodeStatusReportFrequency, on a fake clock."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.config import parse_documents
from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodeapi.lease import LeaseRenewer, parse_time
from nodeagent.nodesync.loop import NodeSync
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock
from tests.unit.pods.fakes import FakeCgroups, FakeResources

NODE = "node-a"


@pytest.fixture
def store(fake_clock: FakeClock) -> Iterator[ObjectStore]:
    s = ObjectStore.memory(admitted_kinds({}), fake_clock)
    yield s
    s.close()


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def _cfg(kubelet: dict[str, Any], node: dict[str, Any] | None = None) -> Any:
    return parse_documents([{"kind": "KubeletConfiguration", **kubelet},
                            {"kind": "NodeAgentConfiguration", "nodeName": NODE,
                             **({"node": node} if node is not None else {})}])


@pytest.mark.parametrize(("kubelet", "node", "duration"), [
    ({"nodeLeaseDurationSeconds": 20}, None, 20),
    ({"nodeLeaseDurationSeconds": 20}, {"leaseDurationSeconds": 8}, 8),
])
async def test_lease_renewals_follow_node_lease_duration_seconds(
    store: ObjectStore, fake_clock: FakeClock, kubelet: dict[str, Any], node: dict[str, Any] | None, duration: int
) -> None:
    cfg = _cfg(kubelet, node)
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    renewer = LeaseRenewer(InProcessAPI(store), fake_clock, NODE, cfg.agent.node.lease_duration_seconds)
    task = asyncio.create_task(renewer.run())
    try:
        await _settle()
        assert renewer.renewed == 1
        lease = store.get("Lease", "kube-node-lease", NODE)
        assert lease["spec"]["leaseDurationSeconds"] == duration
        first = parse_time(lease["spec"]["renewTime"])
        quarter = duration / 4
        await fake_clock.wait_for_sleepers()
        fake_clock.advance(quarter - 0.1)
        await _settle()
        assert renewer.renewed == 1  # not before a quarter of the duration
        await fake_clock.wait_for_sleepers()
        fake_clock.advance(0.1)
        await _settle()
        assert renewer.renewed == 2
        for _ in range(3):
            await fake_clock.wait_for_sleepers()
            fake_clock.advance(quarter)
            await _settle()
        assert renewer.renewed == 5
        last = parse_time(store.get("Lease", "kube-node-lease", NODE)["spec"]["renewTime"])
        assert first is not None and last == pytest.approx(first + 4 * quarter, abs=1e-3)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_unchanged_status_is_reported_again_every_report_frequency(
    store: ObjectStore, fake_clock: FakeClock
) -> None:
    cfg = _cfg({"nodeStatusUpdateFrequency": "10s", "nodeStatusReportFrequency": "1m"})
    recorder = EventRecorder(clock=fake_clock, host=NODE)
    pods = PodManager(node_name=NODE, resources=FakeResources({"cpu": 8000, "memory": 32 << 30, "pods": 110}),
                      admitters=[], cgroups=FakeCgroups(), db=StateDB.memory(), clock=fake_clock,
                      instruments=Instruments(CollectorRegistry()), recorder=recorder)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    sync = NodeSync(node_name=NODE, api=InProcessAPI(store), pods=pods, node_object=lambda: node, recorder=recorder,
                    clock=fake_clock, bind_unscheduled=False, status_interval=cfg.agent.node.status_update_frequency,
                    report_interval=cfg.agent.node.status_report_frequency)
    await sync.start()
    try:
        def heartbeat() -> float | None:
            return parse_time(store.get("Node", "", NODE)["status"]["conditions"][0]["lastHeartbeatTime"])

        first = heartbeat()
        assert first is not None
        for _ in range(5):  # checked every 10 s, unchanged: not written
            fake_clock.advance(10)
            await sync.publish_node()
            assert heartbeat() == first
        fake_clock.advance(10)  # 60 s: written again as a heartbeat
        await sync.publish_node()
        assert heartbeat() == pytest.approx(first + 60)
    finally:
        sync.close()


class _Away(InProcessAPI):
    """The API server gone: every Node read fails as RemoteAPI's requests then do."""

    def __init__(self, store: ObjectStore) -> None:
        super().__init__(store)
        self.away = True
        self.reads = 0

    async def get_node(self, name: str) -> Any:
        self.reads += 1
        if self.away:
            from nodeagent.errors import Unavailable

            raise Unavailable("GET /api/v1/nodes/n on https://127.0.0.1:1: Connect call failed")
        return await super().get_node(name)


async def test_node_status_is_retried_with_backoff_and_logged_once_per_outage(
    store: ObjectStore, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """While the API server is away the Node write is retried on a backoff (the pass interval
    doubling up to nodeStatusUpdateFrequency) and logged once, and once when it is back: every 50 ms
    pass retried and logged it (20 warnings a second), each failure retiring an API client."""
    recorder = EventRecorder(clock=fake_clock)
    pods = PodManager(node_name=NODE, resources=FakeResources({"cpu": 8000, "memory": 32 << 30, "pods": 110}),
                      admitters=[], cgroups=FakeCgroups(), db=StateDB.memory(), clock=fake_clock,
                      instruments=Instruments(CollectorRegistry()), recorder=recorder)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    api = _Away(store)
    sync = NodeSync(node_name=NODE, api=api, pods=pods, node_object=lambda: node, recorder=recorder,
                    clock=fake_clock, bind_unscheduled=False, interval=0.05, status_interval=10.0)
    with caplog.at_level("INFO", logger="nodeagent.nodesync"):
        for _ in range(20 * 60):  # one minute of 50 ms passes
            await sync.publish_node()
            fake_clock.advance(0.05)
        # 0.1, 0.2, ... 6.4 s, then every 10 s: 7 + 5 tries after the first, not 1200
        assert 10 <= api.reads <= 14, api.reads
        assert sum("not published" in r.getMessage() for r in caplog.records) == 1
        api.away = False
        fake_clock.advance(10)
        await sync.publish_node()
    assert store.get("Node", "", NODE)["metadata"]["name"] == NODE
    assert any("published again" in r.getMessage() for r in caplog.records)
