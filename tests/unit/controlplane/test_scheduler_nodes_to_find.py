"""How many nodes a scheduling pass looks for, and the shape index that answers a pass from the
equivalence cache:

- upstream's numFeasibleNodesToFind (TestNumFeasibleNodesToFind in schedule_one_test.go): every
  node below 100, else percentageOfNodesToScore of them (adaptive 50% - nodes/125, at least 5%),
  at least 100;
- a pass of a cached shape (bitmask counting and a range minimum) finds the nodes, in the order,
  and the best node that evaluating every node in turn finds, while nodes fill up and empty.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from nodeagent.config import parse_documents
from nodeagent.controlplane.scheduler.core import Scheduler, SchedulerOptions
from nodeagent.controlplane.scheduler.nodepass import NodePass, PodShape
from nodeagent.controlplane.scheduler.placement import NONE
from nodeagent.controlplane.scheduler.shapeindex import INF, MinTree
from nodeagent.errors import ConfigError
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock


@pytest.mark.parametrize(
    ("nodes", "percentage", "want"),
    [
        (10, 0, 10),  # not set, fewer nodes than minFeasibleNodesToFind
        (10, 40, 10),  # set, fewer nodes than minFeasibleNodesToFind
        (1000, 0, 420),  # adaptive: 50 - 1000/125 = 42%
        (1000, 40, 400),
        (1000, 20, 200),
        (6000, 0, 300),  # adaptive floor of 5%
        (6000, 40, 2400),
        (150, 10, 100),  # never below minFeasibleNodesToFind
        (500, 100, 500),
    ],
)
def test_num_feasible_nodes_to_find(fake_clock: FakeClock, nodes: int, percentage: int, want: int) -> None:
    store = ObjectStore.memory(admitted_kinds({}), fake_clock)
    try:
        sched = Scheduler(store, fake_clock, options=SchedulerOptions(percentage_of_nodes_to_score=percentage))
        assert sched.nodes.limit(nodes) == want
    finally:
        store.close()


def test_min_tree_answers_range_minimums() -> None:
    rnd = random.Random(7)
    tree = MinTree(13)
    values: list[tuple[object, ...]] = [INF] * 13
    for _ in range(300):
        i = rnd.randrange(13)
        values[i] = INF if rnd.random() < 0.3 else (rnd.randrange(5), f"n{i:02d}")
        tree.set(i, values[i])
        lo = rnd.randrange(13)
        hi = rnd.randrange(lo, 14)
        assert tree.min(lo, hi) == min(values[lo:hi], default=INF)


def _node(i: int) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:02d}", "resourceVersion": str(i + 1)},
            "status": {"allocatable": {"cpu": str(1 + i % 4), "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, node: str, cpu: str, rv: int) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": name, "resourceVersion": str(rv)},
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]}}


def _summary(nodes: NodePass, shape: PodShape, indexed: bool) -> tuple[object, ...]:
    found = nodes.run(shape) if indexed else nodes._run_each(shape)
    best = found.best.name if found.best is not None else None
    reasons = sorted(found.reasons.items()) if best is None else None  # a failure names every node
    return best, [c.name for c in found.feasible], found.count, reasons, nodes._next_start


@pytest.mark.parametrize(("minimum", "percentage"), [(4, 0), (4, 10), (100, 0), (1, 50)])
def test_a_pass_from_the_shape_index_matches_evaluating_each_node(
    fake_clock: FakeClock, minimum: int, percentage: int
) -> None:
    store = ObjectStore.memory(admitted_kinds({}), fake_clock)
    rnd = random.Random(minimum * 100 + percentage)
    try:
        options = SchedulerOptions(nodes_to_score=minimum, percentage_of_nodes_to_score=percentage)
        sched = Scheduler(store, fake_clock, options=options)
        sched.load([_node(i) for i in range(37)])
        shapes = [PodShape(requests={"cpu": cpu}, place=NONE, allocated=(), models=(), sig=("s",))
                   for cpu in (500, 1500)]
        bound: dict[str, str] = {}
        rv = 100
        for step in range(250):
            shape = shapes[step % 2]
            start = sched.nodes._next_start
            want = _summary(sched.nodes, shape, indexed=False)
            sched.nodes._next_start = start
            assert _summary(sched.nodes, shape, indexed=True) == want, step
            rv += 1
            if bound and rnd.random() < 0.35:  # a pod goes: its node has room again
                name = rnd.choice(sorted(bound))
                sched.cache.apply("DELETED", _pod(name, bound.pop(name), "1", rv))
            else:
                name, node = f"p{step}", f"n{rnd.randrange(37):02d}"
                bound[name] = node
                sched.cache.apply("ADDED", _pod(name, node, rnd.choice(["250m", "500m", "1"]), rv))
    finally:
        store.close()


def _config(cp: dict[str, object]) -> Any:
    return parse_documents([{"kind": "KubeletConfiguration"},
                            {"kind": "NodeAgentConfiguration", "nodeName": "local", "controlPlane": cp}])


def test_percentage_of_nodes_to_score_is_configured_and_checked() -> None:
    cp = _config({"percentageOfNodesToScore": 30}).agent.control_plane
    assert (cp.percentage_of_nodes_to_score, cp.nodes_to_score) == (30, 100)
    assert _config({}).agent.control_plane.percentage_of_nodes_to_score == 0
    with pytest.raises(ConfigError, match=r"controlPlane.percentageOfNodesToScore: Invalid value: 101: "
                                          r"not in valid range \[0-100\]"):
        _config({"percentageOfNodesToScore": 101})
