"""The kubelet's admission order through the pod manager: the eviction manager's handler first
(nothing allocated), then the resource managers, then the general predicates (what the resource
managers allocated is given back on a predicate refusal)."""

from __future__ import annotations

import dataclasses
from typing import Any

from prometheus_client import CollectorRegistry

from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import FAILED, RUNNING, Pod
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.pods.ports import NodeResources
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock

from .fakes import FakeAdmitter, FakeCgroups, make_pod

ALLOC = {"cpu": 4000, "memory": 8 * 2**30, "pods": 110}


class Node:
    def __init__(self) -> None:
        self.conditions: tuple[str, ...] = ()

    def node_resources(self) -> NodeResources:
        return NodeResources(capacity=ALLOC, allocatable=ALLOC, labels={"zone": "z1"}, conditions=self.conditions)


def build(clock: FakeClock, node: Node, admitters: list[FakeAdmitter]) -> PodManager:
    return PodManager(node_name="node-a", resources=node, admitters=admitters, cgroups=FakeCgroups(),
                      db=StateDB.memory(), clock=clock, instruments=Instruments(CollectorRegistry()),
                      recorder=EventRecorder(clock=clock, host="node-a"))


def with_spec(pod: Pod, **spec: object) -> Pod:
    manifest: dict[str, Any] = dict(pod.manifest)
    manifest["spec"] = {**dict(manifest["spec"]), **spec}
    return dataclasses.replace(pod, manifest=manifest)


async def test_memory_pressure_refuses_best_effort_before_the_managers(fake_clock: FakeClock) -> None:
    node, cpu = Node(), FakeAdmitter("cpu")
    manager = build(fake_clock, node, [cpu])
    node.conditions = ("MemoryPressure",)
    await manager.apply(make_pod("be", fake_clock))
    await manager.apply(make_pod("bu", fake_clock, cpu="1"))
    be = manager.get("default", "be").status
    assert (be.phase, be.reason, be.message) == (FAILED, "Evicted",
                                                 "Pod was rejected: The node had condition: [MemoryPressure]. ")
    assert cpu.admit_calls == ["bu"]  # the eviction handler refused first: nothing allocated
    assert manager.get("default", "bu").status.phase == RUNNING
    await manager.close()


async def test_predicate_refusal_after_the_managers_rolls_back(fake_clock: FakeClock) -> None:
    node, cpu, devices = Node(), FakeAdmitter("cpu"), FakeAdmitter("devices")
    manager = build(fake_clock, node, [cpu, devices])
    ports = [{"name": "c0", "image": "nginx", "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    await manager.apply(with_spec(make_pod("first", fake_clock), containers=ports))
    await manager.apply(with_spec(make_pod("second", fake_clock), containers=ports))
    await manager.apply(with_spec(make_pod("elsewhere", fake_clock), nodeSelector={"zone": "z2"}))
    second = manager.get("default", "second").status
    assert (second.reason, second.message) == (
        "NodePorts", "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the "
        "requested pod ports")
    assert manager.get("default", "elsewhere").status.reason == "NodeAffinity"
    for a in (cpu, devices):
        assert a.admit_calls == ["first", "second", "elsewhere"]
        assert a.removed == ["second", "elsewhere"]
    assert {p.name for p in manager.active_pods()} == {"first"}
    await manager.close()
