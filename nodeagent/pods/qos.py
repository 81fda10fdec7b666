"""The pod QoS class, computed exactly as the kubelet's qos.ComputePodQOS.

Only cpu and memory count; init containers count like regular ones; pod-level resources
(spec.resources), when set, replace the per-container figures. Pure function, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodeagent.objects.pod.model import BEST_EFFORT, BURSTABLE, GUARANTEED, Pod

QOS_RESOURCES = ("cpu", "memory")


def _accumulate(into: dict[str, int], values: Mapping[str, int]) -> set[str]:
    """Add the positive cpu/memory quantities; return the names found."""
    found: set[str] = set()
    for name, value in values.items():
        if name in QOS_RESOURCES and value > 0:
            found.add(name)
            into[name] = into.get(name, 0) + value
    return found


def pod_qos(pod: Pod) -> str:
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    if pod.pod_requests or pod.pod_limits:
        _accumulate(requests, pod.pod_requests)
        if pod.pod_limits and not _accumulate(limits, pod.pod_limits) >= set(QOS_RESOURCES):
            guaranteed = False
    else:
        for c in pod.containers + pod.init_containers:
            _accumulate(requests, c.requests)
            if not _accumulate(limits, c.limits) >= set(QOS_RESOURCES):
                guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and any(limits.get(name) != value for name, value in requests.items()):
        guaranteed = False
    if guaranteed and len(requests) == len(limits):
        return GUARANTEED
    return BURSTABLE
