"""autoscaling/v1 <-> v2 HorizontalPodAutoscaler conversion (upstream's pkg/apis/autoscaling/v1
conversion.go): the texts pinned here are the ones kube-apiserver v1.37.2 wrote for the same
objects (tests/integration/test_hpa_v1.py compares the two servers)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodeagent.kinds import autoscaling_conversion as conv

P = conv.PREFIX
REF = {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}


def hub(spec: dict[str, Any], status: dict[str, Any] | None = None, **annotations: str) -> dict[str, Any]:
    md: dict[str, Any] = {"name": "h"}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": md,
            "spec": {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 3, **spec},
            "status": status or {"desiredReplicas": 0}}


def cpu(percent: int) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                       "averageUtilization": percent}}}


def test_a_cpu_target_is_targetCPUUtilizationPercentage_and_nothing_else() -> None:
    out = conv.hub_to_v1(hub({"metrics": [cpu(50)]}))
    assert out["spec"] == {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 3,
                           "targetCPUUtilizationPercentage": 50}
    assert out["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    assert "annotations" not in out["metadata"]
    assert conv.v1_to_hub(out)["spec"]["metrics"] == [cpu(50)]


def test_no_metrics_in_v1_is_the_80_percent_default() -> None:
    v1 = {"apiVersion": "autoscaling/v1", "metadata": {"name": "h"}, "spec": {"scaleTargetRef": REF, "maxReplicas": 2}}
    assert conv.v1_to_hub(v1)["spec"]["metrics"] == [cpu(80)]


@pytest.mark.parametrize(("metric", "text"), [
    ({"type": "Pods", "pods": {"metric": {"name": "qps", "selector": {"matchExpressions": [
        {"key": "t", "operator": "Exists"}], "matchLabels": {"z": "1", "a": "2"}}},
        "target": {"type": "AverageValue", "averageValue": "1k"}}},
     '{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"1k","selector":{"matchLabels":{"a":"2","z":"1"},'
     '"matchExpressions":[{"key":"t","operator":"Exists"}]}}}'),
    ({"type": "Object", "object": {"describedObject": {"apiVersion": "v1", "kind": "Service", "name": "s"},
                                   "metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "3"}}},
     '{"type":"Object","object":{"target":{"kind":"Service","name":"s","apiVersion":"v1"},"metricName":"rps",'
     '"targetValue":"0","averageValue":"3"}}'),
    ({"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "30"}}},
     '{"type":"External","external":{"metricName":"q","targetValue":"30"}}'),
    ({"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "target": {
        "type": "Utilization", "averageUtilization": 70}}},
     '{"type":"ContainerResource","containerResource":{"name":"cpu","targetAverageUtilization":70,"container":"app"}}'),
    ({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
     '{"type":"Resource","resource":{"name":"memory","targetAverageValue":"1Gi"}}'),
])
def test_other_metrics_travel_in_the_metrics_annotation_and_come_back(metric: dict[str, Any], text: str) -> None:
    out = conv.hub_to_v1(hub({"metrics": [metric, cpu(40)]}))
    assert out["metadata"]["annotations"] == {P + "metrics": f"[{text}]"}
    assert out["spec"]["targetCPUUtilizationPercentage"] == 40
    back = conv.v1_to_hub(out)
    assert back["spec"]["metrics"] == [metric, cpu(40)]
    assert back["metadata"] == {"name": "h"}


def test_behavior_is_marshalled_from_the_internal_type_with_go_field_names() -> None:
    behavior = {"scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}
    out = conv.hub_to_v1(hub({"metrics": [cpu(50)], "behavior": behavior}))
    assert out["metadata"]["annotations"][P + "behavior"] == (
        '{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":"Max",'
        '"Policies":[{"Type":"Pods","Value":1,"PeriodSeconds":60}],"Tolerance":null}}')
    assert conv.v1_to_hub(out)["spec"]["behavior"] == behavior
    # encoding/json matches field names case-insensitively; `{}` is no behavior at all
    lower = {**out, "metadata": {"annotations": {P + "behavior": '{"scaleup":{"selectpolicy":"Min"}}'}}}
    assert conv.v1_to_hub(lower)["spec"]["behavior"] == {"scaleUp": {"selectPolicy": "Min"}}
    empty = {**out, "metadata": {"annotations": {P + "behavior": "{}"}}}
    assert "behavior" not in conv.v1_to_hub(empty)["spec"]


def test_status_metrics_and_conditions_travel_in_annotations() -> None:
    current = {"averageUtilization": 40, "averageValue": "120m"}
    status = {"currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": current}}],
        "conditions": [{"type": "ScalingActive", "status": "False", "reason": "FailedGetScale",
                        "message": "a <b> & c"}]}
    out = conv.hub_to_v1(hub({"metrics": [cpu(50)]}, status))
    assert out["status"] == {"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 40}
    annotations = out["metadata"]["annotations"]
    assert annotations[P + "current-metrics"] == (
        '[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"120m"}}]')
    # a zero time marshals as null; Go's encoder escapes <, > and & in strings
    assert annotations[P + "conditions"] == (
        '[{"type":"ScalingActive","status":"False","lastTransitionTime":null,"reason":"FailedGetScale",'
        '"message":"a \\u003cb\\u003e \\u0026 c"}]')
    back = conv.v1_to_hub(out)
    assert back["status"] == status


def test_annotations_that_do_not_decode_are_ignored_and_every_round_trip_one_is_dropped() -> None:
    v1 = {"apiVersion": "autoscaling/v1", "metadata": {"name": "h", "annotations": {
        P + "metrics": "not json", P + "conditions": '{"not": "a list"}', P + "scale-up-tolerance": "0.1", "x": "y"}},
        "spec": {"scaleTargetRef": REF, "maxReplicas": 2, "targetCPUUtilizationPercentage": 70}}
    out = conv.v1_to_hub(v1)
    assert out["metadata"]["annotations"] == {"x": "y"}
    assert out["spec"]["metrics"] == [cpu(70)]
    assert "conditions" not in out.get("status", {})
    assert conv.without_round_trip_annotations(v1)["metadata"]["annotations"] == {"x": "y"}


def test_go_json_is_compact_and_html_safe() -> None:
    assert conv.go_json({"a": ["<é>", "&", "\u2028"]}) == '{"a":["\\u003cé\\u003e","\\u0026","\\u2028"]}'
    assert json.loads(conv.go_json({"a": "<"})) == {"a": "<"}
