"""PodManager with fake ports: admission chain, lifecycle, durability, eviction, health."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.errors import NotFound, ValidationError
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import (
    BEST_EFFORT,
    BURSTABLE,
    FAILED,
    GUARANTEED,
    RUNNING,
    SUCCEEDED,
    ResourceHealth,
    ResourceStatus,
)
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import CONFIGURED, CREATED, REPLACED, UNCHANGED, PodManager
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock

from .fakes import FakeAdmitter, FakeCgroups, FakeResources, make_pod

ALLOC = {"cpu": 4000, "memory": 8 * 2**30, "ephemeral-storage": 10 * 2**30, "pods": 110}


@dataclasses.dataclass
class Rig:
    manager: PodManager
    clock: FakeClock
    admitters: list[FakeAdmitter]
    cgroups: FakeCgroups
    db: StateDB
    registry: CollectorRegistry
    recorder: EventRecorder

    def metric(self, result: str) -> float | None:
        return self.registry.get_sample_value("nodeagent_pod_admissions_total", {"result": result})


def build(
    db: StateDB,
    clock: FakeClock,
    admitters: list[FakeAdmitter] | None = None,
    cgroups: FakeCgroups | None = None,
) -> Rig:
    registry = CollectorRegistry()
    recorder = EventRecorder(clock=clock, host="node-a")
    adm = admitters if admitters is not None else [FakeAdmitter("cpu"), FakeAdmitter("devices")]
    cg = cgroups or FakeCgroups()
    manager = PodManager(
        node_name="node-a",
        resources=FakeResources(dict(ALLOC)),
        admitters=adm,
        cgroups=cg,
        db=db,
        clock=clock,
        instruments=Instruments(registry),
        recorder=recorder,
    )
    return Rig(manager, clock, adm, cg, db, registry, recorder)


@pytest.fixture
async def rig(fake_clock: FakeClock) -> AsyncIterator[Rig]:
    r = build(StateDB.memory(), fake_clock)
    yield r
    await r.manager.close()


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_admitted_pod_runs_with_qos_and_cgroup(rig: Rig) -> None:
    pod = make_pod("web", rig.clock, cpu="1", memory="1Gi", limits=True)
    stored, result = await rig.manager.apply(pod)
    assert result == CREATED and stored == dataclasses.replace(pod, node_name=stored.node_name)
    assert stored.node_name  # bound to the node
    status = rig.manager.status(pod.uid)
    assert status.phase == RUNNING and status.qos_class == GUARANTEED
    assert [cs.state for cs in status.container_statuses] == ["running"]
    assert status.container_statuses[0].started_at == rig.clock.now()
    assert rig.cgroups.pods == {pod.uid: GUARANTEED}
    assert all(a.holding == {pod.uid} for a in rig.admitters)
    assert rig.manager.active_pods() == [stored]
    assert rig.manager.get_pod("default", "web") == stored
    assert rig.metric("admitted") == 1.0
    assert rig.db.get("pods", pod.uid) is not None  # durable before apply returned
    # kuberuntime's container events, about the container (fieldPath), in the 1.35+ wording
    assert [(e.reason, e.message, e.involved.field_path) for e in rig.recorder.for_pod(pod)][:3] == [
        ("Pulled", 'Container image "nginx" already present on machine and can be accessed by the pod',
         "spec.containers{c0}"),
        ("Created", "Container created", "spec.containers{c0}"),
        ("Started", "Container started", "spec.containers{c0}"),
    ]


async def test_rejected_pod_ends_failed_and_stays_listed(rig: Rig) -> None:
    await rig.manager.apply(make_pod("a", rig.clock, cpu="3"))
    big = make_pod("b", rig.clock, cpu="2")
    _, result = await rig.manager.apply(big)
    assert result == CREATED
    status = rig.manager.status(big.uid)
    assert (status.phase, status.reason) == (FAILED, "OutOfcpu")
    assert status.message == (
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000"
    )
    assert status.qos_class == BURSTABLE and status.container_statuses == ()
    assert [v.pod.name for v in rig.manager.list()] == ["a", "b"]
    assert [p.name for p in rig.manager.active_pods()] == ["a"]
    assert [p.name for p in rig.manager.all_pods()] == ["a", "b"]
    assert big.uid not in rig.cgroups.pods
    # The kubelet's order: the resource managers allocate first, the fit check then refuses
    # and what they allocated is given back.
    assert all(a.admit_calls == ["a", "b"] and a.removed == ["b"] for a in rig.admitters)
    assert all(big.uid not in a.holding for a in rig.admitters)
    assert rig.metric("OutOfcpu") == 1.0
    warning = rig.recorder.for_pod(big)[0]
    assert (warning.type, warning.reason) == ("Warning", "OutOfcpu")
    assert warning.message.startswith("Node didn't have enough resource: cpu")


async def test_refusal_by_second_admitter_releases_the_first(fake_clock: FakeClock) -> None:
    first, second, third = FakeAdmitter("cpu"), FakeAdmitter("devices", refuse={"gpu"}), FakeAdmitter("dra")
    rig = build(StateDB.memory(), fake_clock, [first, second, third])
    pod = make_pod("gpu", fake_clock)
    await rig.manager.apply(pod)
    status = rig.manager.status(pod.uid)
    assert (status.phase, status.reason) == (FAILED, "UnexpectedAdmissionError")
    assert status.message == "Pod was rejected: devices refused gpu"
    assert first.removed == ["gpu"] and first.holding == set()
    assert third.admit_calls == []
    assert rig.cgroups.pods == {}
    assert rig.metric("UnexpectedAdmissionError") == 1.0


async def test_admitter_exception_is_a_refusal_and_releases(fake_clock: FakeClock) -> None:
    class Broken(FakeAdmitter):
        async def admit(self, pod: Any, active: Any) -> Any:
            raise RuntimeError("boom")

    first = FakeAdmitter("cpu")
    rig = build(StateDB.memory(), fake_clock, [first, Broken("x")])
    pod = make_pod("p", fake_clock)
    await rig.manager.apply(pod)
    assert (
        rig.manager.status(pod.uid).message
        == "Pod was rejected: Allocate failed due to boom, which is unexpected"
    )
    assert first.holding == set()


async def test_delete_releases_and_forgets(rig: Rig) -> None:
    pod = make_pod("web", rig.clock, cpu="1")
    await rig.manager.apply(pod)
    await rig.manager.delete("default", "web")
    assert all(a.removed == ["web"] and not a.holding for a in rig.admitters)
    assert rig.cgroups.removed == ["web"]
    assert rig.manager.list() == [] and rig.db.items("pods") == []
    with pytest.raises(NotFound, match='pods "web" not found'):
        rig.manager.get("default", "web")
    with pytest.raises(NotFound):
        await rig.manager.delete("default", "web")
    with pytest.raises(NotFound):
        rig.manager.status(pod.uid)


async def test_delete_of_rejected_pod_releases_nothing(rig: Rig) -> None:
    pod = make_pod("huge", rig.clock, cpu="100")
    await rig.manager.apply(pod)
    assert all(a.removed == ["huge"] for a in rig.admitters)  # rolled back at the refusal
    await rig.manager.delete("default", "huge")
    assert all(a.removed == ["huge"] for a in rig.admitters) and rig.cgroups.removed == []


async def test_reapply_unchanged_configured_and_forbidden(rig: Rig) -> None:
    pod = make_pod("web", rig.clock, cpu="1", labels={"a": "1"})
    await rig.manager.apply(pod)
    again = make_pod("web", rig.clock, cpu="1", labels={"a": "1"})
    stored, result = await rig.manager.apply(again)
    assert result == UNCHANGED and stored.uid == pod.uid
    relabelled = make_pod("web", rig.clock, cpu="1", labels={"a": "2"})
    stored, result = await rig.manager.apply(relabelled)
    assert result == CONFIGURED and stored.uid == pod.uid and stored.labels == {"a": "2"}
    assert rig.manager.get("default", "web").pod.labels == {"a": "2"}
    assert stored.manifest["metadata"]["uid"] == pod.uid
    new_image = make_pod("web", rig.clock, cpu="1", labels={"a": "2"}, image="nginx:2")
    stored, result = await rig.manager.apply(new_image)
    assert result == CONFIGURED and stored.containers[0].image == "nginx:2"
    with pytest.raises(ValidationError) as info:
        await rig.manager.apply(make_pod("web", rig.clock, cpu="2", labels={"a": "2"}))
    assert info.value.path == "spec"
    assert str(info.value).startswith("spec: Forbidden: pod updates may not change fields other than")
    assert rig.metric("admitted") == 1.0 and len(rig.admitters[0].admit_calls) == 1


async def test_static_pod_with_new_content_is_replaced(rig: Rig) -> None:
    old = make_pod("etcd-node-a", rig.clock, cpu="1", source="file", uid="hash1")
    await rig.manager.apply(old)
    _, result = await rig.manager.apply(
        make_pod("etcd-node-a", rig.clock, cpu="1", source="file", uid="hash1")
    )
    assert result == UNCHANGED
    new = make_pod("etcd-node-a", rig.clock, cpu="2", source="file", uid="hash2")
    stored, result = await rig.manager.apply(new)
    assert result == REPLACED and stored.uid == "hash2"
    assert rig.cgroups.removed == ["etcd-node-a"] and list(rig.cgroups.pods) == ["hash2"]
    assert [p.uid for p in rig.manager.all_pods()] == ["hash2"]


async def test_finish_after_succeeds_and_releases(rig: Rig) -> None:
    pod = make_pod("job", rig.clock, cpu="1", annotations={"nodeagent.dev/finish-after-seconds": "10"})
    await rig.manager.apply(pod)
    await settle()
    await rig.clock.wait_for_sleepers()
    rig.clock.advance(9)
    await settle()
    assert rig.manager.status(pod.uid).phase == RUNNING
    await rig.clock.wait_for_sleepers()
    rig.clock.advance(1)
    await settle()
    status = rig.manager.status(pod.uid)
    assert status.phase == SUCCEEDED
    assert [(cs.state, cs.exit_code, cs.reason) for cs in status.container_statuses] == [
        ("terminated", 0, "Completed")
    ]
    assert status.container_statuses[0].finished_at == rig.clock.now()
    assert rig.manager.active_pods() == [] and rig.cgroups.pods == {}
    assert all(a.removed == ["job"] for a in rig.admitters)
    ready = {c.type: (c.status, c.reason) for c in status.conditions}["Ready"]
    assert ready == ("False", "PodCompleted")
    # terminal pods stop counting for fit
    await rig.manager.apply(make_pod("next", rig.clock, cpu="4"))
    assert rig.manager.get("default", "next").status.phase == RUNNING


async def test_finish_with_exit_code_fails(rig: Rig) -> None:
    pod = make_pod(
        "job",
        rig.clock,
        annotations={"nodeagent.dev/finish-after-seconds": "5", "nodeagent.dev/exit-code": "3"},
    )
    await rig.manager.apply(pod)
    await settle()
    await rig.clock.wait_for_sleepers()
    rig.clock.advance(5)
    await settle()
    status = rig.manager.status(pod.uid)
    assert status.phase == FAILED and status.qos_class == BEST_EFFORT
    assert [(cs.exit_code, cs.reason) for cs in status.container_statuses] == [(3, "Error")]


async def test_delete_cancels_finish_timer(rig: Rig) -> None:
    pod = make_pod("job", rig.clock, annotations={"nodeagent.dev/finish-after-seconds": "5"})
    await rig.manager.apply(pod)
    await settle()
    await rig.manager.delete("default", "job")
    rig.clock.advance(10)
    await settle()
    assert rig.manager.list() == []
    assert all(a.removed == ["job"] for a in rig.admitters)


async def test_restore_after_restart(tmp_path: Path, fake_clock: FakeClock) -> None:
    path = tmp_path / "state.db"
    first = build(StateDB(path), fake_clock)
    running = make_pod("web", fake_clock, cpu="1", memory="1Gi", limits=True)
    job = make_pod("job", fake_clock, annotations={"nodeagent.dev/finish-after-seconds": "30"})
    rejected = make_pod("huge", fake_clock, cpu="64")
    for p in (running, job, rejected):
        await first.manager.apply(p)
    await first.manager.set_resource_health(
        running.uid, "c0", [ResourceStatus("example.com/gpu", (ResourceHealth("dev-1", "Healthy"),))]
    )
    before = first.manager.list()
    await first.manager.close()
    first.db.close()

    fake_clock.advance(10)
    admitters = [FakeAdmitter("cpu"), FakeAdmitter("devices")]
    second = build(StateDB(path), fake_clock, admitters)
    assert await second.manager.restore() == 3
    try:
        assert second.manager.list() == before
        assert all(a.admit_calls == [] for a in admitters)  # no re-admission
        assert {p.name for p in second.manager.active_pods()} == {"web", "job"}
        await settle()
        await fake_clock.wait_for_sleepers()
        fake_clock.advance(19)
        await settle()
        assert second.manager.get("default", "job").status.phase == RUNNING
        await fake_clock.wait_for_sleepers()
        fake_clock.advance(1)
        await settle()
        assert second.manager.get("default", "job").status.phase == SUCCEEDED
        assert all(a.removed == ["job"] for a in admitters)
        # what the restored manager holds still counts for fit
        await second.manager.apply(make_pod("more", fake_clock, cpu="3500m"))
        assert second.manager.get("default", "more").status.reason == "OutOfcpu"
    finally:
        await second.manager.close()
        second.db.close()


async def test_evict(rig: Rig) -> None:
    pod = make_pod("hog", rig.clock, memory="1Gi", annotations={"nodeagent.dev/finish-after-seconds": "100"})
    await rig.manager.apply(pod)
    await rig.manager.evict(pod, "Evicted", "The node was low on resource: memory.")
    status = rig.manager.status(pod.uid)
    assert (status.phase, status.reason, status.message) == (
        FAILED,
        "Evicted",
        "The node was low on resource: memory.",
    )
    assert status.conditions[0].type == "DisruptionTarget"
    assert status.conditions[0].reason == "TerminationByKubelet"
    assert [(cs.state, cs.exit_code) for cs in status.container_statuses] == [("terminated", 137)]
    assert rig.manager.active_pods() == [] and [p.name for p in rig.manager.all_pods()] == ["hog"]
    assert rig.cgroups.pods == {} and all(a.removed == ["hog"] for a in rig.admitters)
    assert any(e.reason == "Evicted" and e.type == "Warning" for e in rig.recorder.for_pod(pod))
    await rig.manager.evict(pod, "Evicted", "again")  # terminal: no-op
    assert rig.manager.status(pod.uid).message == "The node was low on resource: memory."
    rig.clock.advance(200)
    await settle()
    assert rig.manager.status(pod.uid).reason == "Evicted"  # the finish timer was cancelled


async def test_resource_health_updates_status_without_events(rig: Rig) -> None:
    pod = make_pod("gpu", rig.clock)
    await rig.manager.apply(pod)
    healthy = [ResourceStatus("example.com/gpu", (ResourceHealth("dev-1", "Healthy"),))]
    assert await rig.manager.set_resource_health(pod.uid, "c0", healthy)
    assert not await rig.manager.set_resource_health(pod.uid, "c0", healthy)
    sick = [ResourceStatus("example.com/gpu", (ResourceHealth("dev-1", "Unhealthy"),))]
    assert await rig.manager.set_resource_health(pod.uid, "c0", sick)
    cs = rig.manager.status(pod.uid).container_statuses[0]
    assert cs.allocated_resources_status == tuple(sick)
    # the kubelet's device and DRA managers post no event for a health change (upstream: the
    # ResourceHealthChanged/ResourceUnhealthy events nodeagent posted are gone)
    assert not [e for e in rig.recorder.for_pod(pod) if e.reason.startswith("Resource")]
    claim = [ResourceStatus("claim:c/r", (ResourceHealth("drv/pool/dev", "Unknown"),))]
    assert await rig.manager.set_resource_health(pod.uid, "c0", claim)
    names = [rs.name for rs in rig.manager.status(pod.uid).container_statuses[0].allocated_resources_status]
    assert names == ["example.com/gpu", "claim:c/r"]
    assert await rig.manager.set_resource_health(pod.uid, "c0", claim, replace=True)
    names = [rs.name for rs in rig.manager.status(pod.uid).container_statuses[0].allocated_resources_status]
    assert names == ["claim:c/r"]
    assert not await rig.manager.set_resource_health("nope", "c0", claim)
    assert not await rig.manager.set_resource_health(pod.uid, "nope", sick)


async def test_out_of_pods(fake_clock: FakeClock) -> None:
    rig = build(StateDB.memory(), fake_clock)
    rig.manager._resources = FakeResources({**ALLOC, "pods": 1})
    await rig.manager.apply(make_pod("a", fake_clock))
    await rig.manager.apply(make_pod("b", fake_clock))
    status = rig.manager.get("default", "b").status
    assert status.reason == "OutOfpods"
    assert (
        status.message
        == "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"
    )


async def test_run_stops_timers_on_cancel(rig: Rig) -> None:
    task = asyncio.create_task(rig.manager.run())
    await rig.manager.apply(
        make_pod("job", rig.clock, annotations={"nodeagent.dev/finish-after-seconds": "5"})
    )
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    rig.clock.advance(10)
    await settle()
    assert rig.manager.get("default", "job").status.phase == RUNNING


async def test_on_resource_health_merges(rig: Rig) -> None:
    pod = make_pod("gpu", rig.clock)
    await rig.manager.apply(pod)
    a = ResourceStatus("example.com/gpu", (ResourceHealth("dev-1", "Healthy"),))
    b = ResourceStatus("claim:c", (ResourceHealth("d/p/x", "Healthy"),))
    await rig.manager.on_resource_health(pod.uid, "c0", (a,))
    await rig.manager.on_resource_health(pod.uid, "c0", (b,))
    assert rig.manager.status(pod.uid).container_statuses[0].allocated_resources_status == (a, b)
