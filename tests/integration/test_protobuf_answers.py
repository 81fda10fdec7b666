"""Protobuf answers compared with the real kube-apiserver's: GET, LIST and WATCH of the same objects
(a Pod, a Node, a ResourceSlice, a Deployment, a Lease, a CustomResourceDefinition with a nested
schema) and an error Status, asked with client-go's Accept (`application/vnd.kubernetes.protobuf, */*`)
from both servers; the CRD is also created with a protobuf body, as client-go's typed apiextensions
client sends it, and its protobuf create answer compared.

Why bytes and dicts: the decoded answers are compared after normalising what differs by nature (uid,
resourceVersion, timestamps); and each server's bytes must be what the shared encoder writes for its
own decoded answer, so a field order, zero value or envelope rule that differs from Go's Marshal shows
as a byte difference on the real server's answer. Runs against kube-apiserver only in its tier
(NODEAGENT_KUBE_APISERVER=1, the `kube_apiserver` marker); the daemon's half always runs.
"""

from __future__ import annotations

import base64
import copy
import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from nodeagent.apiserver.protobuf import decoder, encoding
from tests.integration import gotools
from tests.integration.conftest import FIXTURES
from tests.integration.daemon_helpers import Daemon, daemon_in_temp_dir
from tests.integration.kubeapiserver import KubeAPIServer

pytestmark = [pytest.mark.integration]

PB = "application/vnd.kubernetes.protobuf"
CLIENT_GO = f"{PB}, */*"
LABEL = "proto23e-answers"
Raw = Callable[[str, str, Any, str], tuple[int, str, bytes]]

# (collection path, object without name/labels)
OBJECTS: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/namespaces/default/pods",
     {"apiVersion": "v1", "kind": "Pod",
      "spec": {"nodeName": "no-such-node", "automountServiceAccountToken": False,
               "containers": [{"name": "c", "image": "pause", "ports": [{"containerPort": 80}],
                               "resources": {"requests": {"cpu": "100m"}}}]}}),
    ("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "spec": {"taints": [
        {"key": "proto23e", "value": "x", "effect": "NoSchedule"}]}}),
    ("/apis/resource.k8s.io/v1/resourceslices",
     {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
      "spec": {"driver": "gpu.example.com", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
               "allNodes": True, "devices": [{"name": "d0", "attributes": {"model": {"string": "a100"}},
                                               "capacity": {"memory": {"value": "40Gi"}}}]}}),
    ("/apis/apps/v1/namespaces/default/deployments",
     {"apiVersion": "apps/v1", "kind": "Deployment",
      "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "pb"}},
               "template": {"metadata": {"labels": {"app": "pb"}},
                            "spec": {"containers": [{"name": "c", "image": "pause"}]}}}}),
    ("/apis/coordination.k8s.io/v1/namespaces/default/leases",
     {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
      "spec": {"holderIdentity": "h", "leaseDurationSeconds": 15, "renewTime": "2026-01-02T03:04:05.123456Z"}}),
]


def _crd(prefix: str) -> tuple[str, dict[str, Any]]:
    """A CRD whose schema uses every JSON form of JSONSchemaProps unlike its message (JSON values,
    schema-or-bool, schema-or-array, schema-or-strings, doubles) and nests schemas three deep."""
    plural = f"{prefix}widgets"
    return "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.answers.example.com"},
        "spec": {"group": "answers.example.com", "scope": "Namespaced",
                 "names": {"plural": plural, "singular": f"{prefix}widget", "kind": f"{prefix.title()}Widget",
                           "listKind": f"{prefix.title()}WidgetList", "shortNames": [f"{prefix}w"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "additionalPrinterColumns": [{"name": "N", "type": "integer", "jsonPath": ".spec.n"}],
                               "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.n",
                                                                        "statusReplicasPath": ".status.n"}},
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-validations": [{"rule": "!has(self.spec) || self.spec.n >= 0",
                                                                 "message": "n"}],
                                   "properties": {
                                       "status": {"type": "object", "properties": {"n": {"type": "integer"}}},
                                       "spec": {"type": "object", "required": ["n"], "properties": {
                                           "n": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                                           "ratio": {"type": "number", "minimum": 0.5, "multipleOf": 0.25},
                                           "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                                           "tags": {"type": "array", "items": {"type": "string", "maxLength": 8},
                                                    "x-kubernetes-list-type": "set"},
                                           "labels": {"type": "object",
                                                      "additionalProperties": {"type": "string"}},
                                           "limits": {"type": "object",
                                                      "properties": {"cpu": {"x-kubernetes-int-or-string": True,
                                                                             "anyOf": [{"type": "integer"},
                                                                                       {"type": "string"}]}}},
                                           "blob": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                                    "default": {"k": [1, "v"]}},
                                       }}}}}}]}}


