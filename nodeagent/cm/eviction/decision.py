"""Eviction decisions: thresholds met, node conditions, and the next pod to evict. Pure.

The kubelet's eviction manager synchronize() as a function of (now, state, inputs):
1. a threshold is met when the observed available quantity of its signal is below
   the threshold (percentages resolved against the signal's capacity);
2. met thresholds remember when they were first observed; soft thresholds act only
   after their grace period, hard ones at once;
3. node conditions (MemoryPressure, DiskPressure, PIDPressure) follow every met
   threshold, grace or not, and stay for evictionPressureTransitionPeriod after the
   last time they were observed;
4. for the first actionable threshold (memory signals first) the active pods are
   ranked the kubelet's way and the first non-critical pod is the victim. One per pass.

Pod usage on a fake node comes from annotations nodeagent.dev/usage-<resource>
(memory, ephemeral-storage, inodes, pid); a pod without one uses nothing.
Critical pods (static pods and priority >= 2000000000) are never evicted, as in the
kubelet. No I/O, no clock: `now` is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodeagent.config import KubeletConfig, Threshold
from nodeagent.objects.pod.model import ANNOTATION_USAGE_PREFIX, Pod
from nodeagent.pods.eviction_admit import DISK_PRESSURE, MEMORY_PRESSURE, PID_PRESSURE, is_critical
from nodeagent.pods.resources import pod_requests
from nodeagent.util import quantity

MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
INODES = "inodes"
PIDS = "pids"

# signal -> (resource to reclaim, node condition)
SIGNALS: Mapping[str, tuple[str, str]] = {
    "memory.available": (MEMORY, MEMORY_PRESSURE),
    "allocatableMemory.available": (MEMORY, MEMORY_PRESSURE),
    "nodefs.available": (EPHEMERAL_STORAGE, DISK_PRESSURE),
    "nodefs.inodesFree": (INODES, DISK_PRESSURE),
    "imagefs.available": (EPHEMERAL_STORAGE, DISK_PRESSURE),
    "imagefs.inodesFree": (INODES, DISK_PRESSURE),
    "containerfs.available": (EPHEMERAL_STORAGE, DISK_PRESSURE),
    "containerfs.inodesFree": (INODES, DISK_PRESSURE),
    "pid.available": (PIDS, PID_PRESSURE),
}
_SIGNAL_ORDER = {s: i for i, s in enumerate(SIGNALS)}  # memory signals first
# resource -> the usage annotation's resource name
USAGE_RESOURCE = {MEMORY: "memory", EPHEMERAL_STORAGE: "ephemeral-storage", INODES: "inodes", PIDS: "pid"}


@dataclass(frozen=True)
class Observation:
    """One observed signal: what is available of how much (canonical units)."""

    available: int
    capacity: int


@dataclass(frozen=True)
class ThresholdSpec:
    threshold: Threshold
    hard: bool
    grace_period: float = 0.0  # seconds; 0 for hard thresholds

    @property
    def key(self) -> str:
        return f"{'hard' if self.hard else 'soft'}:{self.threshold.signal}"

    @property
    def signal(self) -> str:
        return self.threshold.signal


@dataclass(frozen=True)
class EvictionState:
    """What one pass hands to the next (monotonic seconds)."""

    first_observed: Mapping[str, float] = field(default_factory=dict)  # ThresholdSpec.key -> time
    condition_last_observed: Mapping[str, float] = field(default_factory=dict)  # condition -> time


@dataclass(frozen=True)
class Victim:
    pod: Pod
    signal: str
    resource: str
    message: str


@dataclass(frozen=True)
class Decision:
    state: EvictionState
    met: tuple[ThresholdSpec, ...]  # met now, grace periods not considered
    actionable: tuple[ThresholdSpec, ...]  # met and past their grace period
    conditions: tuple[str, ...]  # node conditions that are True
    victim: Victim | None


def thresholds_from_config(kubelet: KubeletConfig) -> tuple[ThresholdSpec, ...]:
    hard = [ThresholdSpec(t, hard=True) for t in kubelet.eviction_hard.values()]
    soft = [
        ThresholdSpec(t, hard=False, grace_period=kubelet.eviction_soft_grace_period.get(s, 0.0))
        for s, t in kubelet.eviction_soft.items()
    ]
    return tuple(hard + soft)


def pod_usage(pod: Pod, resource: str) -> int:
    """Simulated usage from nodeagent.dev/usage-<resource>; 0 when absent or unparsable."""
    text = pod.annotations.get(ANNOTATION_USAGE_PREFIX + USAGE_RESOURCE.get(resource, resource))
    if text is None:
        return 0
    try:
        return max(0, quantity.canonical(resource, text))
    except quantity.QuantityError:
        return 0


def threshold_met(spec: ThresholdSpec, observations: Mapping[str, Observation]) -> bool:
    obs = observations.get(spec.signal)
    if obs is None:
        return False
    return spec.threshold.resolve(obs.capacity) > obs.available


def rank(pods: Sequence[Pod], resource: str) -> list[Pod]:
    """The kubelet's eviction order for a starved resource (first = evicted first).

    memory / ephemeral-storage: usage above requests first, then lower priority, then
    more usage above requests. inodes / pids: lower priority, then more usage.
    """
    if resource in (MEMORY, EPHEMERAL_STORAGE):
        def key(pod: Pod) -> tuple[bool, int, int]:
            over = pod_usage(pod, resource) - pod_requests(pod).get(resource, 0)
            return (not over > 0, pod.priority, -over)

        return sorted(pods, key=key)
    return sorted(pods, key=lambda p: (p.priority, -pod_usage(p, resource)))


def eviction_message(pod: Pod, spec: ThresholdSpec, resource: str, obs: Observation | None) -> str:
    """The kubelet's message; the pod's simulated usage is attributed to its first container."""
    message = f"The node was low on resource: {resource}. "
    if obs is not None:
        threshold = spec.threshold.resolve(obs.capacity)
        message += (
            f"Threshold quantity: {quantity.format_bytes(threshold)}, "
            f"available: {quantity.format_bytes(obs.available)}. "
        )
    if resource in (MEMORY, EPHEMERAL_STORAGE) and pod.containers:
        usage = pod_usage(pod, resource)
        request = pod_requests(pod).get(resource, 0)
        if usage > request:
            message += (
                f"Container {pod.containers[0].name} was using {quantity.format_bytes(usage)}, "
                f"request is {quantity.format_bytes(request)}, has larger consumption of {resource}. "
            )
    return message.rstrip()


def decide(
    now: float,
    state: EvictionState,
    thresholds: Sequence[ThresholdSpec],
    observations: Mapping[str, Observation],
    pods: Sequence[Pod],
    transition_period: float,
) -> Decision:
    met = tuple(t for t in thresholds if threshold_met(t, observations))
    first = {t.key: state.first_observed.get(t.key, now) for t in met}
    actionable = tuple(
        sorted(
            (t for t in met if now - first[t.key] >= t.grace_period),
            key=lambda t: (_SIGNAL_ORDER.get(t.signal, len(_SIGNAL_ORDER)), not t.hard),
        )
    )
    last = dict(state.condition_last_observed)
    for t in met:
        last[SIGNALS[t.signal][1]] = now
    last = {c: at for c, at in last.items() if now - at < transition_period or c in
            {SIGNALS[t.signal][1] for t in met}}
    conditions = tuple(sorted(last))
    new_state = EvictionState(first_observed=first, condition_last_observed=last)

    victim: Victim | None = None
    if actionable:
        spec = actionable[0]
        resource = SIGNALS[spec.signal][0]
        candidates = [p for p in pods if not is_critical(p)]
        ranked = rank(candidates, resource)
        if ranked:
            pod = ranked[0]
            victim = Victim(
                pod=pod,
                signal=spec.signal,
                resource=resource,
                message=eviction_message(pod, spec, resource, observations.get(spec.signal)),
            )
    return Decision(state=new_state, met=met, actionable=actionable, conditions=conditions, victim=victim)
