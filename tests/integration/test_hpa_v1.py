"""autoscaling/v1 HorizontalPodAutoscaler through a running daemon's API: the same stored object
read and written in v1 and v2 with upstream's conversion (targetCPUUtilizationPercentage <-> a CPU
Resource metric; every other metric, the behavior, the status metrics and conditions in the
autoscaling.alpha.kubernetes.io/* annotations, with upstream's JSON texts), v1's defaults and
validation, and `kubectl autoscale` (kubectl 1.32 and 1.27 create through v1). When the
kube-apiserver tier runs (NODEAGENT_KUBE_APISERVER=1) the same requests give the real
kube-apiserver's answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_validating_admission_policy import Send, _answer, _sender, daemon_send

pytestmark = [pytest.mark.integration]

NS = "default"
V1 = f"/apis/autoscaling/v1/namespaces/{NS}/horizontalpodautoscalers"
V2 = f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers"
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "hv1-absent"}
PREFIX = "autoscaling.alpha.kubernetes.io/"
NAMES = ("hv1-cpu", "hv1-default", "hv1-rich", "hv1-annot", "hv1-bad", "hv1-bad-annot", "hv1-v2-annot")


def v1(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": NS}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": md,
            "spec": {"scaleTargetRef": REF, "maxReplicas": 4, **spec}}


def rich_v2(name: str) -> dict[str, Any]:
    selector = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}],
                "matchLabels": {"z": "1", "a": "2"}}
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": NS, "annotations": {"keep": "<me>"}},
            "spec": {"scaleTargetRef": REF, "minReplicas": 2, "maxReplicas": 9, "metrics": [
                {"type": "Pods", "pods": {"metric": {"name": "qps", "selector": selector},
                                          "target": {"type": "AverageValue", "averageValue": "1k"}}},
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                            "averageUtilization": 55}}},
                {"type": "Object", "object": {"describedObject": {"apiVersion": "networking.k8s.io/v1",
                                                                  "kind": "Ingress", "name": "main"},
                                              "metric": {"name": "rps"},
                                              "target": {"type": "AverageValue", "averageValue": "300m"}}},
                {"type": "External", "external": {"metric": {"name": "queue"},
                                                  "target": {"type": "Value", "value": "30"}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                               "averageValue": "512Mi"}}},
                {"type": "ContainerResource", "containerResource": {
                    "name": "cpu", "container": "app", "target": {"type": "Utilization", "averageUtilization": 70}}},
            ], "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120,
                                          "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}}}


def _clean(obj: Any) -> Any:
    """An answer without what differs per server and run (uid, times, versions, managers) and
    without what the real kube-controller-manager's autoscaler may have written meanwhile."""
    obj = json.loads(json.dumps(obj))
    md = obj.get("metadata", {})
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        md.pop(key, None)
    return obj


def _spec_view(obj: Any) -> Any:
    """The spec and the spec's annotations of a GET (the status is the autoscaler's by then)."""
    annotations = {k: v for k, v in (obj.get("metadata", {}).get("annotations") or {}).items()
                   if k not in (PREFIX + "conditions", PREFIX + "current-metrics")}
    return {"annotations": annotations, "spec": obj.get("spec")}


