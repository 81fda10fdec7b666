"""The scheduler: cluster cache, scheduling queue and the decide-and-bind core (see core.py)."""

from nodeagent.controlplane.scheduler.cache import ClusterCache
from nodeagent.controlplane.scheduler.core import (
    Attempt,
    ClassicDecision,
    ClassicPort,
    Scheduler,
    SchedulerOptions,
    failure_message,
    preemption_message,
)
from nodeagent.controlplane.scheduler.queue import SchedulingQueue

__all__ = [
    "Attempt",
    "ClassicDecision",
    "ClassicPort",
    "ClusterCache",
    "Scheduler",
    "SchedulerOptions",
    "SchedulingQueue",
    "failure_message",
    "preemption_message",
]
