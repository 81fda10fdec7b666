"""Pod status transitions on a fake node: admitted (Running), rejected, finished, evicted.

Pure functions from (pod, previous status, time) to the next PodStatus, with the
conditions and container states the kubelet would report (generateAPIPodStatus and
rejectPod). No containers run here: an admitted pod's containers are `running` at once,
init containers that are not sidecars show as completed. No I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from nodeagent.objects.pod.model import (
    FAILED,
    PENDING,
    RUNNING,
    SUCCEEDED,
    Condition,
    ContainerStatus,
    Pod,
    PodStatus,
    ResourceStatus,
)

POD_SCHEDULED = "PodScheduled"
INITIALIZED = "Initialized"
READY = "Ready"
CONTAINERS_READY = "ContainersReady"
POD_READY_TO_START = "PodReadyToStartContainers"
DISRUPTION_TARGET = "DisruptionTarget"

EXIT_CODE_KILLED = 137  # 128 + SIGKILL, what a runtime reports for a killed container

# status/generate.go's reasons for a terminal pod, and kubetypes' PodSandboxNotReady with the messages
# of runtimeutil.PodSandboxChanged: no sandbox yet (a pod waiting for its DRA claims: the kubelet
# prepares them before it creates the sandbox), or a stopped one (a pod that finished or was killed)
POD_FAILED = "PodFailed"
POD_COMPLETED = "PodCompleted"
SANDBOX_NOT_READY = "PodSandboxNotReady"
NO_SANDBOX = "no pod sandbox exists"
SANDBOX_STOPPED = "pod sandbox is not ready"


def _cond(type_: str, ok: bool, now: float, reason: str = "", message: str = "") -> Condition:
    return Condition(type_, "True" if ok else "False", reason, message, now)


def running_status(pod: Pod, qos_class: str, now: float,
                   resources: Mapping[str, Sequence[ResourceStatus]] | None = None) -> PodStatus:
    """An admitted pod: sandbox ready, init containers done, containers running; `resources`:
    each container's initial allocatedResourcesStatus (merged by name as with_resource_status)."""
    given = resources or {}

    def held(name: str) -> tuple[ResourceStatus, ...]:
        statuses = given.get(name)
        return () if statuses is None else merge_resource_status((), statuses, replace=False)

    # The kubelet's device and DRA managers fill allocatedResourcesStatus of containerStatuses
    # only (UpdateAllocatedResourcesStatus): init containers, sidecars too, get none.
    init = tuple(
        ContainerStatus(c.name, state="running", started_at=now)
        if c.is_sidecar
        else ContainerStatus(c.name, state="terminated", reason="Completed", exit_code=0,
                             started_at=now, finished_at=now)
        for c in pod.init_containers
    )
    containers = tuple(ContainerStatus(c.name, state="running", started_at=now,
                                       allocated_resources_status=held(c.name)) for c in pod.containers)
    conditions = (
        _cond(POD_READY_TO_START, True, now),
        _cond(INITIALIZED, True, now),
        _cond(READY, True, now),
        _cond(CONTAINERS_READY, True, now),
        _cond(POD_SCHEDULED, True, now),
    )
    return PodStatus(
        phase=RUNNING,
        qos_class=qos_class,
        start_time=now,
        conditions=conditions,
        container_statuses=containers,
        init_container_statuses=init,
    )


def rejected_status(qos_class: str, reason: str, message: str, now: float) -> PodStatus:
    """The kubelet's rejectPod: Failed with the admission reason; no container ever started. No
    condition either: rejectPod's status has none and the pod never reaches generateAPIPodStatus, so
    a pod bound by spec.nodeName shows no PodScheduled (a scheduled one keeps the scheduler's)."""
    return PodStatus(
        phase=FAILED,
        reason=reason,
        message="Pod was rejected: " + message,
        qos_class=qos_class,
        start_time=now,
    )


