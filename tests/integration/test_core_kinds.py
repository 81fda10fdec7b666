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


PV = """
apiVersion: v1
kind: PersistentVolume
metadata: {name: data-pv}
spec:
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOnce, ReadOnlyMany]
  storageClassName: fast
  hostPath: {path: /srv/data}
"""
PVC = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  resources: {requests: {storage: 1Gi}}
"""
RC = """
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers: [{name: main, image: "nginx:1.25"}]
"""


@needs_kubectl
def test_kubectl_volumes_and_replication_controllers(api_daemon: Daemon) -> None:
    d = api_daemon
    for manifest in (PV, PVC, RC):
        d.kubectl("apply", "-f", "-", input=manifest)
    pv = d.kubectl("get", "pv", "data-pv").stdout.splitlines()
    assert pv[0].split() == ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS", "CLAIM",
                             "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"]
    assert pv[1].split()[:6] == ["data-pv", "2Gi", "RWO,ROX", "Retain", "Pending", "fast"]
    d.kubectl("patch", "pv", "data-pv", "--subresource=status", "--type=merge", "-p",
              '{"status":{"phase":"Available"}}')
    assert d.kubectl("get", "pv", "data-pv", "--no-headers").stdout.split()[4] == "Available"
    pvc = d.kubectl("get", "pvc", "data").stdout.splitlines()
    assert pvc[0].split()[:4] == ["NAME", "STATUS", "VOLUME", "CAPACITY"]
    assert pvc[1].split()[:4] == ["data", "Pending", "fast", "<unset>"]
    refused = d.kubectl("patch", "pvc", "data", "--type=merge", "-p", '{"spec":{"storageClassName":"slow"}}',
                        check=False)
    assert refused.returncode == 1 and "spec is immutable after creation" in refused.stderr
    rc = d.kubectl("get", "rc", "legacy", "-o", "wide").stdout.splitlines()
    assert rc[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    # CURRENT and READY are the replicationcontroller controller's to move (its pods may be there already)
    assert rc[1].split()[:2] == ["legacy", "2"] and rc[1].split()[-1] == "app=legacy"
    assert d.kubectl("scale", "rc", "legacy", "--replicas=5").stdout.strip() == \
        "replicationcontroller/legacy scaled"
    assert d.kubectl("get", "rc", "legacy", "-o", "jsonpath={.spec.replicas}").stdout == "5"
    raw = d.kubectl("get", "--raw", "/api/v1/namespaces/default/replicationcontrollers/legacy/scale").stdout
    scale = json.loads(raw)
    assert scale["status"]["selector"] == "app=legacy" and scale["spec"]["replicas"] == 5
    resources = d.kubectl("api-resources", "--api-group=").stdout.splitlines()
    for row in (["persistentvolumes", "pv", "v1", "false", "PersistentVolume"],
                ["persistentvolumeclaims", "pvc", "v1", "true", "PersistentVolumeClaim"],
                ["replicationcontrollers", "rc", "v1", "true", "ReplicationController"],
                ["endpoints", "ep", "v1", "true", "Endpoints"]):
        assert any(r.split()[:5] == row for r in resources), row
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "manual"}, "subsets": [
        {"addresses": [{"ip": f"10.1.0.{i}"} for i in range(1, 6)], "ports": [{"port": 80}]}]}
    d.kubectl("apply", "-f", "-", input=json.dumps(endpoints))
    ep = d.kubectl("get", "endpoints", "manual").stdout.splitlines()
    assert ep[0].split() == ["NAME", "ENDPOINTS", "AGE"]
    assert ep[1].split()[:5] == ["manual", "10.1.0.1:80,10.1.0.2:80,10.1.0.3:80", "+", "2", "more..."]
    d.kubectl("delete", "ep", "manual")
    d.kubectl("delete", "rc", "legacy")
    d.kubectl("delete", "pvc", "data")
    d.kubectl("delete", "pv", "data-pv")


def test_python_client_volumes_and_replication_controllers(api_daemon: Daemon) -> None:
    api = core(api_daemon)
    pv = api.create_persistent_volume(client.V1PersistentVolume(
        metadata=client.V1ObjectMeta(name="py-pv"),
        spec=client.V1PersistentVolumeSpec(capacity={"storage": "1Gi"}, access_modes=["ReadWriteOnce"],
                                           csi=client.V1CSIPersistentVolumeSource(driver="csi.example.com",
                                                                                  volume_handle="vol-1"))))
    assert pv.status.phase == "Pending" and pv.spec.persistent_volume_reclaim_policy == "Retain"
    claim = api.create_namespaced_persistent_volume_claim("default", client.V1PersistentVolumeClaim(
        metadata=client.V1ObjectMeta(name="py-pvc"),
        spec=client.V1PersistentVolumeClaimSpec(access_modes=["ReadWriteOnce"],
                                                resources=client.V1VolumeResourceRequirements(
                                                    requests={"storage": "1Gi"}))))
    assert claim.status.phase == "Pending" and claim.spec.volume_mode == "Filesystem"
    api.patch_namespaced_persistent_volume_claim("py-pvc", "default", {"spec": {"volumeName": "py-pv"}})
    api.patch_namespaced_persistent_volume_claim_status("py-pvc", "default", {"status": {
        "phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}})
    got = api.read_namespaced_persistent_volume_claim("py-pvc", "default")
    assert (got.status.phase, got.spec.volume_name) == ("Bound", "py-pv")
    assert [p.metadata.name for p in api.list_persistent_volume().items if p.metadata.name == "py-pv"] == ["py-pv"]
    rc = api.create_namespaced_replication_controller("default", client.V1ReplicationController(
        metadata=client.V1ObjectMeta(name="py-rc"),
        spec=client.V1ReplicationControllerSpec(template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels={"app": "py"}),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")])))))
    assert rc.spec.selector == {"app": "py"} and rc.spec.replicas == 1
    api.patch_namespaced_replication_controller_scale("py-rc", "default", {"spec": {"replicas": 3}})
    assert api.read_namespaced_replication_controller_scale("py-rc", "default").spec.replicas == 3
    for delete, args in ((api.delete_namespaced_replication_controller, ("py-rc", "default")),
                         (api.delete_namespaced_persistent_volume_claim, ("py-pvc", "default")),
                         (api.delete_persistent_volume, ("py-pv",))):
        delete(*args)


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
    ("persistentvolumes", {"metadata": {"name": "cmp-pv"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"}}}),
    ("persistentvolumes", {"metadata": {"name": "cmp-pv-csi"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOncePod"],
        "csi": {"driver": "d.example.com", "volumeHandle": "h"}}}),
    ("persistentvolumes", {"metadata": {"name": "cmp-pv-bad1"}, "spec": {"capacity": {"storage": "1Gi"}}}),
    ("persistentvolumes", {"metadata": {"name": "cmp-pv-bad2"}, "spec": {
        "capacity": {"storage": "0"}, "accessModes": ["ReadWriteOnce", "ReadWriteOncePod"],
        "hostPath": {"path": "/d"}, "nfs": {"server": "s", "path": "/"}}}),
    ("persistentvolumes", {"metadata": {"name": "cmp-pv-bad3"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "local": {"path": "/mnt"},
        "persistentVolumeReclaimPolicy": "Keep", "volumeMode": "Raw"}}),
    ("persistentvolumeclaims", {"metadata": {"name": "cmp-pvc"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    ("persistentvolumeclaims", {"metadata": {"name": "cmp-pvc-bad"}, "spec": {"accessModes": []}}),
    ("persistentvolumeclaims", {"metadata": {"name": "cmp-pvc-bad2"}, "spec": {
        "accessModes": ["Sometimes"], "resources": {"requests": {"storage": "-1"}}, "storageClassName": "A_B"}}),
    ("endpoints", {"metadata": {"name": "cmp-ep"}, "subsets": [{"addresses": [{"ip": "10.1.0.1"}],
                                                                "ports": [{"port": 80, "name": "h"}]}]}),
    ("endpoints", {"metadata": {"name": "cmp-ep-bad"}, "subsets": [
        {"addresses": [{"ip": "127.0.0.1"}, {"ip": "nope", "hostname": "A_B"}, {"ip": "169.254.1.1"}],
         "ports": [{"port": 0}, {"port": 81, "protocol": "ICMP"}]}, {}]}),
    ("replicationcontrollers", {"metadata": {"name": "cmp-rc"}, "spec": {"template": {
        "metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
    ("replicationcontrollers", {"metadata": {"name": "cmp-rc-bad"}, "spec": {
        "replicas": -2, "minReadySeconds": -1, "selector": {"a": "b"}, "template": {
            "metadata": {"labels": {"app": "x"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
]


def _normalised(code: int, body: Any) -> Any:
    if code >= 300:
        return code, body.get("reason"), body.get("message"), body.get("details")
    out = {k: v for k, v in body.items() if k != "metadata"}
    out["metadata"] = {k: v for k, v in body["metadata"].items()
                       if k not in ("uid", "resourceVersion", "creationTimestamp", "managedFields")}
    # kube-apiserver's StorageObjectInUseProtection admission adds these; nodeagent does not, as no
    # embedded controller would remove them (README)
    finalizers = [f for f in out["metadata"].get("finalizers", ())
                  if f not in ("kubernetes.io/pv-protection", "kubernetes.io/pvc-protection")]
    out["metadata"].pop("finalizers", None)
    if finalizers:
        out["metadata"]["finalizers"] = finalizers
    status = out.get("status") or {}
    if "lastPhaseTransitionTime" in status:
        status["lastPhaseTransitionTime"] = "<time>"
    spec = out.get("spec") or {}
    for key in _MASKED:
        if key in spec and spec[key] != "None" and spec[key] != ["None"]:
            spec[key] = "<allocated>"
    for port in spec.get("ports") or ():
        if "nodePort" in port:
            port["nodePort"] = "<allocated>"
    return code, out


KINDS = {"services": "Service", "secrets": "Secret", "persistentvolumes": "PersistentVolume",
         "persistentvolumeclaims": "PersistentVolumeClaim", "replicationcontrollers": "ReplicationController",
         "endpoints": "Endpoints"}


def _run(send: Send, plural: str, body: dict[str, Any]) -> Any:
    name = body["metadata"]["name"]
    base = "/api/v1" if plural == "persistentvolumes" else "/api/v1/namespaces/default"
    send("DELETE", f"{base}/{plural}/{name}", None, "application/json")
    return _normalised(*send("POST", f"{base}/{plural}", {"apiVersion": "v1", "kind": KINDS[plural], **body},
                             "application/json"))


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


def _terminating(send: Send, name: str, real: bool) -> None:
    """A Terminating namespace that stays so: the real kube-apiserver's delete leaves it so (no
    namespace controller runs in that tier); nodeagent's embedded namespace controller would empty
    and remove it at once, so there its phase is set through the status subresource."""
    send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
         "application/json")
    if real:
        send("DELETE", f"/api/v1/namespaces/{name}", None, "application/json")
    else:
        send("PATCH", f"/api/v1/namespaces/{name}/status", {"status": {"phase": "Terminating"}},
             "application/merge-patch+json")


def _namespace_answers(send: Send, real: bool) -> list[Any]:
    out: list[Any] = []
    _terminating(send, "cmp-term", real)
    for body in ({"metadata": {"name": "late"}}, {"metadata": {"generateName": "late-"}}):
        code, answer = send("POST", "/api/v1/namespaces/cmp-term/configmaps",
                            {"apiVersion": "v1", "kind": "ConfigMap", **body}, "application/json")
        out.append(_normalised(code, answer))
    send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cmp-fin"}},
         "application/json")
    for finalizers in (["kubernetes", "example.com/x"], ["custom", "a b/c"]):
        ns: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cmp-fin"},
                              "spec": {"finalizers": finalizers}}
        code, answer = send("PUT", "/api/v1/namespaces/cmp-fin/finalize", ns, "application/json")
        out.append(_normalised(code, answer))
    out.append(send("GET", "/api/v1/namespaces/cmp-fin/finalize", None, "application/json")[0])
    code, answer = send("PUT", "/api/v1/namespaces/cmp-fin/finalize", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cmp-fin"}, "spec": {"finalizers": []}},
        "application/json")
    out.append(_normalised(code, answer))
    send("DELETE", "/api/v1/namespaces/cmp-fin", None, "application/json")
    send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cmp-del"}},
         "application/json")
    code, answer = send("DELETE", "/api/v1/namespaces/cmp-del", None, "application/json")
    if code < 300:
        answer["metadata"].pop("deletionTimestamp")
    out.append(_normalised(code, answer))
    return out


@pytest.mark.kube_apiserver
def test_namespace_lifecycle_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    """Creates in a Terminating namespace (403 with the NamespaceTerminating cause, the object's
    name or generateName) and namespaces/finalize (valid and invalid finalizers, GET refused)."""
    ours = _namespace_answers(daemon_sender(api_daemon), real=False)
    theirs = _namespace_answers(kube_sender(kube_apiserver), real=True)
    assert ours == theirs, f"\n ours:   {json.dumps(ours, sort_keys=True)}\n theirs: {json.dumps(theirs)}"


@needs_kubectl
def test_namespace_deleted_with_its_content(api_daemon: Daemon) -> None:
    """kubectl delete namespace: Terminating at once (creates refused), then the embedded
    namespace controller deletes the content and the namespace; kubectl waits for it."""
    d = api_daemon
    d.kubectl("create", "namespace", "doomed")
    d.kubectl("create", "configmap", "c1", "-n", "doomed", "--from-literal=a=b")
    marked = d.kubectl("delete", "namespace", "doomed", "--wait=false").stdout.strip()
    assert marked == 'namespace "doomed" deleted'
    d.kubectl("wait", "--for=delete", "namespace/doomed", "--timeout=30s")
    left = json.loads(d.kubectl("get", "configmaps", "-A", "-o", "json").stdout)["items"]
    assert not [c for c in left if c["metadata"]["namespace"] == "doomed"]
    assert d.kubectl("get", "namespace", "doomed", check=False).returncode == 1
