"""The pod manager's pre-start hook with a scripted starter: backoff, poke, restore, release order."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import PENDING, RUNNING, Pod, PodStatus, ResourceHealth, ResourceStatus
from nodeagent.pods import records
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.pods.ports import StartResult
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock
from tests.unit.pods.fakes import FakeCgroups, FakeResources, make_pod

from .fakes import ALLOC, settle


class ScriptedStarter:
    def __init__(self) -> None:
        self.ready = False
        self.calls: list[float] = []
        self.unprepared: list[str] = []
        self.forgotten: list[str] = []
        self.clock: FakeClock | None = None

    async def prepare(self, pod: Pod) -> StartResult:
        assert self.clock is not None
        self.calls.append(self.clock.monotonic())
        if not self.ready:
            return StartResult(False, "NotYet", f"not yet ({len(self.calls)})")
        rs = ResourceStatus("claim:x/r", (ResourceHealth("d/p/x", "Healthy"),))
        return StartResult(True, container_resource_status={"c0": (rs,)}, pod_resource_status=(rs,))

    def prepare_now(self, pod: Pod) -> StartResult | None:
        return None  # always through the worker's pass: these tests script its answers

    async def unprepare(self, pod: Pod) -> None:
        self.unprepared.append(pod.name)

    def forget(self, pod: Pod) -> None:
        self.forgotten.append(pod.name)


def manager(clock: FakeClock, db: StateDB, starter: ScriptedStarter) -> PodManager:
    starter.clock = clock
    return PodManager(node_name="node-a", resources=FakeResources(dict(ALLOC)), admitters=[],
                      cgroups=FakeCgroups(), db=db, clock=clock, instruments=Instruments(CollectorRegistry()),
                      recorder=EventRecorder(clock=clock), starters=[starter])


async def test_backoff_doubles_to_cap_and_poke_starts(fake_clock: FakeClock) -> None:
    starter = ScriptedStarter()
    pods = manager(fake_clock, StateDB.memory(), starter)
    pod = make_pod("p", fake_clock)
    await pods.apply(pod)
    for _ in range(80):
        await settle(5)
        await fake_clock.wait_for_sleepers()
        fake_clock.advance(1.0)
    await settle(5)
    gaps = [b - a for a, b in zip(starter.calls, starter.calls[1:], strict=False)]
    assert gaps[:6] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    view = pods.get("default", "p")
    assert view.status.phase == PENDING and view.status.message.startswith("not yet")
    assert pods.pending_uids() == (pod.uid,)
    starter.ready = True
    await pods.retry_pending()
    status = pods.status(pod.uid)
    assert status.phase == RUNNING and status.message == ""
    assert status.container_statuses[0].allocated_resources_status[0].name == "claim:x/r"
    assert status.allocated_resources_status[0].name == "claim:x/r"
    calls = len(starter.calls)
    fake_clock.advance(60.0)
    await settle()
    assert len(starter.calls) == calls  # no retries once running
    await pods.delete("default", "p")
    assert starter.unprepared == ["p"] and starter.forgotten == ["p"]
    await pods.close()


async def test_pending_pod_restored_and_retried(fake_clock: FakeClock) -> None:
    db = StateDB.memory()
    starter = ScriptedStarter()
    pods = manager(fake_clock, db, starter)
    await pods.apply(make_pod("p", fake_clock))
    await pods.close()
    again = ScriptedStarter()
    again.ready = True
    restored = manager(fake_clock, db, again)
    await restored.restore()
    await settle()
    assert restored.get("default", "p").status.phase == RUNNING
    assert len(again.calls) == 1
    await restored.close()


async def test_evicting_pending_pod_stops_retries(fake_clock: FakeClock) -> None:
    starter = ScriptedStarter()
    pods = manager(fake_clock, StateDB.memory(), starter)
    pod = make_pod("p", fake_clock)
    await pods.apply(pod)
    await pods.evict(pod, "Evicted", "low memory")
    calls = len(starter.calls)
    fake_clock.advance(5.0)
    await settle()
    assert len(starter.calls) == calls and starter.unprepared == ["p"]
    await pods.close()


def test_pod_level_status_record_round_trip() -> None:
    status = PodStatus(allocated_resources_status=(ResourceStatus("claim:a/b", (ResourceHealth("x", "Healthy"),)),))
    assert records.status_from_record(records.status_to_record(status)) == status
    old = records.status_to_record(PodStatus())
    del old["allocatedResourcesStatus"]  # a record written before the field existed
    assert records.status_from_record(old) == PodStatus()