def _terminate(statuses: Sequence[ContainerStatus], exit_code: int, reason: str, now: float
               ) -> tuple[ContainerStatus, ...]:
    out = []
    for cs in statuses:
        if cs.state == "terminated":
            out.append(cs)
        else:
            out.append(dataclasses.replace(cs, state="terminated", exit_code=exit_code, reason=reason,
                                           finished_at=now))
    return tuple(out)


def _stopped_conditions(phase: str, now: float, extra: Sequence[Condition] = ()) -> tuple[Condition, ...]:
    """A terminal pod's conditions (generate.go's ...ForTerminalPhase): Ready and ContainersReady
    False with PodFailed or PodCompleted and no message; its sandbox stopped."""
    reason = POD_COMPLETED if phase == SUCCEEDED else POD_FAILED
    return (
        *extra,
        _cond(POD_READY_TO_START, False, now, SANDBOX_NOT_READY, SANDBOX_STOPPED),
        _cond(INITIALIZED, True, now, POD_COMPLETED if phase == SUCCEEDED else ""),
        _cond(READY, False, now, reason),
        _cond(CONTAINERS_READY, False, now, reason),
        _cond(POD_SCHEDULED, True, now),
    )


def finished_status(status: PodStatus, exit_code: int, now: float) -> PodStatus:
    """Every container exited with `exit_code`: Succeeded for 0, else Failed (containers: Error)."""
    phase = SUCCEEDED if exit_code == 0 else FAILED
    reason = "Completed" if exit_code == 0 else "Error"
    return dataclasses.replace(
        status,
        phase=phase,
        conditions=_stopped_conditions(phase, now),
        container_statuses=_terminate(status.container_statuses, exit_code, reason, now),
        init_container_statuses=_terminate(status.init_container_statuses, exit_code, reason, now),
    )


STATUS_UNKNOWN = "ContainerStatusUnknown"  # kubecontainer.ContainerReasonStatusUnknown


def _stop(statuses: Sequence[ContainerStatus], now: float, *, unknown_waiting: bool
          ) -> tuple[ContainerStatus, ...]:
    """Containers stopped by the kubelet: a running one exits on SIGTERM (exit 0, Completed, as
    the pause container and any process that handles SIGTERM); a waiting one that never started
    is a failure when `unknown_waiting` (TerminatePod: ContainerStatusUnknown, exit 137), else
    stays waiting (init containers with no evidence of a start)."""
    out = []
    for cs in statuses:
        if cs.state == "running":
            cs = dataclasses.replace(cs, state="terminated", exit_code=0, reason="Completed", finished_at=now)
        elif cs.state == "waiting" and unknown_waiting:
            cs = dataclasses.replace(cs, state="terminated", exit_code=EXIT_CODE_KILLED, reason=STATUS_UNKNOWN,
                                     finished_at=now)
        out.append(cs)
    return tuple(out)


def killed_status(pod: Pod, status: PodStatus, now: float) -> PodStatus:
    """A pod deleted from the API, terminated by its node (SyncTerminatingPod, then TerminatePod).

    No process runs on this node, so each running container stops at once within its grace
    period; the phase is the terminal one getPhase gives (Succeeded when every regular container
    exited 0, else Failed; a pod still Pending ends Failed). Once a pod has initialized (no
    init containers, or one started), a container that never started counts as a failure."""
    if status.terminal:
        return status
    initialized = not pod.init_containers or any(
        cs.state != "waiting" for cs in status.init_container_statuses)
    containers = _stop(status.container_statuses, now, unknown_waiting=initialized)
    init = _stop(status.init_container_statuses, now, unknown_waiting=False)
    done = all(cs.state == "terminated" for cs in containers)
    phase = SUCCEEDED if done and all(cs.exit_code == 0 for cs in containers) else FAILED
    return dataclasses.replace(
        status,
        phase=phase,
        conditions=_stopped_conditions(phase, now),
        container_statuses=containers,
        init_container_statuses=init,
    )


