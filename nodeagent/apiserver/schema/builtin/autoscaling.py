"""Schemas of HorizontalPodAutoscaler in autoscaling/v2 and autoscaling/v1 (k8s.io/api
autoscaling/v2 and v1 types.go; v1's Scale is with the workloads' schemas).

Why served: kube-controller-manager's horizontal-pod-autoscaler controller lists and watches them
(and the garbage collector's and quota's metadata informers cover every listable kind); without
them its informers never sync. nodeagent runs no metrics pipeline, so no HPA here ever scales:
they are stored and served as data with the real controller free to act on them.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import arr, i32, i64, kind, lmap, meta, obj, qty, ref, s, time
from nodeagent.apiserver.schema.model import Schema

A2 = "io.k8s.api.autoscaling.v2."
A1 = "io.k8s.api.autoscaling.v1."


def _metric_pair(name: str, what: str, source: dict[str, Schema], required: list[str]) -> dict[str, Schema]:
    """A metric's source (spec side, with a target) and status (observed side, with current)."""
    spec = {**source, "target": ref(A2 + "MetricTarget", "The value to reach.")}
    status = {**source, "current": ref(A2 + "MetricValueStatus", "The value observed.")}
    return {
        A2 + name + "MetricSource": obj(f"A {what} metric to scale on.", spec, [*required, "target"]),
        A2 + name + "MetricStatus": obj(f"A {what} metric as observed.", status, [*required, "current"]),
    }


def autoscaling_definitions() -> dict[str, Schema]:
    metric = ref(A2 + "MetricIdentifier", "The metric's name and selector.")
    described = ref(A2 + "CrossVersionObjectReference", "The object the metric describes.")
    kinds = ("containerResource", "external", "object", "pods", "resource")
    sources = {k: ref(A2 + k[0].upper() + k[1:] + "MetricSource", f"A {k} metric.") for k in kinds}
    statuses = {k: ref(A2 + k[0].upper() + k[1:] + "MetricStatus", f"A {k} metric.") for k in kinds}
    return {
        A2 + "HorizontalPodAutoscaler": kind("Scales a workload's replicas on its metrics.", {
            "spec": ref(A2 + "HorizontalPodAutoscalerSpec", "What to scale and on what."),
            "status": ref(A2 + "HorizontalPodAutoscalerStatus", "Written by the autoscaler."),
        }),
        A2 + "HorizontalPodAutoscalerSpec": obj("An autoscaler's target, bounds and metrics.", {
            "scaleTargetRef": described,
            "minReplicas": i32("The least replicas (default 1)."),
            "maxReplicas": i32("The most replicas."),
            "metrics": arr(ref(A2 + "MetricSpec"), "The metrics to scale on.", atomic=True),
            "behavior": ref(A2 + "HorizontalPodAutoscalerBehavior", "How fast to scale up and down."),
        }, ["scaleTargetRef", "maxReplicas"]),
        A2 + "CrossVersionObjectReference": obj("An object by kind and name.", {
            "kind": s("The kind."), "name": s("The name."), "apiVersion": s("The API version."),
        }, ["kind", "name"]),
        A2 + "MetricSpec": obj("One metric to scale on; `type` names the member set.", {
            "type": s("ContainerResource, External, Object, Pods or Resource."), **sources,
        }, ["type"]),
        A2 + "MetricStatus": obj("One metric as observed; `type` names the member set.", {
            "type": s("ContainerResource, External, Object, Pods or Resource."), **statuses,
        }, ["type"]),
        **_metric_pair("ContainerResource", "container resource",
                       {"name": s("The resource name."), "container": s("The container.")}, ["name", "container"]),
        **_metric_pair("External", "external", {"metric": metric}, ["metric"]),
        **_metric_pair("Object", "object", {"describedObject": described, "metric": metric},
                       ["describedObject", "metric"]),
        **_metric_pair("Pods", "pods", {"metric": metric}, ["metric"]),
        **_metric_pair("Resource", "resource", {"name": s("The resource name.")}, ["name"]),
        A2 + "MetricIdentifier": obj("A metric by name.", {
            "name": s("The metric's name."), "selector": meta("LabelSelector", "Narrows the metric's series."),
        }, ["name"]),
        A2 + "MetricTarget": obj("A target value of a metric.", {
            "type": s("Utilization, Value or AverageValue."),
            "value": qty("A value."), "averageValue": qty("A value per pod."),
            "averageUtilization": i32("Percent of the pods' requests."),
        }, ["type"]),
        A2 + "MetricValueStatus": obj("An observed value of a metric.", {
            "value": qty("A value."), "averageValue": qty("A value per pod."),
            "averageUtilization": i32("Percent of the pods' requests."),
        }),
        A2 + "HorizontalPodAutoscalerBehavior": obj("Scaling rules up and down.", {
            "scaleUp": ref(A2 + "HPAScalingRules", "Rules to scale up."),
            "scaleDown": ref(A2 + "HPAScalingRules", "Rules to scale down."),
        }),
        A2 + "HPAScalingRules": obj("How fast to scale one way.", {
            "stabilizationWindowSeconds": i32("Seconds of past recommendations to consider."),
            "selectPolicy": s("Max, Min or Disabled."),
            "policies": arr(ref(A2 + "HPAScalingPolicy"), "The policies.", atomic=True),
            "tolerance": qty("The change below which no scaling happens."),
        }),
        A2 + "HPAScalingPolicy": obj("One scaling policy.", {
            "type": s("Pods or Percent."), "value": i32("The change allowed."),
            "periodSeconds": i32("The window the change is counted over."),
        }, ["type", "value", "periodSeconds"]),
        A2 + "HorizontalPodAutoscalerStatus": obj("What the autoscaler observed.", {
            "observedGeneration": i64("The generation observed."),
            "lastScaleTime": time("When it last scaled."),
            "currentReplicas": i32("Replicas now."),
            "desiredReplicas": i32("Replicas wanted."),
            "currentMetrics": arr(ref(A2 + "MetricStatus"), "The metrics as last read.", atomic=True),
            "conditions": lmap(ref(A2 + "HorizontalPodAutoscalerCondition"), "AbleToScale and others.", "type"),
        }, ["desiredReplicas"]),
        A2 + "HorizontalPodAutoscalerCondition": obj("One aspect of an autoscaler's state.", {
            "type": s("The condition's type."), "status": s("True, False or Unknown."),
            "observedGeneration": i64("The generation it was set for."),
            "lastTransitionTime": time("When it last changed."),
            "reason": s("Why, CamelCase."), "message": s("Why, for humans."),
        }, ["type", "status"]),
    }


