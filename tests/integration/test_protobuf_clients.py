"""Clients that write protobuf bodies, against a running daemon's Kubernetes API.

kubectl's `create` generators go through client-go's typed clientset, whose default request
Content-Type for built-in kinds is application/vnd.kubernetes.protobuf; a typed client's Delete
sends its DeleteOptions the same way. These tests run the installed kubectl, and send
hand-encoded protobuf bodies over HTTPS for what kubectl does not do (a protobuf DeleteOptions
with preconditions, a kind the server has no tables for, a body that is not protobuf).
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon

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


def _request(d: Daemon, method: str, path: str, body: bytes) -> tuple[int, Any]:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    req = urllib.request.Request(cluster["server"] + path, data=body, method=method, headers={
        "Authorization": f"Bearer {user['token']}", "Content-Type": PROTOBUF,
        "Accept": f"{PROTOBUF}, application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, json.loads(err.read())


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


@pytest.mark.parametrize(("body", "code", "reason", "message"), [
    # A kind the server has no protobuf tables for: 415, as a server that does not speak protobuf for it.
    (_envelope("v1", "Pod", _field(1, _field(1, "p"))), 415, "UnsupportedMediaType",
     "the body of the request was in an unknown format - accepted media types include: application/json, "
     "application/yaml"),
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
