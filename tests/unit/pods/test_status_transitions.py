"""Pod status transitions the kubelet defines: where allocatedResourcesStatus goes, and the
status of a pod its node kills because it was deleted with a grace period."""

from __future__ import annotations

from nodeagent.objects.pod.model import (
    ClaimRef,
    Container,
    ContainerStatus,
    Pod,
    PodStatus,
    ResourceHealth,
    ResourceStatus,
)
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


def _conditions(status: PodStatus) -> dict[str, tuple[str, str, str]]:
    return {c.type: (c.status, c.reason, c.message) for c in status.conditions}


def test_terminal_pod_conditions_as_generate_go_writes_them() -> None:
    """A failed pod's Ready and ContainersReady say PodFailed without a message
    (generateContainersReadyConditionForTerminalPhase); its sandbox is stopped."""
    pod = Pod("u", "p", containers=(Container("main"),))
    failed = st.finished_status(st.running_status(pod, "BestEffort", 1.0), 3, 2.0)
    assert _conditions(failed) == {
        "PodReadyToStartContainers": ("False", "PodSandboxNotReady", "pod sandbox is not ready"),
        "Initialized": ("True", "", ""),
        "Ready": ("False", "PodFailed", ""),
        "ContainersReady": ("False", "PodFailed", ""),
        "PodScheduled": ("True", "", ""),
    }
    done = st.finished_status(st.running_status(pod, "BestEffort", 1.0), 0, 2.0)
    assert _conditions(done)["Ready"] == ("False", "PodCompleted", "")
    assert _conditions(done)["Initialized"] == ("True", "PodCompleted", "")


def test_rejected_pod_has_no_condition() -> None:
    """rejectPod's status has no condition, and the pod never reaches generateAPIPodStatus:
    a pod bound by spec.nodeName and rejected shows no PodScheduled."""
    status = st.rejected_status("BestEffort", "OutOfcpu", "Node didn't have enough resource: cpu", 1.0)
    assert (status.phase, status.reason, status.conditions) == ("Failed", "OutOfcpu", ())


def test_pending_pod_has_no_sandbox_and_lists_sidecars_unready() -> None:
    """Claims are prepared before the sandbox is created: 'no pod sandbox exists'; restartable init
    containers come first in the unready list (GenerateContainersReadyCondition)."""
    pending = st.pending_status(_pod(), "BestEffort", "", 1.0)
    assert (pending.phase, pending.message) == ("Pending", "")
    assert _conditions(pending)["PodReadyToStartContainers"] == (
        "False", "PodSandboxNotReady", "no pod sandbox exists")
    assert _conditions(pending)["Ready"] == (
        "False", "ContainersNotReady", "containers with unready status: [side main]")
    assert _conditions(pending)["Initialized"] == (
        "False", "ContainersNotInitialized", "containers with incomplete status: [setup side]")
