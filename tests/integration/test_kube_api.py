"""The official Python `kubernetes` client, raw HTTPS requests and a CRD against the daemon's API.

Typed CRUD, list with selectors and pagination, a watch resumed from a resourceVersion and a
410 for a too-old one (what informers rely on); NodeResourceTopology as a CRD created with
kubectl, then objects of it created, listed, watched and validated against its schema; and
hostile input: each bad request gets a clear Status and changes nothing already stored.
"""

from __future__ import annotations

import json
import shutil
import ssl
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

pytestmark = pytest.mark.integration


def api(daemon: Daemon) -> Any:
    return config.new_client_from_config(str(daemon.kubeconfig))


def _raw(daemon: Daemon, method: str, path: str, body: bytes | None = None, *, token: bool = True,
         content_type: str = "application/json") -> tuple[int, Any]:
    cfg = yaml.safe_load(daemon.kubeconfig.read_text())
    server = cfg["clusters"][0]["cluster"]["server"]
    ctx = ssl.create_default_context(cafile=str(daemon.base / "state" / "apiserver" / "ca.crt"))
    headers = {"Content-Type": content_type, "Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {cfg['users'][0]['user']['token']}"
    req = urllib.request.Request(server + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def test_typed_crud_selectors_pagination(api_daemon: Daemon) -> None:
    core = client.CoreV1Api(api(api_daemon))
    ns = client.V1Namespace(metadata=client.V1ObjectMeta(name="pyclient"))
    core.create_namespace(ns)
    for i in range(7):
        core.create_namespaced_config_map("pyclient", client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=f"cm-{i}", labels={"parity": "even" if i % 2 == 0 else "odd"}),
            data={"i": str(i)}))
    got = core.read_namespaced_config_map("cm-3", "pyclient")
    assert got.data == {"i": "3"} and got.metadata.uid
    got.data["i"] = "33"
    updated = core.replace_namespaced_config_map("cm-3", "pyclient", got)
    assert int(str(updated.metadata.resource_version)) > int(str(got.metadata.resource_version))
    stale = got
    stale.data["i"] = "stale"
    with pytest.raises(ApiException) as conflict:
        core.replace_namespaced_config_map("cm-3", "pyclient", stale)
    assert conflict.value.status == 409
    assert "the object has been modified" in json.loads(conflict.value.body or "{}")["message"]
    even = core.list_namespaced_config_map("pyclient", label_selector="parity=even")
    assert sorted(str(c.metadata.name) for c in even.items) == ["cm-0", "cm-2", "cm-4", "cm-6"]
    by_name = core.list_namespaced_config_map("pyclient", field_selector="metadata.name=cm-5")
    assert [c.metadata.name for c in by_name.items] == ["cm-5"]
    seen, token = [], None
    while True:
        page = core.list_namespaced_config_map("pyclient", limit=3, _continue=token)
        seen += [c.metadata.name for c in page.items]
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count is not None
    assert seen == [*(f"cm-{i}" for i in range(7)), "kube-root-ca.crt"]  # the publisher's, in every namespace
    with pytest.raises(ApiException) as bad_field:
        core.list_namespaced_config_map("pyclient", field_selector="spec.nope=1")
    assert bad_field.value.status == 400 and "field label not supported: spec.nope" in (bad_field.value.body or "")
    core.delete_namespaced_config_map("cm-0", "pyclient")
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("cm-0", "pyclient")
    assert missing.value.status == 404
    core.delete_namespace("pyclient")
    wait_for(lambda: not any(n.metadata.name == "pyclient" for n in core.list_namespace().items), what="ns gone")
    assert core.list_config_map_for_all_namespaces(field_selector="metadata.namespace=pyclient").items == []


def test_watch_resumes_and_410(api_daemon: Daemon) -> None:
    core = client.CoreV1Api(api(api_daemon))
    first = core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="w-first")))
    rv = first.metadata.resource_version
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w-second")))
    core.delete_namespaced_config_map("w-first", "default")
    w = watch.Watch()
    events = []
    for ev in w.stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=2):
        events.append((ev["type"], ev["object"].metadata.name))
        if len(events) == 2:
            w.stop()
    assert events == [("ADDED", "w-second"), ("DELETED", "w-first")]
    core.delete_namespaced_config_map("w-second", "default")


