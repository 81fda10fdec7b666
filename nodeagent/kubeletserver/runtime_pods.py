"""/runningpods: the pods the container runtime reports, as the kubelet's endpoint lists them.

Why apart from /pods: the kubelet answers /runningpods from its runtime cache
(kubelet_getters.go GetRunningPods -> kubeGenericRuntimeManager.GetPods(all=false)), not from the
pods bound to it: a pod is listed while its sandbox is ready, with only its running containers,
each reduced to what kubecontainer.Pod.ToAPIPod keeps (uid, name, namespace; each container's
name and image). nodeagent's runtime is its simulated containers, so the same reading is made of
them: the sandbox is ready while the pod's PodReadyToStartContainers condition is True (the
kubelet sets it from the sandbox's state), a container runs while its status says running.
Order as the runtime manager sorts: pods by sandbox creation, newest first (here the pod's
startTime, then its name where the runtime's map order decides), containers newest first (here
their start time, then the reverse of creation order: init containers are created before the
others, each list in spec order). Intended difference: `image` is the container's image as
written in the spec, where containerd reports the image reference the kubelet resolved (nodeagent
pulls no image, so it has no other). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from nodeagent.objects.pod.model import Pod, PodStatus
from nodeagent.pods.status import POD_READY_TO_START


def sandbox_ready(status: PodStatus) -> bool:
    return any(c.type == POD_READY_TO_START and c.status == "True" for c in status.conditions)


def running_pods(pods: Iterable[tuple[Pod, PodStatus]]) -> list[dict[str, Any]]:
    """The v1 Pods of kubecontainer.Pod.ToAPIPod for every pod whose sandbox is ready, newest first."""
    listed = [(pod, status) for pod, status in pods if sandbox_ready(status)]
    listed.sort(key=lambda ps: ps[0].name)
    listed.sort(key=lambda ps: ps[1].start_time or 0.0, reverse=True)
    return [_api_pod(pod, status) for pod, status in listed]


def _api_pod(pod: Pod, status: PodStatus) -> dict[str, Any]:
    images = {c.name: c.image for c in pod.all_containers()}
    # creation order: init containers, then the others, each in spec order
    created = [*status.init_container_statuses, *status.container_statuses]
    running = [(i, cs) for i, cs in enumerate(created) if cs.state == "running"]
    running.sort(key=lambda ics: (ics[1].started_at or 0.0, ics[0]), reverse=True)
    containers: Sequence[dict[str, Any]] | None = [
        {"name": cs.name, "image": images.get(cs.name, ""), "resources": {}} for _, cs in running] or None
    return {"metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "spec": {"containers": containers}, "status": {}}
