"""Schemas of policy/v1 PodDisruptionBudget, scheduling.k8s.io/v1 PriorityClass and
discovery.k8s.io/v1 EndpointSlice (k8s.io/api policy/v1, scheduling/v1, discovery/v1 types.go).

Why together: one small kind per group, all read by the real control-plane components
(kube-scheduler's preemption, the disruption and endpointslice controllers).
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import (
    INT_OR_STRING,
    arr,
    b,
    core,
    i32,
    i64,
    kind,
    lmap,
    mapof,
    meta,
    obj,
    ref,
    s,
    smap,
    sset,
    time,
)
from nodeagent.apiserver.schema.model import Schema

POLICY = "io.k8s.api.policy.v1."
SCHEDULING = "io.k8s.api.scheduling.v1."
DISCOVERY = "io.k8s.api.discovery.v1."


def cluster_definitions() -> dict[str, Schema]:
    selector = meta("LabelSelector", "Pods the budget covers; empty selects none.")
    return {
        POLICY + "PodDisruptionBudget": kind("The least a set of pods may be disrupted to.", {
            "spec": ref(POLICY + "PodDisruptionBudgetSpec", "The budget."),
            "status": ref(POLICY + "PodDisruptionBudgetStatus", "Written by the disruption controller."),
        }),
        POLICY + "PodDisruptionBudgetSpec": obj("A disruption budget.", {
            "minAvailable": ref(INT_OR_STRING, "Pods that must stay available, a number or a percentage."),
            "selector": Schema(ref=selector.ref, description=selector.description, patch_strategy="replace"),
            "maxUnavailable": ref(INT_OR_STRING, "Pods that may be unavailable, a number or a percentage."),
            "unhealthyPodEvictionPolicy": s("IfHealthyBudget (default) or AlwaysAllow."),
        }),
        POLICY + "PodDisruptionBudgetStatus": obj("What the disruption controller observed.", {
            "observedGeneration": i64("The generation these figures are for."),
            "disruptedPods": mapof(time(), "Pods evicted but not yet deleted, with when."),
            "disruptionsAllowed": i32("Disruptions allowed now."),
            "currentHealthy": i32("Healthy pods now."),
            "desiredHealthy": i32("Healthy pods wanted."),
            "expectedPods": i32("Pods the budget counts."),
            "conditions": lmap(meta("Condition"), "DisruptionAllowed and others.", "type"),
        }, ["disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"]),
        SCHEDULING + "PriorityClass": kind("A name for a pod priority value.", {
            "value": i32("The priority of pods naming this class."),
            "globalDefault": b("The class of pods that name none (one class at most)."),
            "description": s("When to use the class."),
            "preemptionPolicy": s("PreemptLowerPriority (default) or Never."),
        }, ["value"]),
        DISCOVERY + "EndpointSlice": kind("A subset of a service's endpoints.", {
            "addressType": s("IPv4, IPv6 or FQDN; immutable."),
            "endpoints": arr(ref(DISCOVERY + "Endpoint"), "The endpoints.", atomic=True),
            "ports": arr(ref(DISCOVERY + "EndpointPort"), "The ports every endpoint exposes.", atomic=True),
        }, ["addressType"]),
        DISCOVERY + "Endpoint": obj("One endpoint.", {
            "addresses": sset("Its addresses (1 to 100), of the slice's address type."),
            "conditions": ref(DISCOVERY + "EndpointConditions", "Ready, serving, terminating."),
            "hostname": s("A DNS label."),
            "targetRef": core("ObjectReference", "The object behind it, usually a pod."),
            "deprecatedTopology": smap("Topology labels (deprecated)."),
            "nodeName": s("The node it is on."),
            "zone": s("The zone it is in."),
            "hints": ref(DISCOVERY + "EndpointHints", "Topology-aware routing hints."),
        }, ["addresses"]),
        DISCOVERY + "EndpointConditions": obj("An endpoint's state.", {
            "ready": b("Ready to receive traffic."),
            "serving": b("Serving, terminating or not."),
            "terminating": b("Terminating."),
        }),
        DISCOVERY + "EndpointHints": obj("Where an endpoint should be consumed.", {
            "forZones": arr(ref(DISCOVERY + "ForZone"), "Zones that should use it.", atomic=True),
            "forNodes": arr(ref(DISCOVERY + "ForNode"), "Nodes that should use it.", atomic=True),
        }),
        DISCOVERY + "ForZone": obj("A zone.", {"name": s("The zone's name.")}, ["name"]),
        DISCOVERY + "ForNode": obj("A node.", {"name": s("The node's name.")}, ["name"]),
        DISCOVERY + "EndpointPort": obj("A port.", {
            "name": s("An IANA service name, or empty."),
            "protocol": s("TCP (default), UDP or SCTP."),
            "port": i32("The port number."),
            "appProtocol": s("The application protocol."),
        }, map_type="atomic"),
    }