def _raw_sender(url: str, ctx: ssl.SSLContext, headers: dict[str, str]) -> Raw:
    def send(method: str, path: str, body: Any, accept: str) -> tuple[int, str, bytes]:
        # compact JSON: kube-apiserver keeps a CRD schema's JSON values (default, enum...) as the
        # client's text, spaces included, where nodeagent re-writes them compact (README)
        data, ctype = None, "application/json"
        if isinstance(body, bytes):
            data, ctype = body, PB
        elif body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
        req = urllib.request.Request(url + path, data=data, method=method,
                                     headers={**headers, "Accept": accept, "Content-Type": ctype})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=20) as resp:
                return resp.status, resp.headers.get("Content-Type", ""), resp.read()
        except urllib.error.HTTPError as err:
            with err:
                return err.code, err.headers.get("Content-Type", ""), err.read()
    return send


def daemon_raw(d: Daemon) -> Raw:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    return _raw_sender(cluster["server"], ctx, {"Authorization": f"Bearer {user['token']}"})


def kube_raw(server: KubeAPIServer) -> Raw:
    return _raw_sender(server.url, server._ssl(), {})


def _normalise(doc: Any) -> Any:
    """uid, resourceVersion, times and the names' per-run prefix out; what differs by nature."""
    doc = copy.deepcopy(doc)

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if k in ("uid", "resourceVersion", "creationTimestamp", "time", "lastTransitionTime",
                         "lastUpdateTime", "lastHeartbeatTime"):
                    out[k] = "X"
                else:
                    out[k] = walk(x)
            return out
        if isinstance(v, list | tuple):  # lists, and the watch's (type, object) pairs
            return [walk(x) for x in v]
        return v
    return walk(doc)


def _gone(send: Raw, path: str) -> None:
    """Wait for a deleted CRD to be gone (its custom resources are cleaned up first upstream)."""
    deadline = time.monotonic() + 60
    while send("GET", path, None, "application/json")[0] != 404:
        assert time.monotonic() < deadline, path
        time.sleep(0.2)


def _exact_bytes(body: bytes) -> dict[str, Any]:
    """The answer decoded, after checking the shared encoder writes it back byte for byte."""
    doc = decoder.decode_answer(body)
    assert encoding.encode_object(doc) == body, doc.get("kind")
    return doc