def evicted_status(status: PodStatus, reason: str, message: str, now: float) -> PodStatus:
    """The eviction manager's verdict: Failed, reason Evicted, DisruptionTarget condition."""
    target = _cond(DISRUPTION_TARGET, True, now, "TerminationByKubelet", message)
    return dataclasses.replace(
        status,
        phase=FAILED,
        reason=reason,
        message=message,
        conditions=_stopped_conditions(FAILED, now, (target,)),
        container_statuses=_terminate(status.container_statuses, EXIT_CODE_KILLED, "Error", now),
        init_container_statuses=_terminate(status.init_container_statuses, EXIT_CODE_KILLED, "Error", now),
    )


def merge_resource_status(
    current: Sequence[ResourceStatus], updates: Sequence[ResourceStatus], *, replace: bool
) -> tuple[ResourceStatus, ...]:
    """Replace entries by name (the kubelet's updateAllocatedResourcesStatus), or all of them."""
    if replace:
        return tuple(u for u in updates if u.resources)
    merged = {rs.name: rs for rs in current}
    for u in updates:
        merged[u.name] = u
    return tuple(rs for rs in merged.values() if rs.resources)


def with_resource_status(
    status: PodStatus, container: str, updates: Sequence[ResourceStatus], *, replace: bool
) -> PodStatus:
    """The status with one container's allocatedResourcesStatus updated (unchanged if unknown, or
    an init container: the kubelet reports none for those)."""

    def update(statuses: tuple[ContainerStatus, ...]) -> tuple[ContainerStatus, ...]:
        return tuple(
            dataclasses.replace(
                cs,
                allocated_resources_status=merge_resource_status(
                    cs.allocated_resources_status, updates, replace=replace
                ),
            )
            if cs.name == container
            else cs
            for cs in statuses
        )

    return dataclasses.replace(status, container_statuses=update(status.container_statuses))


CONTAINER_CREATING = "ContainerCreating"


def pending_status(pod: Pod, qos_class: str, message: str, now: float) -> PodStatus:
    """Admitted but a pre-start hook is not ready (e.g. DRA claims not prepared yet):
    Pending, every container waiting with ContainerCreating, `message` says why (the kubelet
    writes none: callers pass ""). No sandbox yet: the kubelet prepares claims before creating it."""

    def waiting(names: Sequence[str]) -> tuple[ContainerStatus, ...]:
        return tuple(ContainerStatus(n, state="waiting", reason=CONTAINER_CREATING) for n in names)

    names = [c.name for c in pod.containers]
    # GenerateContainersReadyCondition lists the sidecars (restartable init containers) first
    unready_names = [c.name for c in pod.init_containers if c.is_sidecar] + names
    unready = f"containers with unready status: [{' '.join(unready_names)}]"
    conditions = (
        _cond(POD_READY_TO_START, False, now, SANDBOX_NOT_READY, NO_SANDBOX),
        _cond(INITIALIZED, not pod.init_containers, now,
              "" if not pod.init_containers else "ContainersNotInitialized",
              "" if not pod.init_containers else
              f"containers with incomplete status: [{' '.join(c.name for c in pod.init_containers)}]"),
        _cond(READY, False, now, "ContainersNotReady", unready),
        _cond(CONTAINERS_READY, False, now, "ContainersNotReady", unready),
        _cond(POD_SCHEDULED, True, now),
    )
    return PodStatus(
        phase=PENDING,
        message=message,
        qos_class=qos_class,
        start_time=now,
        conditions=conditions,
        container_statuses=waiting(names),
        init_container_statuses=waiting([c.name for c in pod.init_containers]),
    )


def with_pod_resource_status(status: PodStatus, updates: Sequence[ResourceStatus], *, replace: bool
                             ) -> PodStatus:
    """The status with the pod-level allocatedResourcesStatus updated (merge by name, or replace)."""
    return dataclasses.replace(
        status,
        allocated_resources_status=merge_resource_status(status.allocated_resources_status, updates,
                                                         replace=replace),
    )