def answers(send: Send) -> list[Any]:
    for name in NAMES:
        send("DELETE", f"{V2}/{name}", None)
    out: list[Any] = []

    def created(path: str, body: Any) -> Any:
        code, got, _ = send("POST", path, body)
        assert code == 201, got
        return _clean(got)

    def get(path: str) -> Any:
        code, got, _ = send("GET", path, None)
        assert code == 200, got
        return _spec_view(got)

    # v1 in, v2 out: the CPU target is a Resource metric; none given is 80%
    out.append(created(V1, v1("hv1-cpu", targetCPUUtilizationPercentage=50)))
    out.append(get(f"{V2}/hv1-cpu"))
    out.append(created(V1, v1("hv1-default")))
    out.append(get(f"{V2}/hv1-default"))
    # v2 in, v1 out: everything but the first CPU utilization in annotations, then a v1 write keeps it all
    out.append(created(V2, rich_v2("hv1-rich")))
    code, rich, _ = send("GET", f"{V1}/hv1-rich", None)
    assert code == 200, rich
    out.append(_spec_view(rich))
    rich["spec"]["maxReplicas"] = 10
    rich["metadata"].pop("resourceVersion")
    code, put, _ = send("PUT", f"{V1}/hv1-rich", rich)
    assert code == 200, put
    out.append(_spec_view(put))
    out.append(get(f"{V2}/hv1-rich"))
    # the status through v1: the current metrics and conditions from their annotations
    status_annotations = {
        PREFIX + "current-metrics": json.dumps([
            {"type": "Pods", "pods": {"metricName": "qps", "currentAverageValue": "2"}},
            {"type": "Resource", "resource": {"name": "cpu", "currentAverageUtilization": 40}}]),
        PREFIX + "conditions": json.dumps([{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale",
                                            "lastTransitionTime": "2026-01-02T03:04:05Z"}]),
    }
    status_body = {**rich, "metadata": {**rich["metadata"], "annotations": {
        **rich["metadata"]["annotations"], **status_annotations}},
        "status": {"currentReplicas": 3, "desiredReplicas": 4, "currentCPUUtilizationPercentage": 41}}
    code, status, _ = send("PUT", f"{V1}/hv1-rich/status", status_body)
    assert code == 200, status
    out.append({"annotations": status["metadata"].get("annotations"), "status": status.get("status")})
    code, status2, _ = send("PUT", f"{V2}/hv1-rich/status", {**_clean(put), "apiVersion": "autoscaling/v2",
                                                             "spec": {}, "status": {
        "currentReplicas": 3, "desiredReplicas": 4, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40,
                                                                         "averageValue": "120m"}}}],
        "conditions": [{"type": "ScalingActive", "status": "False", "reason": "FailedGetScale",
                        "message": "a <b> & c", "lastTransitionTime": "2026-01-02T03:04:05Z"}]}})
    assert code == 200, status2
    out.append(status2.get("status"))
    # a client's own round-trip annotations on a v1 create: read, then dropped
    out.append(created(V1, v1("hv1-annot", annotations={
        PREFIX + "metrics": '[{"type":"Pods","pods":{"metricName":"q","targetAverageValue":"5"}}]',
        PREFIX + "behavior": '{"ScaleUp":{"SelectPolicy":"Min","Policies":[{"Type":"Pods","Value":2,'
                             '"PeriodSeconds":30}]}}',
        PREFIX + "conditions": "not json", "other": "kept"}, targetCPUUtilizationPercentage=60)))
    out.append(get(f"{V2}/hv1-annot"))
    # and on a v2 create: dropped unread
    out.append(created(V2, {**rich_v2("hv1-v2-annot"), "metadata": {
        "name": "hv1-v2-annot", "namespace": NS, "annotations": {PREFIX + "metrics": "[]", "x": "y"}}}))
    # v1's validation answers with the internal (v2) field paths
    out.append(_answer(send("POST", V1, v1("hv1-bad", targetCPUUtilizationPercentage=0, minReplicas=5,
                                           maxReplicas=3))))
    out.append(_answer(send("POST", V1, v1("hv1-bad-annot", annotations={
        PREFIX + "metrics": '[{"type":"Pods","pods":{"metricName":""}},{"type":"Nope"}]'}))))
    for name in NAMES:
        send("DELETE", f"{V2}/{name}", None)
    return out


