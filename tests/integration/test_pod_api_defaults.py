"""Pods (and a Deployment's template) as the API answers their create, and pods refused with every
field error at once: compared with the real kube-apiserver v1.37.2 when that tier runs
(NODEAGENT_KUBE_APISERVER=1), with a pinned expectation for the parts that must hold everywhere.

kube-apiserver decodes a Pod through SetObjectDefaults_Pod (pkg/apis/core/v1): dnsPolicy,
restartPolicy, schedulerName, securityContext {}, terminationGracePeriodSeconds, enableServiceLinks,
each container's imagePullPolicy by tag and terminationMessagePath/Policy, ports' protocol, probes'
timeouts and thresholds, env fieldRefs' apiVersion, volumes' modes, requests from limits. Its 422
lists every field error of ValidatePodCreate, in its order. The admission plugins kube-apiserver
runs by default (ServiceAccount, DefaultTolerationSeconds, Priority) add what nodeagent's embedded
API server does not add; those fields are left out of the comparison (`_normalised`).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import Send, daemon_sender, kube_sender

pytestmark = [pytest.mark.integration]

PODS = "/api/v1/namespaces/default/pods"

SPECS: dict[str, dict[str, Any]] = {
    "plain": {"containers": [{"name": "c", "image": "pause"}]},
    "tagged": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                               "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]}],
               "initContainers": [{"name": "i", "image": "busybox:latest", "restartPolicy": "Always"}]},
    "probes and env": {"containers": [{
        "name": "c", "image": "nginx@sha256:" + "a" * 64,
        "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "livenessProbe": {"httpGet": {"port": 8080}},
        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
        "startupProbe": {"grpc": {"port": 9090}},
        "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/stop"}}},
        "resources": {"limits": {"cpu": "1", "memory": "64Mi"}, "requests": {"cpu": "500m"}}}]},
    "volumes": {"containers": [{"name": "c", "image": "pause:1"}],
                "volumes": [{"name": "e"}, {"name": "s", "secret": {"secretName": "x"}},
                            {"name": "cm", "configMap": {"name": "x"}}, {"name": "h", "hostPath": {"path": "/tmp"}},
                            {"name": "d", "downwardAPI": {"items": [
                                {"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                            {"name": "p", "projected": {"sources": [
                                {"serviceAccountToken": {"path": "t"}},
                                {"downwardAPI": {"items": [
                                    {"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}}]},
    "set by the user": {"restartPolicy": "Never", "dnsPolicy": "Default", "terminationGracePeriodSeconds": 5,
                        "enableServiceLinks": False, "serviceAccountName": "default",
                        "containers": [{"name": "c", "image": "pause", "imagePullPolicy": "Never",
                                        "terminationMessagePolicy": "FallbackToLogsOnError"}]},
}

INVALID: dict[str, dict[str, Any]] = {
    "name and image missing": {"containers": [{}]},
    "several containers": {"containers": [{"name": "Bad_Name", "image": "x"}, {"image": "y"},
                                          {"name": "dup", "image": ""}, {"name": "dup", "image": "z"}],
                           "initContainers": [{"name": "dup", "image": "w", "restartPolicy": "Never"}]},
    "containers and pod fields": {"restartPolicy": "Sometimes",
                                  "containers": [{"name": "c", "image": "", "restartPolicy": "Always"}]},
}


def _normalised(pod: dict[str, Any], case: str) -> dict[str, Any]:
    """The created pod's spec and status, without what default admission plugins add (the service
    account's token volume and mounts, default tolerations, priority and preemption policy)."""
    spec = copy.deepcopy(pod["spec"])
    spec["volumes"] = [v for v in spec.get("volumes") or [] if not v["name"].startswith("kube-api-access-")]
    if not spec["volumes"]:
        del spec["volumes"]
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            c["volumeMounts"] = [m for m in c.get("volumeMounts") or []
                                 if not m["name"].startswith("kube-api-access-")]
            if not c["volumeMounts"]:
                del c["volumeMounts"]
    spec["tolerations"] = [t for t in spec.get("tolerations") or []
                           if t.get("key") not in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]
    if not spec["tolerations"]:
        del spec["tolerations"]
    for key in ("priority", "preemptionPolicy"):
        spec.pop(key, None)
    if pod["spec"].get("serviceAccountName") == "default" and "serviceAccountName" not in SPECS[case]:
        spec.pop("serviceAccountName", None)
        spec.pop("serviceAccount", None)
    return {"spec": spec, "status": pod.get("status")}


def _created(send: Send, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, (case, spec) in enumerate(SPECS.items()):
        name = f"{prefix}-{i}"
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"nodeName": "no-such-node", **spec}}
        code, made = send("POST", PODS, body, "application/json")
        assert code == 201, (case, made.get("message"))
        out[case] = _normalised(made, case)
        send("DELETE", f"{PODS}/{name}", {"gracePeriodSeconds": 0}, "application/json")
    return out


