"""The control plane's driver loop after a component's work() fails: it logs, waits a second on
the clock, and relists from the store, so state the failed round left only in the component's
cache (a scheduling round whose writes did not commit) is replaced by what the store holds."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.config import parse_documents
from nodeagent.controlplane.loop import ControlPlane
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.waiting import eventually


class _FailsOnce:
    """The scheduler component, whose first round leaves a pod bound in the cache only and fails."""

    def __init__(self, inner: Any, cp: ControlPlane) -> None:
        self.inner, self.cp = inner, cp
        self.loads = 0
        self.failed = False

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        self.loads += 1
        self.inner.load(objs)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        self.inner.handle(event_type, obj)

    def work(self, limit: int) -> int:
        if not self.failed and self.cp.scheduler.queue.counts().get("active"):
            self.failed = True
            pod = copy.deepcopy(dict(self.cp.store.get("Pod", "default", "p")))
            pod["spec"]["nodeName"] = "node-0"
            pod["metadata"]["resourceVersion"] = str(int(pod["metadata"]["resourceVersion"]) + 1000)
            self.cp.scheduler.cache.apply("MODIFIED", pod)  # "bound", as an uncommitted round would leave it
            raise RuntimeError("injected: the round's commit failed")
        return int(self.inner.work(limit))

    def deadline(self) -> float | None:
        return self.inner.deadline()  # type: ignore[no-any-return]

    def idle(self) -> bool:
        return bool(self.inner.idle())


async def test_a_failing_round_is_followed_by_a_relist(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
    cfg = parse_documents([
        {"kind": "KubeletConfiguration"},
        {"kind": "NodeAgentConfiguration", "nodeName": "local",
         "virtualNodes": [{"name": "node-{index}", "count": 1,
                           "capacity": {"cpu": "2", "memory": "8Gi", "pods": "10"}}]},
    ])
    cp = ControlPlane(cfg, store, clock, CollectorRegistry())
    index = next(i for i, (name, _, _) in enumerate(cp._components) if name == "scheduler")
    name, kinds, inner = cp._components[index]
    flaky = _FailsOnce(inner, cp)
    cp._components[index] = (name, kinds, flaky)
    await cp.start()
    try:
        assert flaky.loads == 1
        store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                      "spec": {"containers": [{"name": "c", "image": "pause"}]}})
        await eventually(lambda: flaky.failed, what="the failing round")
        await clock.wait_for_sleepers(1)  # the loop waits before it relists
        assert "control plane component failed component=scheduler" in caplog.text
        assert not store.get("Pod", "default", "p")["spec"].get("nodeName")  # nothing was written
        assert flaky.loads == 1  # waits a second before it relists
        clock.advance(1.0)
        await eventually(lambda: store.get("Pod", "default", "p")["spec"].get("nodeName"), what="the pod bound")
        assert flaky.loads == 2
        assert store.get("Pod", "default", "p")["spec"]["nodeName"] == "node-0"
    finally:
        await cp.stop()
        store.close()
