"""A container whose start fails with the pod's sandbox up (a device plugin's PreStartContainer), as the
kubelet shows it: kuberuntime's startContainer fails with CreateContainerConfigError, the reasonCache puts
it on the container (waiting, the error as its message; no pod message), the Warning "Failed" "Error: ..."
is recorded about the container after the image manager's Pulled, and the next attempt starts the pod.
Before, nodeagent showed the pod ContainerCreating with the error as the pod's message and a Warning
about the pod."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import PENDING, RUNNING, Container, Pod, ResourceHealth, ResourceStatus
from nodeagent.objects.pod.output import status_to_json
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.pods.ports import StartResult
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock
from tests.unit.pods.fakes import FakeCgroups, FakeResources

ALLOC = {"cpu": 16_000, "memory": 64 << 30, "pods": 110}
HEALTHY = ResourceStatus("example.com/gpu", (ResourceHealth("gpu-0", "Healthy"),))
ERROR = "device plugin PreStartContainer rpc failed with err: rpc error: code = Internal desc = not ready"


class FailingStarter:
    """Fails the init container's start until `fail` is cleared (DeviceAdmitter's answer)."""

    def __init__(self) -> None:
        self.fail = True
        self.attempts = 0

    def prepare_now(self, pod: Pod) -> StartResult | None:
        return None

    async def prepare(self, pod: Pod) -> StartResult:
        self.attempts += 1
        if self.fail:
            return StartResult(False, reason="Failed", message=ERROR,
                               failed_containers={"init": ("CreateContainerConfigError", ERROR)},
                               container_resource_status={"main": (HEALTHY,)})
        return StartResult(True)

    async def unprepare(self, pod: Pod) -> None:
        return None

    def forget(self, pod: Pod) -> None:
        return None


def _manager(db: StateDB, clock: FakeClock, recorder: EventRecorder, starter: FailingStarter | None) -> PodManager:
    return PodManager(node_name="node-a", resources=FakeResources(dict(ALLOC)), admitters=[], cgroups=FakeCgroups(),
                      db=db, clock=clock, instruments=Instruments(CollectorRegistry()), recorder=recorder,
                      starters=[starter] if starter else [])


async def test_init_container_start_fails_then_starts(tmp_path: Path, fake_clock: FakeClock) -> None:
    db = StateDB(tmp_path / "state.db")
    recorder = EventRecorder(clock=fake_clock)
    starter = FailingStarter()
    pods = _manager(db, fake_clock, recorder, starter)
    pod = Pod(uid="u1", name="p", namespace="ns", node_name="node-a",
              init_containers=(Container("init", image="pause"),), containers=(Container("main", image="pause"),))
    try:
        await pods.apply(pod)
        status = pods.status(pod.uid)
        assert status.phase == PENDING and status.message == ""
        doc = status_to_json(pod, status)
        assert doc["initContainerStatuses"][0]["state"] == {
            "waiting": {"reason": "CreateContainerConfigError", "message": ERROR}}
        assert doc["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
        # the devices the waiting container holds, with their health (the kubelet tier: as the kubelet shows)
        assert doc["containerStatuses"][0]["allocatedResourcesStatus"] == [
            {"name": "example.com/gpu", "resources": [{"resourceID": "gpu-0", "health": "Healthy"}]}]
        conditions = {c["type"]: (c["status"], c.get("reason", ""), c.get("message", "")) for c in doc["conditions"]}
        assert conditions == {
            "PodReadyToStartContainers": ("True", "", ""),  # the sandbox is up
            "Initialized": ("False", "ContainersNotInitialized", "containers with incomplete status: [init]"),
            "Ready": ("False", "ContainersNotReady", "containers with unready status: [main]"),
            "ContainersReady": ("False", "ContainersNotReady", "containers with unready status: [main]"),
            "PodScheduled": ("True", "", ""),
        }
        events = [(e.involved.field_path, e.type, e.reason, e.message) for e in recorder.for_pod(pod)]
        assert events == [
            ("spec.initContainers{init}", "Normal", "Pulled",
             'Container image "pause" already present on machine and can be accessed by the pod'),
            ("spec.initContainers{init}", "Warning", "Failed", f"Error: {ERROR}"),
        ]
        # what a restarted node reads back is the same waiting container
        again = _manager(db, fake_clock, EventRecorder(clock=fake_clock), None)
        assert await again.restore() == 1
        assert again.status(pod.uid).init_container_statuses == status.init_container_statuses
        await again.close()
        await pods.retry_pending()
        assert starter.attempts == 2
        assert [e.count for e in recorder.for_pod(pod) if e.reason == "Failed"] == [2]  # recorded at each attempt
        starter.fail = False
        await pods.retry_pending()
        assert pods.status(pod.uid).phase == RUNNING
    finally:
        await pods.close()