def autoscaling_v1_definitions() -> dict[str, Schema]:
    """autoscaling/v1: a CPU target only (the other metrics ride in annotations, see
    nodeagent/kinds/autoscaling_conversion.py), and its own v1 metric shapes for the clients that
    decode those annotations' contents."""
    ref_ = ref(A1 + "CrossVersionObjectReference", "The object to scale.")
    return {
        A1 + "HorizontalPodAutoscaler": kind("Scales a workload's replicas on its CPU use.", {
            "spec": ref(A1 + "HorizontalPodAutoscalerSpec", "What to scale and on what."),
            "status": ref(A1 + "HorizontalPodAutoscalerStatus", "Written by the autoscaler."),
        }),
        A1 + "CrossVersionObjectReference": obj("An object by kind and name.", {
            "kind": s("The kind."), "name": s("The name."), "apiVersion": s("The API version."),
        }, ["kind", "name"]),
        A1 + "HorizontalPodAutoscalerSpec": obj("An autoscaler's target, bounds and CPU target.", {
            "scaleTargetRef": ref_,
            "minReplicas": i32("The least replicas (default 1)."),
            "maxReplicas": i32("The most replicas."),
            "targetCPUUtilizationPercentage": i32("The average CPU use wanted, percent of the requests."),
        }, ["scaleTargetRef", "maxReplicas"]),
        A1 + "HorizontalPodAutoscalerStatus": obj("What the autoscaler observed.", {
            "observedGeneration": i64("The generation observed."),
            "lastScaleTime": time("When it last scaled."),
            "currentReplicas": i32("Replicas now."),
            "desiredReplicas": i32("Replicas wanted."),
            "currentCPUUtilizationPercentage": i32("The average CPU use now, percent of the requests."),
        }, ["currentReplicas", "desiredReplicas"]),
    }
