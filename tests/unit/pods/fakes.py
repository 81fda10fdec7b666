"""Fakes of the pod manager's ports for the pods unit tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.objects.pod.model import Pod
from nodeagent.pods.ports import ADMITTED, AdmitResult, NodeResources
from nodeagent.util.clock import Clock


class FakeResources:
    def __init__(self, allocatable: dict[str, int]) -> None:
        self.allocatable = allocatable

    def node_resources(self) -> NodeResources:
        return NodeResources(capacity=dict(self.allocatable), allocatable=dict(self.allocatable))


class FakeAdmitter:
    def __init__(self, name: str, refuse: set[str] | None = None) -> None:
        self.name = name
        self.refuse = refuse or set()
        self.holding: set[str] = set()
        self.admit_calls: list[str] = []
        self.removed: list[str] = []

    async def admit(self, pod: Pod, active: Sequence[Pod]) -> AdmitResult:
        self.admit_calls.append(pod.name)
        if pod.name in self.refuse:
            return AdmitResult(False, "UnexpectedAdmissionError", f"{self.name} refused {pod.name}")
        self.holding.add(pod.uid)
        return ADMITTED

    async def remove(self, pod: Pod) -> None:
        self.removed.append(pod.name)
        self.holding.discard(pod.uid)


class FakeCgroups:
    def __init__(self) -> None:
        self.pods: dict[str, str] = {}
        self.removed: list[str] = []

    def create_pod_cgroup(self, pod: Pod, qos_class: str) -> None:
        self.pods[pod.uid] = qos_class

    def remove_pod_cgroup(self, pod: Pod, qos_class: str) -> None:
        # Idempotent like the real drivers: a restarted daemon's fake knows no cgroups.
        assert self.pods.pop(pod.uid, qos_class) == qos_class
        self.removed.append(pod.name)


def make_pod(
    name: str,
    clock: Clock,
    *,
    cpu: str | None = None,
    memory: str | None = None,
    limits: bool = False,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    image: str = "nginx",
    source: str = "api",
    uid: str | None = None,
    containers: int = 1,
) -> Pod:
    res: dict[str, Any] = {}
    if cpu:
        res["cpu"] = cpu
    if memory:
        res["memory"] = memory
    resources = {"requests": res, "limits": res} if limits else {"requests": res}
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}, "labels": labels or {}},
        "spec": {
            "containers": [
                {"name": f"c{i}", "image": image, "resources": resources if i == 0 else {}}
                for i in range(containers)
            ]
        },
    }
    return pod_from_manifest(doc, clock=clock, source=source, uid=uid)
