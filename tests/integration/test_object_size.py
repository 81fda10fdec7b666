"""Objects too large for etcd (issue 25): the answers of a create, an update, a patch and a status write
whose stored object is more than etcd's --max-request-bytes (1.5 MiB by default), with and without
managedFields making the difference, through the daemon's REST API. When the kube-apiserver tier runs
(NODEAGENT_KUBE_APISERVER=1) the same requests give the real kube-apiserver's answers (v1.37.2 over the
fixture's etcd, started without --max-request-bytes: its default).

Measured there (tests/integration/kubeapiserver.py's fixture, the pod shape {"name": "cN", "image":
"x"}): a create takes at most 11,150 such containers (stored without managedFields: kube-apiserver
tries again without them), 5,212 with its managedFields kept; the Running status the node writes fits
a pod of at most 8,794 containers, so the status write of a pod of 10,000 is refused.
"""

from __future__ import annotations

import base64
import json
import re
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

Send = Callable[..., tuple[int, Any]]
PODS = "/api/v1/namespaces/default/pods"
MERGE = "application/merge-patch+json"
NOW = "2026-11-30T00:00:00Z"
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "blobs.size.nodeagent.test"},
       "spec": {"group": "size.nodeagent.test", "scope": "Namespaced",
                "names": {"plural": "blobs", "singular": "blob", "kind": "Blob", "listKind": "BlobList"},
                "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                              "schema": {"openAPIV3Schema": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}
BLOBS = "/apis/size.nodeagent.test/v1/namespaces/default/blobs"
TOO_LARGE = "etcdserver: request is too large"


def _sender(url: str, ctx: ssl.SSLContext, headers: dict[str, str]) -> Send:
    """(code, decoded body) of a request; a minute's timeout: the real server takes seconds for these."""
    def send(method: str, path: str, body: Any = None, content_type: str = "application/json") -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url + path, data=data, method=method,
                                     headers={**headers, "Accept": "application/json", "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=120) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            with err:
                text = err.read()
            try:
                return err.code, json.loads(text or b"{}")
            except ValueError:  # the real server's "404 page not found" before a new CRD is served
                return err.code, {"message": text.decode(errors="replace")}

    return send


def _daemon_send(d: Daemon) -> Send:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    return _sender(cluster["server"], ctx, {"Authorization": f"Bearer {user['token']}"})


def _pod(name: str, containers: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            # gated: no scheduler, node or controller writes it meanwhile
            "spec": {"schedulingGates": [{"name": "size.nodeagent.test/hold"}],
                     "containers": [{"name": f"c{i}", "image": "x"} for i in range(containers)]}}


def _running(containers: int) -> dict[str, Any]:
    """The Running status a node writes (nodeagent's shape, the kubelet's fields)."""
    return {"status": {
        "phase": "Running", "startTime": NOW, "qosClass": "BestEffort",
        "conditions": [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": NOW}
                       for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")],
        "containerStatuses": [{"name": f"c{i}", "image": "x", "imageID": "", "ready": True, "restartCount": 0,
                               "started": True, "state": {"running": {"startedAt": NOW}}}
                              for i in range(containers)]}}


def _outcome(code: int, doc: Any) -> tuple[Any, ...]:
    """The answer's code and Status (reason, message: the etcd client's byte count left out: it counts the
    whole object, and a timestamp or uid apart it is the same), or for an object whether it kept any
    managedFields (not which entries: not this test's subject)."""
    if code >= 300:
        message = re.sub(r"\(\d+ vs\. ", "(N vs. ", str(doc.get("message")))
        return code, doc.get("reason"), message
    return code, "managedFields", bool(doc["metadata"].get("managedFields"))


def scenarios(send: Send) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}

    def pod_case(what: str, name: str, containers: int) -> None:
        send("DELETE", f"{PODS}/{name}?gracePeriodSeconds=0")
        out[what] = _outcome(*send("POST", PODS, _pod(name, containers)))

    pod_case("create 4,000 containers", "size-4k", 4000)  # fits with its managedFields
    pod_case("create 10,000 containers", "size-10k", 10000)  # fits only without them
    pod_case("create 12,000 containers", "size-12k", 12000)  # etcd refuses it
    pod_case("create 20,000 containers", "size-20k", 20000)  # past the etcd client's 2 MiB
    # the node's Running status: the pod of 4,000 takes it (with managedFields), the pod of 10,000 does not
    out["status 4,000 containers"] = _outcome(*send("PATCH", f"{PODS}/size-4k/status", _running(4000), MERGE))
    out["status 10,000 containers"] = _outcome(*send("PATCH", f"{PODS}/size-10k/status", _running(10000), MERGE))
    for _attempt in range(5):
        code, cur = send("GET", f"{PODS}/size-10k")
        cur["metadata"]["labels"] = {"size": "big"}
        code, doc = send("PUT", f"{PODS}/size-10k", cur)
        if code != 409:
            break
    out["update 10,000 containers"] = _outcome(code, doc)
    # 5,200 containers: created with managedFields (5,212 at most); a 20 KB annotation then fits only
    # without them, by an update and by a patch alike
    pod_case("create 5,200 containers", "size-5k", 5200)
    pod_case("create 5,200 containers again", "size-5k2", 5200)
    for _attempt in range(5):  # a controller may write in between (409): read again
        code, cur = send("GET", f"{PODS}/size-5k")
        cur["metadata"]["annotations"] = {"pad": "p" * 20_000}
        code, doc = send("PUT", f"{PODS}/size-5k", cur)
        if code != 409:
            break
    out["update 5,200 containers"] = _outcome(code, doc)
    out["patch 5,200 containers"] = _outcome(*send(
        "PATCH", f"{PODS}/size-5k2", {"metadata": {"annotations": {"pad": "p" * 20_000}}}, MERGE))
    for name in ("size-4k", "size-5k", "size-5k2", "size-10k", "size-12k", "size-20k"):
        send("DELETE", f"{PODS}/{name}?gracePeriodSeconds=0")

    # a custom resource, stored as JSON
    send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    for _attempt in range(60):
        code, _ = send("POST", BLOBS, {"apiVersion": "size.nodeagent.test/v1", "kind": "Blob",
                                       "metadata": {"name": "probe"}})
        if code in (201, 409):
            break
        time.sleep(1)

    def blob(name: str, size: int) -> dict[str, Any]:
        return {"apiVersion": "size.nodeagent.test/v1", "kind": "Blob", "metadata": {"name": name},
                "spec": {"data": "a" * size}}

    for name, size in (("fits", 1_500_000), ("over", 1_600_000), ("past", 2_200_000)):
        send("DELETE", f"{BLOBS}/{name}")
        out[f"custom create {size:,}"] = _outcome(*send("POST", BLOBS, blob(name, size)))
    send("DELETE", f"{BLOBS}/small")
    code, cur = send("POST", BLOBS, blob("small", 10))
    cur["spec"]["data"] = "b" * 1_600_000
    out["custom update"] = _outcome(*send("PUT", f"{BLOBS}/small", cur))
    out["custom patch"] = _outcome(*send("PATCH", f"{BLOBS}/small", {"spec": {"data": "c" * 1_600_000}}, MERGE))
    out["custom status patch"] = _outcome(*send("PATCH", f"{BLOBS}/small/status",
                                                {"status": {"data": "d" * 1_600_000}}, MERGE))
    code, cur = send("GET", f"{BLOBS}/small")
    cur["status"] = {"data": "e" * 1_600_000}
    out["custom status update"] = _outcome(*send("PUT", f"{BLOBS}/small/status", cur))
    for name in ("fits", "over", "past", "small", "probe"):
        send("DELETE", f"{BLOBS}/{name}")
    return out


EXPECTED = {
    "create 4,000 containers": (201, "managedFields", True),
    "create 5,200 containers": (201, "managedFields", True),
    "create 5,200 containers again": (201, "managedFields", True),
    "update 5,200 containers": (200, "managedFields", False),
    "patch 5,200 containers": (200, "managedFields", False),
    "create 10,000 containers": (201, "managedFields", False),
    "create 12,000 containers": (500, None, TOO_LARGE),
    "create 20,000 containers": (
        500, None, "rpc error: code = ResourceExhausted desc = trying to send message larger than max (N vs. 2097152)"),
    "status 4,000 containers": (200, "managedFields", True),
    "status 10,000 containers": (500, None, TOO_LARGE),
    "update 10,000 containers": (200, "managedFields", False),
    "custom create 1,500,000": (201, "managedFields", True),
    "custom create 1,600,000": (500, None, TOO_LARGE),
    "custom create 2,200,000": (
        500, None, "rpc error: code = ResourceExhausted desc = trying to send message larger than max (N vs. 2097152)"),
    "custom update": (500, None, TOO_LARGE),
    "custom patch": (500, None, TOO_LARGE),
    "custom status patch": (500, None, TOO_LARGE),
    "custom status update": (500, None, TOO_LARGE),
}


def test_objects_too_large_for_etcd(api_daemon: Daemon) -> None:
    got = scenarios(_daemon_send(api_daemon))
    differ = {k: (got.get(k), v) for k, v in EXPECTED.items() if got.get(k) != v}
    assert not differ, differ


@pytest.mark.kube_apiserver
def test_the_same_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = scenarios(_daemon_send(api_daemon))
    theirs = scenarios(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}))
    differ = [(k, ours[k], theirs.get(k)) for k in ours if ours[k] != theirs.get(k)]
    assert not differ, "\n".join(f"{k}:\n ours   {a}\n theirs {b}" for k, a, b in differ)
