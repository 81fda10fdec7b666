"""autoscaling/v2 HorizontalPodAutoscaler's defaults and validation (objects/autoscaling.py), with
kube-apiserver v1.37.2's texts and order (the integration test compares whole answers with the real one)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects import autoscaling as hpa

REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def _obj(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "h"}, "spec": {"scaleTargetRef": REF, "maxReplicas": 3, **spec}}


def _errors(obj: dict[str, Any]) -> list[str]:
    try:
        hpa.validate_hpa(obj)
    except ValidationError as err:
        return [f"{e.path}: {e.detail}" for e in (getattr(err, "errors", None) or [err])]
    return []


def test_defaults() -> None:
    out = hpa.validate_hpa(_obj(behavior={"scaleUp": {"selectPolicy": "Min"}}))
    spec = out["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"][0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 80}
    assert spec["behavior"]["scaleUp"]["selectPolicy"] == "Min"
    assert spec["behavior"]["scaleUp"]["stabilizationWindowSeconds"] == 0
    assert spec["behavior"]["scaleDown"] == {"selectPolicy": "Max", "policies": [
        {"type": "Percent", "value": 100, "periodSeconds": 15}]}


@pytest.mark.parametrize(("spec", "errors"), [
    ({"maxReplicas": 0}, ["spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
                          "spec.maxReplicas: Required value"]),
    ({"minReplicas": 4}, ["spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"]),
    ({"scaleTargetRef": {"apiVersion": "v1", "kind": "Deployment", "name": "a/b"}},
     ["spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
      'spec.scaleTargetRef.apiVersion: Invalid value: "v1": apiVersion must specify API group']),
    ({"metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "Value"}}}]},
     ["spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target averageValue"]),
    ({"behavior": {"scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]}}},
     ["spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800"]),
])
def test_errors(spec: dict[str, Any], errors: list[str]) -> None:
    assert _errors(_obj(**spec)) == errors


def test_status_counts_not_negative() -> None:
    stored = hpa.validate_hpa(_obj())
    with pytest.raises(ValidationError, match="must be greater than or equal to 0"):
        hpa.validate_status({**stored, "status": {"desiredReplicas": -1}}, stored)
