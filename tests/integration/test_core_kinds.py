"""The core v1 kinds the real control-plane components need (issue 23), through real clients:
kubectl (create, apply client- and server-side, get's tables, patch, label, delete,
api-resources) and the Python kubernetes client (create, get, list, watch, patch, delete), on
one daemon; and, in the opt-in tier (NODEAGENT_KUBE_APISERVER=1), the same requests to the real
kube-apiserver v1.37.2, whose answers must be the same (errors exactly, objects normalised:
allocated IPs and ports, uids, times and resourceVersions masked).
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import Send, daemon_sender, kube_sender

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402

pytestmark = [pytest.mark.integration]
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

SERVICE = """
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  selector: {app: web}
  ports:
    - {name: http, port: 80, targetPort: 8080}
    - {name: https, port: 443}
"""


def core(daemon: Daemon) -> Any:
    return client.CoreV1Api(config.new_client_from_config(str(daemon.kubeconfig)))


@needs_kubectl
def test_kubectl_services(api_daemon: Daemon) -> None:
    d = api_daemon
    assert d.kubectl("apply", "-f", "-", input=SERVICE).stdout.strip() == "service/web created"
    table = d.kubectl("get", "svc", "web").stdout.splitlines()
    assert table[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    row = table[1].split()
    assert row[0:2] == ["web", "ClusterIP"] and row[2].startswith("10.0.0.")
    assert row[3:5] == ["<none>", "80/TCP,443/TCP"]
    wide = d.kubectl("get", "services", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[-1] == "SELECTOR" and any(r.split()[0] == "web" and r.split()[-1] == "app=web" for r in wide)
    assert d.kubectl("apply", "-f", "-", input=SERVICE).stdout.strip() == "service/web unchanged"
    ssa = SERVICE.replace("{app: web}\n", "{app: web, tier: front}\n", 1)
    assert d.kubectl("apply", "--server-side", "-f", "-", input=ssa).stdout.strip() == \
        "service/web serverside-applied"
    out = d.kubectl("create", "service", "nodeport", "np", "--tcp=5678:8080").stdout.strip()
    assert out == "service/np created"
    np = json.loads(d.kubectl("get", "service", "np", "-o", "json").stdout)
    assert np["spec"]["type"] == "NodePort" and 30000 <= np["spec"]["ports"][0]["nodePort"] <= 32767
    node_port = np["spec"]["ports"][0]["nodePort"]
    assert d.kubectl("get", "svc", "np", "--no-headers").stdout.split()[4] == f"5678:{node_port}/TCP"
    d.kubectl("patch", "service", "np", "-p", '{"spec":{"ports":[{"port":5678,"targetPort":9090}]}}')
    patched = json.loads(d.kubectl("get", "service", "np", "-o", "json").stdout)["spec"]
    assert patched["ports"][0]["targetPort"] == 9090 and patched["ports"][0]["nodePort"] == node_port
    assert patched["clusterIP"] == np["spec"]["clusterIP"]
    refused = d.kubectl("create", "service", "clusterip", "Bad_Name", "--tcp=80", check=False)
    assert refused.returncode == 1 and "a lowercase RFC 1123 label must consist of" in refused.stderr
    bad = SERVICE.replace("name: web\n", "name: bad\n", 1).replace("{name: http, port: 80, targetPort: 8080}",
                                                                  "{name: http, port: 80, protocol: ICMP}")
    refused = d.kubectl("apply", "-f", "-", input=bad, check=False)
    assert refused.returncode == 1 and 'spec.ports[0].protocol: Unsupported value: "ICMP"' in refused.stderr
    sel = d.kubectl("get", "svc", "--field-selector", "spec.type=NodePort", "-o", "name").stdout.split()
    assert sel == ["service/np"]
    resources = d.kubectl("api-resources", "--api-group=").stdout
    assert any(r.split()[:5] == ["services", "svc", "v1", "true", "Service"] for r in resources.splitlines())
    assert any(r.split()[:4] == ["secrets", "v1", "true", "Secret"] for r in resources.splitlines())
    assert d.kubectl("delete", "svc", "web", "np").stdout.split("\n")[0] == 'service "web" deleted'


@needs_kubectl
def test_kubectl_secrets(api_daemon: Daemon) -> None:
    d = api_daemon
    out = d.kubectl("create", "secret", "generic", "creds", "--from-literal=user=admin", "--from-literal=pw=s3cret")
    assert out.stdout.strip() == "secret/creds created"
    table = d.kubectl("get", "secrets", "creds").stdout.splitlines()
    assert table[0].split() == ["NAME", "TYPE", "DATA", "AGE"] and table[1].split()[:3] == ["creds", "Opaque", "2"]
    got = json.loads(d.kubectl("get", "secret", "creds", "-o", "json").stdout)
    assert got["data"]["user"] == "YWRtaW4="
    d.kubectl("label", "secret", "creds", "tier=db")
    d.kubectl("patch", "secret", "creds", "--type=merge", "-p", '{"stringData":{"extra":"x"}}')
    patched = json.loads(d.kubectl("get", "secret", "creds", "-o", "json").stdout)
    assert patched["data"]["extra"] == "eA==" and "stringData" not in patched
    assert patched["metadata"]["labels"] == {"tier": "db"}
    refused = d.kubectl("create", "secret", "generic", "tls-bad", "--type=kubernetes.io/tls", "--from-literal=a=b",
                        check=False)
    assert refused.returncode == 1 and "data[tls.crt]: Required value" in refused.stderr
    assert d.kubectl("delete", "secret", "creds").stdout.strip() == 'secret "creds" deleted'


def test_python_client_services_and_secrets(api_daemon: Daemon) -> None:
    api = core(api_daemon)
    body = client.V1Service(metadata=client.V1ObjectMeta(name="pysvc", labels={"k": "v"}),
                            spec=client.V1ServiceSpec(selector={"app": "x"},
                                                      ports=[client.V1ServicePort(port=53, protocol="UDP")]))
    made = api.create_namespaced_service("default", body)
    assert made.spec.cluster_ip.startswith("10.0.0.") and made.spec.ports[0].target_port == 53
    assert api.read_namespaced_service("pysvc", "default").spec.cluster_ips == [made.spec.cluster_ip]
    listed = api.list_namespaced_service("default", label_selector="k=v")
    assert [s.metadata.name for s in listed.items] == ["pysvc"]
    stream = watch.Watch().stream(api.list_namespaced_service, "default", field_selector="metadata.name=pysvc",
                                  resource_version=listed.metadata.resource_version, timeout_seconds=5)
    api.patch_namespaced_service_status("pysvc", "default",
                                        {"status": {"conditions": [{"type": "Ready", "status": "True",
                                                                    "reason": "Up", "message": "",
                                                                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    event = next(iter(stream))
    assert event["type"] == "MODIFIED" and event["object"].status.conditions[0].type == "Ready"
    api.delete_namespaced_service("pysvc", "default")
    sec = api.create_namespaced_secret("default", client.V1Secret(metadata=client.V1ObjectMeta(name="pysec"),
                                                                  string_data={"token": "abc"}))
    assert sec.type == "Opaque" and sec.data == {"token": "YWJj"} and sec.string_data is None
    api.patch_namespaced_secret("pysec", "default", {"metadata": {"annotations": {"a": "b"}}})
    assert api.read_namespaced_secret("pysec", "default").metadata.annotations == {"a": "b"}
    assert "pysec" in [s.metadata.name for s in api.list_namespaced_secret("default").items]
    api.delete_namespaced_secret("pysec", "default")


# --- the same answers as the real kube-apiserver -----------------------------------------------------

_MASKED = ("clusterIP", "clusterIPs", "nodePort", "healthCheckNodePort")
CREATES: list[tuple[str, dict[str, Any]]] = [
    ("services", {"metadata": {"name": "cmp-plain"}, "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}}),
    ("services", {"metadata": {"name": "cmp-np"}, "spec": {"type": "NodePort", "ports": [{"port": 80, "name": "h"},
                                                                                        {"port": 81, "name": "i"}]}}),
    ("services", {"metadata": {"name": "cmp-lb"}, "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                                                            "ports": [{"port": 80}]}}),
    ("services", {"metadata": {"name": "cmp-headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}),
    ("services", {"metadata": {"name": "cmp-ext"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}),
    ("services", {"metadata": {"name": "cmp-affinity"}, "spec": {"sessionAffinity": "ClientIP",
                                                                  "ports": [{"port": 80, "targetPort": "web"}]}}),
    ("services", {"metadata": {"name": "Bad_Name"}, "spec": {"ports": [{"port": 80}]}}),
    ("services", {"metadata": {"name": "cmp-bad1"}, "spec": {"ports": []}}),
    ("services", {"metadata": {"name": "cmp-bad2"}, "spec": {"ports": [{"port": 80}, {"port": 80}]}}),
    ("services", {"metadata": {"name": "cmp-bad3"}, "spec": {"type": "Magic", "ports": [{"port": 0,
                                                                                        "protocol": "ICMP"}]}}),
    ("services", {"metadata": {"name": "cmp-bad4"}, "spec": {"ports": [{"port": 80, "nodePort": 30100,
                                                                        "targetPort": "a--b"}]}}),
    ("services", {"metadata": {"name": "cmp-bad5"}, "spec": {"type": "ExternalName"}}),
    ("services", {"metadata": {"name": "cmp-bad6"}, "spec": {"externalTrafficPolicy": "Local",
                                                              "ports": [{"port": 80}]}}),
    ("services", {"metadata": {"name": "cmp-bad7"}, "spec": {"clusterIP": "10.99.0.1", "ports": [{"port": 80}]}}),
    ("secrets", {"metadata": {"name": "cmp-opaque"}, "stringData": {"a": "b"}, "data": {"c": "ZA=="}}),
    ("secrets", {"metadata": {"name": "cmp-tls"}, "type": "kubernetes.io/tls"}),
    ("secrets", {"metadata": {"name": "cmp-sa"}, "type": "kubernetes.io/service-account-token"}),
    ("secrets", {"metadata": {"name": "cmp-basic"}, "type": "kubernetes.io/basic-auth"}),
    ("secrets", {"metadata": {"name": "cmp-ssh"}, "type": "kubernetes.io/ssh-auth"}),
    ("secrets", {"metadata": {"name": "cmp-key"}, "data": {"a b": ""}}),
]


def _normalised(code: int, body: Any) -> Any:
    if code >= 300:
        return code, body.get("reason"), body.get("message"), body.get("details")
    out = {k: v for k, v in body.items() if k != "metadata"}
    # generation: nodeagent's store sets it on every kind, upstream only where a strategy does (README)
    out["metadata"] = {k: v for k, v in body["metadata"].items()
                       if k not in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")}
    spec = out.get("spec") or {}
    for key in _MASKED:
        if key in spec and spec[key] != "None" and spec[key] != ["None"]:
            spec[key] = "<allocated>"
    for port in spec.get("ports") or ():
        if "nodePort" in port:
            port["nodePort"] = "<allocated>"
    return code, out


def _run(send: Send, plural: str, body: dict[str, Any]) -> Any:
    name = body["metadata"]["name"]
    send("DELETE", f"/api/v1/namespaces/default/{plural}/{name}", None, "application/json")
    kind = {"services": "Service", "secrets": "Secret"}[plural]
    return _normalised(*send("POST", f"/api/v1/namespaces/default/{plural}",
                             {"apiVersion": "v1", "kind": kind, **body}, "application/json"))


@pytest.mark.kube_apiserver
def test_the_same_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours, theirs = daemon_sender(api_daemon), kube_sender(kube_apiserver)
    differ = []
    for plural, body in CREATES:
        mine, real = _run(ours, plural, body), _run(theirs, plural, body)
        if mine != real:
            differ.append(f"{body['metadata']['name']}\n ours:   {json.dumps(mine, sort_keys=True)}\n"
                          f" theirs: {json.dumps(real, sort_keys=True)}")
    assert not differ, "\n".join(differ)