def _established(send: Raw, path: str) -> None:
    """Wait (generous: the real server's CRD controllers run on their own) for a CRD's Established."""
    deadline = time.monotonic() + 60
    while True:
        code, _media, got = send("GET", path, None, "application/json")
        assert code == 200, got
        conds = json.loads(got).get("status", {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conds):
            return
        assert time.monotonic() < deadline, got
        time.sleep(0.2)


def _answers(send: Raw, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, body in [*OBJECTS, _crd(prefix)]:
        kind = body["kind"]
        name = body.get("metadata", {}).get("name") or f"{prefix}-{kind.lower()}"
        obj = {**body, "metadata": {"name": name, "labels": {LABEL: prefix}}}
        send("DELETE", f"{path}/{name}?gracePeriodSeconds=0", None, "application/json")
        if kind == "CustomResourceDefinition":
            _gone(send, f"{path}/{name}")
            # created as client-go's typed client does: a protobuf body, a protobuf answer
            code, media, made = send("POST", path, encoding.encode_object(obj), CLIENT_GO)
            assert (code, media) == (201, PB), decoder.decode_answer(made).get("message") if media == PB else made
            created = _exact_bytes(made)
            created.pop("status", None)  # the CRD controllers' conditions come on each server's timing
            created["metadata"].pop("managedFields", None)  # as below
            out["created"] = _normalise(created)
            _established(send, f"{path}/{name}")
        else:
            code, media, made = send("POST", path, obj, "application/json")
            assert code == 201, made
        code, media, got = send("GET", f"{path}/{name}", None, CLIENT_GO)
        assert (code, media) == (200, PB), got[:200]
        one = _exact_bytes(got)
        rv = one["metadata"]["resourceVersion"]
        code, media, listed = send("GET", f"{path}?labelSelector={LABEL}%3D{prefix}", None, CLIENT_GO)
        assert (code, media) == (200, PB)
        many = _exact_bytes(listed)
        code, media, watched = send("GET", f"{path}?watch=1&labelSelector={LABEL}%3D{prefix}&resourceVersion=0"
                                    "&timeoutSeconds=1", None, CLIENT_GO)
        assert (code, media) == (200, f"{PB};stream=watch")
        events, rest = decoder.decode_watch(watched)
        assert rest == b""
        # the whole stream, frame for frame, is what the shared encoder writes for its events
        assert b"".join(encoding.encode_event(typ, ev) for typ, ev in events) == watched
        assert rv
        kind = body["kind"]
        if kind in ("Deployment", "Pod", "Node"):
            # their status is the controllers' (each server's own timing: kube-controller-manager's pod GC
            # marks a pod on a node that does not exist, the deployment controller its Deployment, node
            # lifecycle a Node that no kubelet renews, with its node.kubernetes.io taints; their writes' managedFields)
            for doc in (one, *many["items"], *(e for _, e in events)):
                doc.pop("status", None)
                doc["metadata"].pop("managedFields", None)
                doc["metadata"].pop("annotations", None)  # the TTL controller's node.alpha.kubernetes.io/ttl
                spec = doc.get("spec") or {}
                if kind == "Node":
                    spec["taints"] = [t for t in spec.get("taints", [])
                                      if not t["key"].startswith("node.kubernetes.io/")]
            events = events[:1]  # a controller's later MODIFIED comes on its own server's timing
        if kind == "CustomResourceDefinition":
            # managedFields differ by known limits outside protobuf: kube-apiserver's CRD controllers
            # record their status write (nodeagent sets the conditions in-process, unrecorded), and
            # the server-defaulted conversion is a pointer struct whose "." nodeagent's field sets
            # cannot tell (apply/typedvalue.py); each server's bytes are still checked above
            for doc in (one, *many["items"], *(e for _, e in events)):
                doc["metadata"].pop("managedFields", None)
        out[kind] = _normalise({"get": one, "list": many, "watch": events})
        send("DELETE", f"{path}/{name}?gracePeriodSeconds=0", None, "application/json")
    _gone(send, f"{_crd(prefix)[0]}/{_crd(prefix)[1]['metadata']['name']}")
    code, media, missing = send("GET", "/api/v1/namespaces/default/pods/no-such-pod", None, CLIENT_GO)
    assert (code, media) == (404, PB)
    out["Status"] = _exact_bytes(missing)
    return out


def test_protobuf_answers_reencode_byte_for_byte(api_daemon: Daemon) -> None:
    got = _answers(daemon_raw(api_daemon), "pa")
    assert got["Status"] == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                             "message": 'pods "no-such-pod" not found', "reason": "NotFound",
                             "details": {"name": "no-such-pod", "kind": "pods"}, "code": 404}


@pytest.mark.kube_apiserver
def test_protobuf_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = _answers(daemon_raw(api_daemon), "pb")
    theirs = _answers(kube_raw(kube_apiserver), "pb")
    # APIService (nodeagent serves none: no aggregation layer): the table reads kube-apiserver's own
    # local APIServices and writes them back byte for byte, one and the list
    send = kube_raw(kube_apiserver)
    code, media, one = send("GET", "/apis/apiregistration.k8s.io/v1/apiservices/v1.apps", None, CLIENT_GO)
    assert (code, media) == (200, PB), one[:200]
    assert _exact_bytes(one)["spec"] == {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800,
                                         "versionPriority": 15}
    code, media, many = send("GET", "/apis/apiregistration.k8s.io/v1/apiservices", None, CLIENT_GO)
    assert (code, media) == (200, PB)
    assert len(_exact_bytes(many)["items"]) > 10
    for kind in theirs:
        for part in ("get", "list", "watch") if kind not in ("Status", "created") else ():
            assert ours[kind][part] == theirs[kind][part], (kind, part, json.dumps(ours[kind][part]),
                                                             json.dumps(theirs[kind][part]))
        assert ours[kind] == theirs[kind], (kind, json.dumps(ours[kind]), json.dumps(theirs[kind]))


@pytest.fixture(scope="module")
def classic_daemon() -> Iterator[Daemon]:
    """A daemon serving classic DRA's v1alpha3 claims and PodSchedulingContexts (classicDRA)."""
    with daemon_in_temp_dir("na-pbc-", agent={"classicDRA": True}) as d:
        yield d


CLASSIC = "/apis/resource.k8s.io/v1alpha3/namespaces/default"


@pytest.mark.parametrize(("resource", "body", "expect"), [
    ("resourceclaims", {
        "apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceClaim",
        "spec": {"controller": "cxl.example.com",
                 "devices": {"requests": [{"name": "acc", "deviceClassName": "cxl.example.com"}]}}},
     lambda doc: doc["spec"]["controller"] == "cxl.example.com"),
    ("podschedulingcontexts", {
        "apiVersion": "resource.k8s.io/v1alpha3", "kind": "PodSchedulingContext",
        "spec": {"selectedNode": "node-a", "potentialNodes": ["node-a", "node-b"]}},
     lambda doc: doc["spec"] == {"selectedNode": "node-a", "potentialNodes": ["node-a", "node-b"]}),
])
def test_classic_dra_kinds_in_protobuf(classic_daemon: Daemon, resource: str, body: dict[str, Any],
                                       expect: Callable[[dict[str, Any]], bool]) -> None:
    """Classic DRA's v1alpha3 kinds (1.31's messages; no current kube-apiserver serves them to compare
    with): created with a protobuf body, read back as protobuf one, listed and watched, each answer
    what the shared encoder writes for its decoded self."""
    send = daemon_raw(classic_daemon)
    name = f"pbc-{resource[:-1]}"
    obj = {**body, "metadata": {"name": name, "labels": {LABEL: "classic"}}}
    code, media, made = send("POST", f"{CLASSIC}/{resource}", encoding.encode_object(obj), CLIENT_GO)
    assert (code, media) == (201, PB), made[:300]
    assert expect(_exact_bytes(made))
    code, media, got = send("GET", f"{CLASSIC}/{resource}/{name}", None, CLIENT_GO)
    assert (code, media) == (200, PB)
    one = _exact_bytes(got)
    assert expect(one) and one["apiVersion"] == "resource.k8s.io/v1alpha3"
    code, media, listed = send("GET", f"{CLASSIC}/{resource}?labelSelector={LABEL}%3Dclassic", None, CLIENT_GO)
    assert (code, media) == (200, PB)
    assert [expect(i) for i in _exact_bytes(listed)["items"]] == [True]
    code, media, watched = send("GET", f"{CLASSIC}/{resource}?watch=1&labelSelector={LABEL}%3Dclassic"
                                "&resourceVersion=0&timeoutSeconds=1", None, CLIENT_GO)
    assert (code, media) == (200, f"{PB};stream=watch")
    events, rest = decoder.decode_watch(watched)
    assert rest == b"" and [t for t, _ in events] == ["ADDED"] and expect(events[0][1])
    assert b"".join(encoding.encode_event(typ, ev) for typ, ev in events) == watched
    send("DELETE", f"{CLASSIC}/{resource}/{name}", None, "application/json")


def test_client_go_crd_clientset_in_protobuf(api_daemon: Daemon) -> None:
    """apiextensions-apiserver's typed clientset (v0.37.2), told to send and accept protobuf only,
    creates, gets, lists and watches a CRD with a nested schema (tests/fixtures/clientgo-crd): what it
    decoded is the CRD as created, the schema's JSON values, wrappers and doubles included."""
    program = gotools.build_cached(FIXTURES / "clientgo-crd", "clientgo-crd")
    _path, crd = _crd("go")
    done = subprocess.run([str(program), "-kubeconfig", str(api_daemon.kubeconfig), "-crd", json.dumps(crd)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    read = {line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1]) for line in done.stdout.splitlines()}
    assert sorted(read) == ["created", "got", "listed", "media", "watched"]
    pb = "application/vnd.kubernetes.protobuf"
    assert read["media"] == [f"POST {pb} -> {pb}", f"GET  -> {pb}", f"GET  -> {pb}", f"GET  -> {pb};stream=watch",
                             f"DELETE {pb} -> {pb}"]
    assert read["watched"]["type"] == "ADDED"
    # Go's client drops apiVersion/kind of typed objects it decoded; the spec is what was sent (with the
    # server's defaults), whole, in every answer
    want = {**crd["spec"], "conversion": {"strategy": "None"}}
    for doc in (read["created"], read["got"], read["listed"]["items"][0], read["watched"]["object"]):
        assert doc["metadata"]["name"] == crd["metadata"]["name"]
        assert doc["spec"] == want