def test_watch_from_a_forgotten_version_is_410(tmp_path: Path) -> None:
    """After a restart the watch history starts afresh (as after an etcd compaction): a watch from an
    older resourceVersion gets 410 Gone as an ERROR event, and the client relists."""
    base = Path(tempfile.mkdtemp(prefix="na-410-", dir="/tmp"))
    try:
        with running_daemon(base) as d:
            core = client.CoreV1Api(api(d))
            old = core.create_namespaced_config_map("default", client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name="before-restart"))).metadata.resource_version
            core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="later")))
        with running_daemon(base) as d:
            core = client.CoreV1Api(api(d))
            assert core.read_namespaced_config_map("before-restart", "default").metadata.resource_version == old
            with pytest.raises(ApiException) as gone:
                for _ in watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=old,
                                              timeout_seconds=2):
                    pass
            assert gone.value.status == 410
    finally:
        shutil.rmtree(base, ignore_errors=True)


NRT_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: noderesourcetopologies.topology.node.k8s.io
  annotations:
    api-approved.kubernetes.io: https://github.com/kubernetes/enhancements/pull/1870
spec:
  group: topology.node.k8s.io
  scope: Cluster
  names:
    plural: noderesourcetopologies
    singular: noderesourcetopology
    kind: NodeResourceTopology
    shortNames: [node-res-topo]
  versions:
    - name: v1alpha2
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          required: [topologyPolicies, zones]
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            attributes:
              type: array
              items:
                type: object
                required: [name, value]
                properties:
                  name: {type: string}
                  value: {type: string}
            topologyPolicies:
              type: array
              items: {type: string}
            zones:
              type: array
              items:
                type: object
                required: [name, type]
                properties:
                  name: {type: string}
                  type: {type: string}
                  parent: {type: string}
                  costs:
                    type: array
                    items:
                      type: object
                      required: [name, value]
                      properties:
                        name: {type: string}
                        value: {type: integer, format: int64}
                  resources:
                    type: array
                    items:
                      type: object
                      required: [name, capacity, allocatable, available]
                      properties:
                        name: {type: string}
                        capacity:
                          x-kubernetes-int-or-string: true
                          pattern: '^[0-9]+(\\.[0-9]+)?([KMGTPE]i|[numkMGTPE])?$'
                        allocatable: {x-kubernetes-int-or-string: true}
                        available: {x-kubernetes-int-or-string: true}
"""

NRT = """
apiVersion: topology.node.k8s.io/v1alpha2
kind: NodeResourceTopology
metadata:
  name: test-node
topologyPolicies: [SingleNUMANodeContainerLevel]
zones:
  - name: node-0
    type: Node
    costs: [{name: node-0, value: 10}, {name: node-1, value: 20}]
    resources:
      - {name: cpu, capacity: "4", allocatable: "3", available: "3"}
