"""Pod status transitions the kubelet defines: where allocatedResourcesStatus goes, and the
status of a pod its node kills because it was deleted with a grace period."""

from __future__ import annotations

from nodeagent.objects.pod.model import ClaimRef, Container, ContainerStatus, Pod, ResourceHealth, ResourceStatus
from nodeagent.pods import status as st

CLAIM = (ResourceStatus("claim:gpu", (ResourceHealth("gpu.example.com/gpu=d0", "Healthy"),)),)


def _pod() -> Pod:
    return Pod("u", "p", init_containers=(Container("setup", claims=(ClaimRef("gpu"),)),
                                         Container("side", restart_policy="Always", claims=(ClaimRef("gpu"),))),
               containers=(Container("main", claims=(ClaimRef("gpu"),)),))


def test_allocated_resources_status_only_on_regular_containers() -> None:
    """UpdateAllocatedResourcesStatus (device and DRA managers) fills containerStatuses only."""
    status = st.running_status(_pod(), "BestEffort", 1.0, {"setup": CLAIM, "side": CLAIM, "main": CLAIM})
    assert {cs.name: cs.allocated_resources_status for cs in status.init_container_statuses} == {
        "setup": (), "side": ()}
    assert status.container_statuses[0].allocated_resources_status == CLAIM
    assert st.with_resource_status(status, "side", CLAIM, replace=False) == status


def test_killed_running_pod_succeeds_and_a_pending_one_fails() -> None:
    pod = _pod()
    killed = st.killed_status(pod, st.running_status(pod, "BestEffort", 1.0), 5.0)
    assert killed.phase == "Succeeded"
    assert [(cs.state, cs.exit_code, cs.reason) for cs in killed.container_statuses] == [
        ("terminated", 0, "Completed")]
    assert {c.type: (c.status, c.reason) for c in killed.conditions}["Ready"] == ("False", "PodCompleted")
    pending = st.pending_status(Pod("v", "q", containers=(Container("main"),)), "BestEffort", "waiting", 1.0)
    failed = st.killed_status(Pod("v", "q", containers=(Container("main"),)), pending, 5.0)
    assert failed.phase == "Failed"
    assert failed.container_statuses == (ContainerStatus("main", state="terminated", reason="ContainerStatusUnknown",
                                                          exit_code=137, finished_at=5.0),)
    assert st.killed_status(pod, killed, 9.0) is killed  # terminal already: unchanged