POD_INITIALIZING = "PodInitializing"
CREATE_CONTAINER_CONFIG_ERROR = "CreateContainerConfigError"  # kuberuntime's ErrCreateContainerConfig
FAILED_TO_CREATE_CONTAINER = "Failed"  # its event reason (events.FailedToCreateContainer)


def start_failed_status(pod: Pod, qos_class: str, failed: Mapping[str, tuple[str, str]], now: float,
                        start_time: float | None = None,
                        resources: Mapping[str, Sequence[ResourceStatus]] | None = None) -> PodStatus:
    """The pod's sandbox is up and some containers failed to start (kuberuntime's startContainer
    error, kept by the kubelet's reasonCache): `failed` maps each such container to (reason, message),
    e.g. CreateContainerConfigError with the device plugin's PreStartContainer error.

    Pending. An init container that fails stops the pod's start there (SyncPod returns): the ones
    before it completed (sidecars running), it waits with its reason, the later ones and every
    regular container wait PodInitializing. Failed regular containers wait with their reason while
    the others run (SyncPod starts each regardless); with no init containers, the default waiting
    reason is ContainerCreating (convertToAPIContainerStatuses). `resources`: each container's
    allocatedResourcesStatus, on regular containers whatever their state (as running_status's)."""
    failed_init = next((i for i, c in enumerate(pod.init_containers) if c.name in failed), None)
    default = POD_INITIALIZING if pod.init_containers else CONTAINER_CREATING

    def waiting(name: str, reason: str = default) -> ContainerStatus:
        why, message = failed.get(name, (reason, ""))
        return ContainerStatus(name, state="waiting", reason=why, message=message)

    init: list[ContainerStatus] = []
    for i, c in enumerate(pod.init_containers):
        if failed_init is not None and i >= failed_init:
            init.append(waiting(c.name))
        elif c.is_sidecar:
            init.append(ContainerStatus(c.name, state="running", started_at=now))
        else:
            init.append(ContainerStatus(c.name, state="terminated", reason="Completed", exit_code=0,
                                        started_at=now, finished_at=now))
    if failed_init is not None:
        containers = [waiting(c.name) for c in pod.containers]
    else:
        containers = [waiting(c.name) if c.name in failed else ContainerStatus(c.name, state="running", started_at=now)
                      for c in pod.containers]
    given = resources or {}
    containers = [dataclasses.replace(cs, allocated_resources_status=merge_resource_status(
        (), given[cs.name], replace=False)) if cs.name in given else cs for cs in containers]
    pairs = list(zip(pod.init_containers, init, strict=True))
    incomplete = [cs.name for c, cs in pairs if cs.state != ("running" if c.is_sidecar else "terminated")]
    # GenerateContainersReadyCondition lists the sidecars (restartable init containers) first
    unready = [cs.name for c, cs in pairs if c.is_sidecar and cs.state != "running"]
    unready += [cs.name for cs in containers if cs.state != "running"]
    not_ready = f"containers with unready status: [{' '.join(unready)}]"
    conditions = (
        _cond(POD_READY_TO_START, True, now),
        _cond(INITIALIZED, not incomplete, now, "ContainersNotInitialized" if incomplete else "",
              f"containers with incomplete status: [{' '.join(incomplete)}]" if incomplete else ""),
        _cond(READY, False, now, "ContainersNotReady", not_ready),
        _cond(CONTAINERS_READY, False, now, "ContainersNotReady", not_ready),
        _cond(POD_SCHEDULED, True, now),
    )
    return PodStatus(
        phase=PENDING,
        qos_class=qos_class,
        start_time=now if start_time is None else start_time,
        conditions=conditions,
        container_statuses=tuple(containers),
        init_container_statuses=tuple(init),
    )
