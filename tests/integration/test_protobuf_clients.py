"""Clients that write protobuf bodies, against a running daemon's Kubernetes API.

kubectl's `create` generators go through client-go's typed clientset, whose default request
Content-Type for built-in kinds is application/vnd.kubernetes.protobuf; a typed client's Delete
sends its DeleteOptions the same way. These tests run the installed kubectl, and send
hand-encoded protobuf bodies over HTTPS for what kubectl does not do (a protobuf DeleteOptions
with preconditions, a kind the server has no tables for, a body that is not protobuf).
"""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest
import yaml

from nodeagent.apiserver.protobuf import decoder
from nodeagent.podsapi.podproto import encode_pod
from tests.integration.daemon_helpers import Daemon
from tests.waiting import eventually_blocking

pytestmark = [pytest.mark.integration]

PROTOBUF = "application/vnd.kubernetes.protobuf"
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


@pytest.fixture
def daemon(api_daemon: Daemon) -> Daemon:
    return api_daemon


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num: int, value: bytes | str | int) -> bytes:
    if isinstance(value, int):
        return _varint(num << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(num << 3 | 2) + _varint(len(data)) + data


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return b"k8s\x00" + _field(1, _field(1, api_version) + _field(2, kind)) + _field(2, raw)


def _request(d: Daemon, method: str, path: str, body: bytes, ctype: str = PROTOBUF) -> tuple[int, Any]:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    req = urllib.request.Request(cluster["server"] + path, data=body, method=method, headers={
        "Authorization": f"Bearer {user['token']}", "Content-Type": ctype,
        "Accept": f"{PROTOBUF}, application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, _answer(resp.headers.get("Content-Type", ""), resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, _answer(err.headers.get("Content-Type", ""), err.read())


def _answer(media: str, body: bytes) -> Any:
    """The answer as a dict: client-go's Accept gets protobuf for built-in kinds, as from kube-apiserver."""
    return decoder.decode_answer(body) if media == PROTOBUF else json.loads(body)


@needs_kubectl
def test_kubectl_create_generators_send_protobuf(daemon: Daemon) -> None:
    assert daemon.kubectl("create", "namespace", "pb-ns").stdout.strip() == "namespace/pb-ns created"
    ns = daemon.kubectl_json("get", "namespace", "pb-ns")
    assert ns["metadata"]["name"] == "pb-ns" and ns["status"]["phase"] == "Active"

    out = daemon.kubectl("create", "configmap", "pb-cm", "-n", "pb-ns", "--from-literal=a=b", "--from-literal=c=")
    assert out.stdout.strip() == "configmap/pb-cm created"
    cm = json.loads(daemon.kubectl("get", "configmap", "pb-cm", "-n", "pb-ns", "--show-managed-fields",
                                   "-o", "json").stdout)
    assert cm["data"] == {"a": "b", "c": ""}
    assert [f["manager"] for f in cm["metadata"]["managedFields"]] == ["kubectl-create"]

    assert daemon.kubectl("create", "serviceaccount", "pb-sa", "-n", "pb-ns").stdout.strip() == \
        "serviceaccount/pb-sa created"
    assert daemon.kubectl_json("get", "serviceaccount", "pb-sa", "-n", "pb-ns")["metadata"]["name"] == "pb-sa"

    out = daemon.kubectl("create", "quota", "pb-quota", "-n", "pb-ns", "--hard=pods=10,cpu=1500m,memory=1Gi")
    assert out.stdout.strip() == "resourcequota/pb-quota created"
    quota = daemon.kubectl_json("get", "resourcequota", "pb-quota", "-n", "pb-ns")
    assert quota["spec"]["hard"] == {"pods": "10", "cpu": "1500m", "memory": "1Gi"}

    for kind, name in (("configmap", "pb-cm"), ("serviceaccount", "pb-sa"), ("resourcequota", "pb-quota")):
        assert daemon.kubectl("delete", kind, name, "-n", "pb-ns").stdout.strip() == f'{kind} "{name}" deleted'
        gone = daemon.kubectl("get", kind, name, "-n", "pb-ns", check=False)
        assert gone.returncode == 1 and "not found" in gone.stderr
    daemon.kubectl("delete", "namespace", "pb-ns", "--wait=false")


def test_typed_delete_with_protobuf_delete_options(daemon: Daemon) -> None:
    meta = _field(1, "pb-del") + _field(11, _field(1, "app") + _field(2, "pb"))
    status, cm = _request(daemon, "POST", "/api/v1/namespaces/default/configmaps",
                          _envelope("v1", "ConfigMap", _field(1, meta) + _field(2, _field(1, "k") + _field(2, "v"))))
    assert status == 201, cm
    assert cm["metadata"]["labels"] == {"app": "pb"} and cm["data"] == {"k": "v"}

    def delete_options(uid: str) -> bytes:
        # gracePeriodSeconds=0 (a pointer: zero is sent), preconditions{uid}, propagationPolicy
        raw = _field(1, 0) + _field(2, _field(1, uid)) + _field(4, "Background")
        return _envelope("v1", "DeleteOptions", raw)

    path = "/api/v1/namespaces/default/configmaps/pb-del"
    status, doc = _request(daemon, "DELETE", path, delete_options("00000000-0000-0000-0000-000000000000"))
    assert status == 409, doc
    assert doc["reason"] == "Conflict" and "the UID in the precondition" in doc["message"]
    status, doc = _request(daemon, "DELETE", path, delete_options(cm["metadata"]["uid"]))
    assert status == 200, doc
    with pytest.raises(urllib.error.HTTPError) as err:
        daemon.api_get(path)
    with err.value:
        assert err.value.code == 404


# A Pod as client-go writes it in JSON (encoding/json over the Go struct: an empty non-pointer struct
# is written, creationTimestamp is null), with what a replicaset controller's pod carries: owner,
# generateName, quantities, IntOrString ports, a toleration's seconds, a volume's mode, affinity.
_POD: dict[str, Any] = {
    "metadata": {"generateName": "web-", "creationTimestamp": None, "labels": {"app": "web", "pod-template-hash": "1"},
                 "annotations": {"note": ""},
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1",
                                      "uid": "6d1a6c1e-0000-4000-8000-000000000001", "controller": True,
                                      "blockOwnerDeletion": True}]},
    "spec": {
        "volumes": [{"name": "cfg", "configMap": {"name": "cm", "defaultMode": 420}},
                    {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
        "containers": [
            {"name": "app", "image": "nginx:1.27", "args": ["-g", "daemon off;"],
             "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
             "env": [{"name": "A", "value": "1"}, {"name": "NAME", "valueFrom": {"fieldRef": {
                 "apiVersion": "v1", "fieldPath": "metadata.name"}}}],
             "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "250m"}},
             "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": True}],
             "livenessProbe": {"httpGet": {"path": "/", "port": "http", "scheme": "HTTP"}, "periodSeconds": 5},
             "readinessProbe": {"tcpSocket": {"port": 80}},
             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
             "imagePullPolicy": "IfNotPresent"},
            {"name": "side", "image": "busybox", "resources": {}},
        ],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "nodeSelector": {"disk": "ssd"}, "schedulerName": "default-scheduler", "priority": 0,
        "securityContext": {"runAsUser": 1000, "fsGroup": 2000},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}},
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 300}],
    },
    "status": {},
}


