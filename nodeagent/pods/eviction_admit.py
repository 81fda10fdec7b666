"""The eviction manager's admit handler: no new pods while the node is under pressure.

eviction_manager.go Admit: with no pressure condition every pod is admitted; critical
pods (static, mirror, or priority >= system-critical) always are; under MemoryPressure
alone only BestEffort pods are refused, unless they tolerate the memory-pressure taint;
any other pressure condition (DiskPressure, PIDPressure) refuses every other pod. The
refusal's reason is "Evicted" and its message lists the conditions as Go prints a slice.
It is the first admit handler the kubelet runs. Pure: no I/O.

Why in pods/ and not beside the rest of the eviction manager (cm/eviction/): the admission chain
(pods/holdings.py) runs it, and cm/ sits above pods/ (the managers import pods' ports and hints),
so pods/ reaching into cm/ for it made the two packages a cycle. It reads only the node's
conditions, which is why it can stand alone; the pressure condition names live here for the same
reason, and cm/eviction/decision.py, which sets those conditions, imports them from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.objects.pod.model import BEST_EFFORT, Pod
from nodeagent.pods.ports import ADMITTED, AdmitResult
from nodeagent.pods.qos import pod_qos

MEMORY_PRESSURE = "MemoryPressure"
DISK_PRESSURE = "DiskPressure"
PID_PRESSURE = "PIDPressure"

REASON = "Evicted"
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
MEMORY_PRESSURE_TAINT = "node.kubernetes.io/memory-pressure"


def is_critical(pod: Pod) -> bool:
    """kubelettypes.IsCriticalPod: static, mirror, or system-critical priority."""
    return (pod.source == "file" or MIRROR_ANNOTATION in pod.annotations
            or pod.priority >= SYSTEM_CRITICAL_PRIORITY)


def _tolerates(toleration: Mapping[str, Any], key: str, effect: str) -> bool:
    """Toleration.ToleratesTaint for a taint with an empty value."""
    if toleration.get("effect") not in (None, "", effect):
        return False
    t_key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if t_key and t_key != key:
        return False
    if operator == "Exists":
        return True
    return bool(t_key) and operator == "Equal" and not toleration.get("value")


def tolerates_memory_pressure(pod: Pod) -> bool:
    spec = pod.manifest.get("spec")
    tolerations = spec.get("tolerations") if isinstance(spec, Mapping) else None
    return any(isinstance(t, Mapping) and _tolerates(t, MEMORY_PRESSURE_TAINT, "NoSchedule")
               for t in tolerations or ())


def admit(pod: Pod, conditions: Sequence[str]) -> AdmitResult:
    """The eviction manager's verdict on a new pod given the node's pressure conditions."""
    if not conditions or is_critical(pod):
        return ADMITTED
    only_memory = tuple(conditions) == (MEMORY_PRESSURE,)
    if only_memory and (pod_qos(pod) != BEST_EFFORT or tolerates_memory_pressure(pod)):
        return ADMITTED
    return AdmitResult(admit=False, reason=REASON,
                       message=f"The node had condition: [{' '.join(conditions)}]. ")
