"""Schemas of the small non-core kinds: events.k8s.io/v1 Event, coordination.k8s.io/v1 Lease
and resource.k8s.io/v1alpha3 PodSchedulingContext.

Why apart: each is a handful of definitions under its own package name; keeping them out of
the core and DRA modules keeps those to the kinds they describe.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import (
    arr,
    core,
    i32,
    kind,
    lmap,
    meta,
    obj,
    ref,
    s,
    strs,
)
from nodeagent.apiserver.schema.model import Schema


def other_definitions() -> dict[str, Schema]:
    ev = "io.k8s.api.events.v1."
    lease = "io.k8s.api.coordination.v1."
    psc = "io.k8s.api.resource.v1alpha3."
    return {
        ev + "Event": kind("A report of something that happened to an object (events.k8s.io/v1).", {
            "eventTime": meta("MicroTime", "When the event was first observed."),
            "series": ref(ev + "EventSeries", "Data about a series of recurring events."),
            "reportingController": s("Controller that emitted the event, e.g. kubernetes.io/kubelet."),
            "reportingInstance": s("Instance of that controller, e.g. the node name."),
            "action": s("What was done, or failed."),
            "reason": s("Short CamelCase reason."),
            "regarding": core("ObjectReference", "The object the event is about."),
            "related": core("ObjectReference", "A second object involved."),
            "note": s("Human-readable description."),
            "type": s("Normal or Warning."),
            "deprecatedSource": core("EventSource", "core/v1 source, kept for compatibility."),
            "deprecatedFirstTimestamp": meta("Time", "core/v1 firstTimestamp."),
            "deprecatedLastTimestamp": meta("Time", "core/v1 lastTimestamp."),
            "deprecatedCount": i32("core/v1 count."),
        }, ["eventTime"]),
        ev + "EventSeries": obj("A series of repeated events.", {
            "count": i32("Occurrences so far."),
            "lastObservedTime": meta("MicroTime", "Time of the last occurrence."),
        }, ["count", "lastObservedTime"]),
        lease + "Lease": kind("A lease held by one holder at a time (leader election, node heartbeats).", {
            "spec": ref(lease + "LeaseSpec", "The lease."),
        }),
        lease + "LeaseSpec": obj("Who holds a lease and for how long.", {
            "holderIdentity": s("Identity of the current holder."),
            "leaseDurationSeconds": i32("Seconds candidates wait after renewTime before taking over."),
            "acquireTime": meta("MicroTime", "When the current holder took the lease."),
            "renewTime": meta("MicroTime", "When the holder last renewed it."),
            "leaseTransitions": i32("Times the lease changed holders."),
            "strategy": s("Coordinated leader election strategy, e.g. OldestEmulationVersion."),
            "preferredHolder": s("Holder the lease should move to."),
        }),
        psc + "PodSchedulingContext": kind("Scheduling state of a pod that uses DRA claims (v1alpha3).", {
            "spec": ref(psc + "PodSchedulingContextSpec", "Set by the scheduler."),
            "status": ref(psc + "PodSchedulingContextStatus", "Set by drivers."),
        }, ["spec"]),
        psc + "PodSchedulingContextSpec": obj("Nodes the scheduler is considering.", {
            "selectedNode": s("Node the scheduler picked; drivers allocate for it."),
            "potentialNodes": strs("Nodes that fit the pod otherwise."),
        }),
        psc + "PodSchedulingContextStatus": obj("What drivers report back.", {
            "resourceClaims": lmap(ref(psc + "ResourceClaimSchedulingStatus"),
                                   "Per claim of the pod, nodes that cannot serve it.", "name", strategy=""),
        }),
        psc + "ResourceClaimSchedulingStatus": obj("Scheduling status of one claim.", {
            "name": s("Name of the entry in pod.spec.resourceClaims."),
            "unsuitableNodes": arr(s(), "Potential nodes that cannot serve the claim.", atomic=True),
        }, ["name"]),
    }