def test_v1_and_v2_views_of_one_autoscaler(api_daemon: Daemon) -> None:
    got = answers(daemon_send(api_daemon))
    cpu = got[0]
    assert cpu["apiVersion"] == "autoscaling/v1"
    assert cpu["spec"] == {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 4,
                           "targetCPUUtilizationPercentage": 50}
    assert got[1]["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 50}}}]
    assert got[2]["spec"]["targetCPUUtilizationPercentage"] == 80
    annotations = got[5]["annotations"]
    assert annotations["keep"] == "<me>"
    assert got[5]["spec"]["targetCPUUtilizationPercentage"] == 55
    assert annotations[PREFIX + "metrics"].startswith(
        '[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"1k","selector":{"matchLabels":{"a":"2",'
        '"z":"1"},"matchExpressions":[{"key":"tier","operator":"In","values":["web"]}]}}},{"type":"Object"')
    assert annotations[PREFIX + "behavior"] == (
        '{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,'
        '"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null},"ScaleDown":'
        '{"StabilizationWindowSeconds":120,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":1,'
        '"PeriodSeconds":60}],"Tolerance":null}}')
    v2_after = got[7]["spec"]
    assert v2_after["maxReplicas"] == 10
    assert [m["type"] for m in v2_after["metrics"]] == ["Pods", "Object", "External", "Resource",
                                                         "ContainerResource", "Resource"]
    assert v2_after["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 120
    assert got[7]["annotations"] == {"keep": "<me>"}
    assert got[8]["status"] == {"currentReplicas": 3, "desiredReplicas": 4, "currentCPUUtilizationPercentage": 40}
    assert got[9]["conditions"][0]["message"] == "a <b> & c"
    assert got[9]["currentMetrics"][0]["resource"]["current"] == {"averageUtilization": 40, "averageValue": "120m"}
    annot_v2 = got[11]
    assert annot_v2["annotations"] == {"other": "kept"}
    assert annot_v2["spec"]["metrics"][0] == {"type": "Pods", "pods": {"metric": {"name": "q"}, "target": {
        "type": "AverageValue", "averageValue": "5"}}}
    assert annot_v2["spec"]["behavior"]["scaleUp"]["selectPolicy"] == "Min"
    assert got[12]["metadata"]["annotations"] == {"x": "y"}
    bad = got[13]
    assert bad[:2] == (422, "Invalid")
    assert "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0" in bad[2]
    assert "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`" in bad[2]
    assert got[14][:2] == (422, "Invalid")


def _find(tool: str) -> str | None:
    """`tool` on PATH, or beside the real kubectl (google-cloud-sdk ships kubectl.1.27 there)."""
    found = shutil.which(tool)
    kubectl = shutil.which("kubectl")
    if found is None and kubectl is not None:
        found = shutil.which(tool, path=os.path.dirname(os.path.realpath(kubectl)))
    return found


def _kubectl(tool: str, kubeconfig: str, *args: str) -> str:
    done = subprocess.run([tool, "--kubeconfig", kubeconfig, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "KUBECTL_KUBERC": "false"})
    assert done.returncode == 0, f"{tool} {' '.join(args)}: {done.stderr}{done.stdout}"
    return done.stdout


@pytest.mark.parametrize("tool", ["kubectl", "kubectl.1.27"])
def test_kubectl_autoscale_creates_through_v1(api_daemon: Daemon, tool: str) -> None:
    """kubectl 1.32 (the installed one) and 1.27 create the autoscaler as autoscaling/v1."""
    path = _find(tool)
    if path is None:
        pytest.skip(f"{tool} is neither on PATH nor beside the installed kubectl")
    name = "hv1-ka-" + tool.replace(".", "-").replace("kubectl", "k")
    kubeconfig = str(api_daemon.kubeconfig)
    _kubectl(path, kubeconfig, "create", "deployment", name, "--image=registry.k8s.io/pause:3.10")
    out = _kubectl(path, kubeconfig, "autoscale", "deployment", name, "--min=2", "--max=5", "--cpu-percent=60")
    assert f"horizontalpodautoscaler.autoscaling/{name} autoscaled" in out
    hpa = api_daemon.kubectl_json("get", "hpa.v2.autoscaling", name, "--show-managed-fields")
    assert hpa["spec"]["minReplicas"] == 2 and hpa["spec"]["maxReplicas"] == 5
    assert hpa["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 60}}}]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    # the managers kubectl named: its create went through v1
    assert [(m["manager"], m["apiVersion"]) for m in hpa["metadata"]["managedFields"]] == [
        ("kubectl-autoscale", "autoscaling/v1")]
    table = _kubectl(path, kubeconfig, "get", "hpa", name)
    assert "cpu: <unknown>/60%" in table
    api_daemon.kubectl("delete", "hpa", name)
    api_daemon.kubectl("delete", "deployment", name)


@pytest.mark.kube_apiserver
def test_the_same_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = answers(daemon_send(api_daemon))
    theirs = answers(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}))
    differ = [(i, a, b) for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    assert not differ, "\n".join(f"answer {i}:\n ours   {a}\n theirs {b}" for i, a, b in differ)