"""


def test_crd_node_resource_topology(api_daemon: Daemon) -> None:
    api_daemon.kubectl("apply", "-f", "-", input=NRT_CRD)
    api_daemon.kubectl("wait", "--for=condition=established", "crd/noderesourcetopologies.topology.node.k8s.io",
                       "--timeout=20s")
    proc_out: list[str] = []

    def watch_it() -> None:
        out = api_daemon.kubectl("get", "--raw",
                                 "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies?watch=true"
                                 "&timeoutSeconds=3", check=False, timeout=20)
        proc_out.append(out.stdout)

    watcher = threading.Thread(target=watch_it)
    watcher.start()
    time.sleep(0.5)
    out = api_daemon.kubectl("apply", "-f", "-", input=NRT)
    assert out.stdout.strip() == "noderesourcetopology.topology.node.k8s.io/test-node created"
    listed = json.loads(api_daemon.kubectl("get", "noderesourcetopologies", "-o", "json").stdout)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["test-node"]
    assert listed["items"][0]["zones"][0]["resources"][0]["available"] == "3"
    assert "test-node" in api_daemon.kubectl("get", "node-res-topo").stdout
    watcher.join(timeout=20)
    events = [json.loads(line) for line in "".join(proc_out).splitlines() if line.strip()]
    assert ("ADDED", "test-node") in [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    bad = NRT.replace("value: 10", "value: ten").replace("name: test-node", "name: bad-node")
    refused = api_daemon.kubectl("apply", "-f", "-", input=bad, check=False)
    assert refused.returncode != 0
    assert "zones[0].costs[0].value" in refused.stderr and "must be of type integer" in refused.stderr
    missing = NRT.replace("topologyPolicies: [SingleNUMANodeContainerLevel]\n", "").replace("test-node", "n2")
    refused = api_daemon.kubectl("apply", "-f", "-", input=missing, check=False)
    assert refused.returncode != 0 and "topologyPolicies: Required value" in refused.stderr
    api_daemon.kubectl("delete", "crd", "noderesourcetopologies.topology.node.k8s.io")
    wait_for(lambda: api_daemon.kubectl("get", "noderesourcetopologies", check=False).returncode != 0,
             what="CR type gone")


def test_bad_input_gets_status_and_changes_nothing(api_daemon: Daemon) -> None:
    core = client.CoreV1Api(api(api_daemon))
    core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="keep"), data={"k": "v"}))
    before = core.read_namespaced_config_map("keep", "default").metadata.resource_version
    path = "/api/v1/namespaces/default/configmaps"
    cases: list[tuple[str, str, bytes | None, dict[str, Any]]] = [
        ("malformed JSON", "POST", b'{"apiVersion": "v1", "kind": ', {"code": 400}),
        ("malformed YAML apply", "PATCH", b"a: [b\n", {"code": 400}),
        ("too large", "POST", b'{"data": {"x": "' + b"y" * (4 * 1024 * 1024) + b'"}}', {"code": 413}),
        ("wrong apiVersion", "POST", b'{"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "a"}}',
         {"code": 400, "in": "does not match the expected API version"}),
        ("unknown kind", "POST", b'{"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "a"}}',
         {"code": 400, "in": "does not match the expected kind"}),
        ("bad name", "POST", b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_DNS"}}',
         {"code": 422, "reason": "Invalid", "in": "metadata.name"}),
        ("update with a bad name", "PUT", b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep"},'
         b' "data": {"bad key!": "x"}}', {"code": 422, "reason": "Invalid"}),
    ]
    for what, method, body, want in cases:
        target = path + ("/keep" if method in ("PUT", "PATCH") else "")
        ctype = "application/apply-patch+yaml" if method == "PATCH" else "application/json"
        if method == "PATCH":
            target += "?fieldManager=test"
        code, status = _raw(api_daemon, method, target, body, content_type=ctype)
        assert code == want["code"], (what, code, status)
        assert status["kind"] == "Status" and status["code"] == code, what
        if "reason" in want:
            assert status["reason"] == want["reason"], what
        if "in" in want:
            assert want["in"] in status["message"], (what, status["message"])
    code, status = _raw(api_daemon, "GET", "/apis/nope.example.com/v1/things")
    assert code == 404 and status["reason"] == "NotFound"
    code, status = _raw(api_daemon, "GET", path + "?labelSelector=a%20in%20(b")
    assert code == 400 and status["reason"] == "BadRequest"
    code, status = _raw(api_daemon, "GET", path, token=False)
    assert code == 401 and status["reason"] == "Unauthorized"
    after = core.read_namespaced_config_map("keep", "default")
    assert after.metadata.resource_version == before and after.data == {"k": "v"}
    assert core.list_namespaced_config_map("default", field_selector="metadata.name=a").items == []
    assert api_daemon.proc.poll() is None
    core.delete_namespaced_config_map("keep", "default")
