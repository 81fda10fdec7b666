"""Effective pod requests and limits, as the kubelet's resourcehelper computes them.

Shared by the cgroup limits, the CPU and memory managers, eviction ranking and the pod
admission predicates (the overhead), so all of them agree on what a pod asks for. Pure: plain
functions over the Pod model. It lives in pods/, the lowest package that needs it (admission.py),
rather than in cm/: cm/ builds on pods/, and upstream too keeps it below the kubelet's managers
(k8s.io/component-helpers).

Semantics (k8s.io/component-helpers/resource PodRequests/PodLimits): app containers and
restartable (sidecar) init containers are summed; each ordinary init container runs
alone beside the sidecars started before it, so the pod needs the maximum of that and
the sum. Pod-level resources (spec.resources), when set, win for their resources.
The pod's spec.overhead (RuntimeClass overhead) is added to the requests, and to the
limits the pod sets, as PodRequests/PodLimits do without ExcludeOverhead.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodeagent.objects.pod.model import Container, Pod
from nodeagent.util import quantity

CPU = "cpu"
MEMORY = "memory"


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0) + value


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if value > into.get(name, 0):
            into[name] = value


def _aggregate(pod: Pod, pick: str) -> dict[str, int]:
    def values(c: Container) -> Mapping[str, int]:
        return c.requests if pick == "requests" else c.limits

    total: dict[str, int] = {}
    for c in pod.containers:
        _add(total, values(c))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for c in pod.init_containers:
        if c.is_sidecar:
            _add(total, values(c))
            _add(sidecars, values(c))
            _max(init_peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, values(c))
            _max(init_peak, running)
    _max(total, init_peak)
    pod_level = pod.pod_requests if pick == "requests" else pod.pod_limits
    for name, value in pod_level.items():
        total[name] = value
    for name, value in pod_overhead(pod).items():
        if pick == "requests" or name in total:
            total[name] = total.get(name, 0) + value
    return total


def pod_overhead(pod: Pod) -> dict[str, int]:
    """spec.overhead in canonical units; a value that is not a quantity is left out."""
    spec = pod.manifest.get("spec")
    raw = spec.get("overhead") if isinstance(spec, Mapping) else None
    out: dict[str, int] = {}
    if isinstance(raw, Mapping):
        for name, text in raw.items():
            try:
                out[str(name)] = quantity.parse_nonnegative(str(name), text)
            except quantity.QuantityError:
                continue
    return out


def pod_requests(pod: Pod) -> dict[str, int]:
    """Effective requests of `pod` (canonical units)."""
    return _aggregate(pod, "requests")


def pod_limits(pod: Pod) -> dict[str, int]:
    """Effective limits of `pod` (canonical units); only meaningful with all_limited()."""
    return _aggregate(pod, "limits")


def all_limited(pod: Pod, resource: str) -> bool:
    """True when every container (init included) or the pod itself declares a limit."""
    if pod.pod_limits.get(resource, 0) > 0:
        return True
    containers = pod.all_containers()
    return bool(containers) and all(c.limits.get(resource, 0) > 0 for c in containers)


def has_pod_level_resources(pod: Pod) -> bool:
    """IsPodLevelResourcesSet: spec.resources gives a cpu or memory request or limit."""
    return any(r in m for m in (pod.pod_requests, pod.pod_limits) for r in (CPU, MEMORY))


def is_guaranteed(pod: Pod) -> bool:
    """Guaranteed QoS: cpu and memory limits everywhere, requests (defaulted to limits) equal."""
    if pod.pod_limits:
        return all(
            pod.pod_limits.get(r, 0) > 0 and pod.pod_requests.get(r, pod.pod_limits[r]) == pod.pod_limits[r]
            for r in (CPU, MEMORY)
        )
    containers = pod.all_containers()
    if not containers:
        return False
    for c in containers:
        for r in (CPU, MEMORY):
            limit = c.limits.get(r, 0)
            if limit <= 0 or c.requests.get(r, limit) != limit:
                return False
    return True