def _stored(pod: dict[str, Any]) -> dict[str, Any]:
    """A stored pod without what differs between two creations (identity, times: the scheduler may mark
    the two pods Unschedulable in different seconds)."""
    meta = {k: v for k, v in pod["metadata"].items()
            if k not in ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields")}
    fields = [{k: v for k, v in f.items() if k != "time"} for f in pod["metadata"]["managedFields"]]
    status = dict(pod.get("status") or {})
    if "conditions" in status:
        status["conditions"] = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                                for c in status["conditions"]]
    # the ServiceAccount admission names each pod's token volume with five random characters
    text = json.dumps({**pod, "metadata": {**meta, "managedFields": fields}, "status": status})
    out: dict[str, Any] = json.loads(re.sub(r"kube-api-access-[a-z0-9]{5}", "kube-api-access-XXXXX", text))
    return out


def test_a_protobuf_pod_is_stored_as_the_same_pod_sent_as_json(daemon: Daemon) -> None:
    """client-go's typed Create of a Pod (a replicaset controller's) sends protobuf: the object stored,
    answered and listed is the one the same Pod sent as JSON makes, managed fields included."""
    path = "/api/v1/namespaces/default/pods"
    # the owner must exist, or the garbage collector takes the pods (as kube-controller-manager's would): a
    # ConfigMap in the ReplicaSet's place, which no workload controller acts on
    status, owner = _request(daemon, "POST", "/api/v1/namespaces/default/configmaps", json.dumps(
        {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "web-owner"}}).encode(),
        ctype="application/json")
    assert status == 201, owner
    sent = copy.deepcopy(_POD)
    sent["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "web-owner",
                                            "uid": owner["metadata"]["uid"], "controller": True,
                                            "blockOwnerDeletion": True}]
    status, from_json = _request(daemon, "POST", path, json.dumps({"kind": "Pod", "apiVersion": "v1", **sent})
                                 .encode(), ctype="application/json")
    assert status == 201, from_json
    status, from_pb = _request(daemon, "POST", path, _envelope("v1", "Pod", encode_pod(sent)))
    assert status == 201, from_pb
    assert from_pb["metadata"]["name"].startswith("web-") and from_pb["metadata"]["name"] != \
        from_json["metadata"]["name"]
    assert _stored(from_pb) == _stored(from_json)
    # the scheduler marks both Unschedulable (no node has disk=ssd): compare once it has seen both
    def scheduled(name: str) -> dict[str, Any]:
        pod: dict[str, Any] = daemon.api_get(f"{path}/{name}")
        return pod if pod["status"].get("conditions") else {}
    got = eventually_blocking(lambda: scheduled(from_pb["metadata"]["name"]), what="PodScheduled on the pod")
    twin = eventually_blocking(lambda: scheduled(from_json["metadata"]["name"]), what="PodScheduled on its twin")
    assert _stored(got) == _stored(twin)
    assert got["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"] == "http"
    assert got["spec"]["containers"][0]["readinessProbe"]["tcpSocket"]["port"] == 80
    assert got["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "500m", "memory": "128Mi"}

    # an update (PUT) and the status subresource read protobuf Pods too
    got["metadata"]["labels"]["changed"] = "yes"
    status, updated = _request(daemon, "PUT", f"{path}/{got['metadata']['name']}", _envelope("v1", "Pod",
                               encode_pod(got)))
    assert status == 200, updated
    assert updated["metadata"]["labels"]["changed"] == "yes"
    updated["status"]["conditions"] = [{"type": "Ready", "status": "False", "lastProbeTime": None,
                                        "lastTransitionTime": "2026-01-02T03:04:05Z", "reason": "Testing"}]
    status, with_status = _request(daemon, "PUT", f"{path}/{got['metadata']['name']}/status",
                                   _envelope("v1", "Pod", encode_pod(updated)))
    assert status == 200, with_status
    assert [(c["type"], c["status"], c.get("reason")) for c in with_status["status"]["conditions"]] == \
        [("Ready", "False", "Testing")]
    for pod in (from_json, from_pb):
        _request(daemon, "DELETE", f"{path}/{pod['metadata']['name']}?gracePeriodSeconds=0", b"",
                 ctype="application/json")
    _request(daemon, "DELETE", "/api/v1/namespaces/default/configmaps/web-owner", b"", ctype="application/json")


@pytest.mark.parametrize(("body", "code", "reason", "message"), [
    (b'{"apiVersion":"v1","kind":"ConfigMap"}', 400, "BadRequest",
     "error decoding request body: provided data does not appear to be a protobuf message, expected prefix "
     "[107 56 115 0]"),
    (b"k8s\x00\x0a\x05\x0a\x02v1", 400, "BadRequest",
     "error decoding request body: truncated length-delimited field 1 at offset 6: 5 bytes announced, 4 left"),
])
def test_protobuf_bodies_the_server_refuses(daemon: Daemon, body: bytes, code: int, reason: str,
                                            message: str) -> None:
    status, doc = _request(daemon, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert (status, doc["reason"], doc["message"]) == (code, reason, message)