def _refused(send: Send, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, (case, spec) in enumerate(INVALID.items()):
        name = f"{prefix}-bad-{i}"
        code, answer = send("POST", PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                           "spec": spec}, "application/json")
        out[case] = (code, answer.get("message", "").replace(name, "N"),
                     [(c.get("reason"), c.get("field"), c.get("message"))
                      for c in (answer.get("details") or {}).get("causes") or []])
    return out


def test_created_pod_is_defaulted(api_daemon: Daemon) -> None:
    got = _created(daemon_sender(api_daemon), "pd")
    plain = got["plain"]["spec"]
    assert plain == {
        "nodeName": "no-such-node", "containers": [{
            "name": "c", "image": "pause", "imagePullPolicy": "Always", "resources": {},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "securityContext": {}, "schedulerName": "default-scheduler", "enableServiceLinks": True}
    probes = got["probes and env"]["spec"]["containers"][0]
    assert probes["imagePullPolicy"] == "IfNotPresent"
    assert probes["env"][0]["valueFrom"]["fieldRef"] == {"apiVersion": "v1", "fieldPath": "spec.nodeName"}
    assert probes["livenessProbe"] == {"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                       "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert probes["startupProbe"]["grpc"] == {"port": 9090, "service": ""}
    assert probes["resources"]["requests"] == {"cpu": "500m", "memory": "64Mi"}
    tagged = got["tagged"]["spec"]
    assert [p["protocol"] for p in tagged["containers"][0]["ports"]] == ["TCP", "UDP"]
    assert (tagged["containers"][0]["imagePullPolicy"], tagged["initContainers"][0]["imagePullPolicy"]) == \
        ("IfNotPresent", "Always")
    volumes = {v["name"]: v for v in got["volumes"]["spec"]["volumes"]}
    assert volumes["e"] == {"name": "e", "emptyDir": {}}
    assert volumes["s"]["secret"]["defaultMode"] == 420 and volumes["h"]["hostPath"]["type"] == ""
    assert volumes["p"]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"] == 3600
    user = got["set by the user"]["spec"]
    assert (user["restartPolicy"], user["dnsPolicy"], user["enableServiceLinks"], user["serviceAccount"]) == \
        ("Never", "Default", False, "default")


def test_invalid_pod_lists_every_error(api_daemon: Daemon) -> None:
    got = _refused(daemon_sender(api_daemon), "pe")
    assert got["name and image missing"] == (
        422, 'Pod "N" is invalid: [spec.containers[0].name: Required value, spec.containers[0].image: Required value]',
        [("FieldValueRequired", "spec.containers[0].name", "Required value"),
         ("FieldValueRequired", "spec.containers[0].image", "Required value")])
    assert len(got["several containers"][2]) >= 5


@pytest.mark.kube_apiserver
def test_pod_defaults_and_errors_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours, theirs = daemon_sender(api_daemon), kube_sender(kube_apiserver)
    code, sa = theirs("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "default"}},
                      "application/json")
    assert code in (201, 409), sa
    refused = _refused(ours, "pk"), _refused(theirs, "pk")
    for case in INVALID:
        assert refused[0][case] == refused[1][case], case
    created = _created(ours, "pk"), _created(theirs, "pk")
    for case in SPECS:
        assert created[0][case] == created[1][case], case


def _templates(send: Send, prefix: str) -> dict[str, Any]:
    """Each SPECS entry as a Deployment's template, as the create answers it (SetDefaults_PodSpec and
    the container defaults; not SetDefaults_Pod's, which templates do not get)."""
    out: dict[str, Any] = {}
    path = "/apis/apps/v1/namespaces/default/deployments"
    for i, (case, spec) in enumerate(SPECS.items()):
        name = f"{prefix}-{i}"
        spec = {k: v for k, v in spec.items() if k != "restartPolicy"}  # a Deployment's pods restart Always
        body = {"metadata": {"name": name}, "spec": {
            "replicas": 0, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}
        code, made = send("POST", path, body, "application/json")
        assert code == 201, (case, made.get("message"))
        out[case] = made["spec"]["template"]["spec"]
        send("DELETE", f"{path}/{name}", None, "application/json")
    return out


def test_deployment_template_is_defaulted(api_daemon: Daemon) -> None:
    got = _templates(daemon_sender(api_daemon), "td")
    assert "enableServiceLinks" not in got["plain"]
    assert got["plain"]["containers"][0]["imagePullPolicy"] == "Always"
    assert got["probes and env"]["containers"][0]["livenessProbe"]["timeoutSeconds"] == 1
    assert got["probes and env"]["containers"][0]["resources"]["requests"] == {"cpu": "500m"}


@pytest.mark.kube_apiserver
def test_deployment_templates_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours, theirs = _templates(daemon_sender(api_daemon), "tk"), _templates(kube_sender(kube_apiserver), "tk")
    for case in SPECS:
        assert ours[case] == theirs[case], case
