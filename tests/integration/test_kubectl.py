"""kubectl, as installed on the machine, against a running daemon's Kubernetes API.

Every command a user types on a cluster works the same here: apply (client- and server-side),
get in every output format and with -w, describe, patch, label, edit, wait, explain,
api-resources, get --raw, delete; strict field validation refuses a misspelled field with
kubectl's message. One daemon for the session (api_daemon; starting one per test would dominate the
time), shared with other modules: a test names its objects rather than listing all of a kind.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: demo}
data:
  mode: fast
  level: "1"
"""

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
    - name: main
      image: nginx:1.25
      resources:
        requests: {cpu: 100m, memory: 64Mi}
"""


@pytest.fixture
def daemon(api_daemon: Daemon) -> Daemon:
    return api_daemon


def test_apply_get_describe_delete_pod(daemon: Daemon) -> None:
    out = daemon.kubectl("apply", "-f", "-", input=POD)
    assert out.stdout.strip() == "pod/web created"
    wait_for(lambda: daemon.kubectl("get", "pod", "web", "-o", "jsonpath={.status.phase}").stdout == "Running",
             what="pod Running")
    # the pod by name: the daemon is the session's (api_daemon), so other tests' pods may be listed too
    table = daemon.kubectl("get", "pods", "web").stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert table[1].split()[:4] == ["web", "1/1", "Running", "0"]
    wide = daemon.kubectl("get", "pods", "web", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    assert "test-node" in wide[1].split()
    doc = json.loads(daemon.kubectl("get", "pod", "web", "-o", "json").stdout)
    assert doc["spec"]["nodeName"] == "test-node" and doc["metadata"]["uid"]
    assert yaml.safe_load(daemon.kubectl("get", "pod", "web", "-o", "yaml").stdout)["metadata"]["name"] == "web"
    again = daemon.kubectl("apply", "-f", "-", input=POD)
    assert again.stdout.strip() == "pod/web unchanged"
    described = daemon.kubectl("describe", "pod", "web").stdout
    assert "Name:" in described and "web" in described and "test-node" in described
    assert daemon.kubectl("delete", "pod", "web").stdout.strip() == 'pod "web" deleted'
    gone = daemon.kubectl("get", "pod", "web", check=False)
    assert gone.returncode == 1 and 'pods "web" not found' in gone.stderr


def test_server_side_apply_and_conflict(daemon: Daemon) -> None:
    out = daemon.kubectl("apply", "--server-side", "--field-manager=alice", "-f", "-", input=CONFIGMAP)
    assert out.stdout.strip() == "configmap/settings serverside-applied"
    changed = CONFIGMAP.replace("mode: fast", "mode: slow")
    daemon.kubectl("apply", "--server-side", "--field-manager=alice", "-f", "-", input=changed)
    assert daemon.kubectl("get", "cm", "settings", "-o", "jsonpath={.data.mode}").stdout == "slow"
    other = "\n".join(line for line in CONFIGMAP.splitlines() if "level" not in line).replace("fast", "other")
    conflict = daemon.kubectl("apply", "--server-side", "--field-manager=bob", "-f", "-", input=other, check=False)
    assert conflict.returncode != 0
    assert 'conflict with "alice"' in conflict.stderr and ".data.mode" in conflict.stderr
    daemon.kubectl("apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", "-", input=other)
    cm = json.loads(daemon.kubectl("get", "cm", "settings", "-o", "json", "--show-managed-fields").stdout)
    assert cm["data"]["mode"] == "other"
    managers = {m["manager"]: m for m in cm["metadata"]["managedFields"]}
    assert "f:mode" in json.dumps(managers["bob"]["fieldsV1"])
    assert "f:mode" not in json.dumps(managers["alice"]["fieldsV1"])
    # a field alice no longer applies goes away (she owned it alone)
    without_level = "\n".join(line for line in CONFIGMAP.splitlines() if "level" not in line)
    daemon.kubectl("apply", "--server-side", "--field-manager=alice", "-f", "-",
                   input=without_level.replace("mode: fast", "mode: other"))
    data = json.loads(daemon.kubectl("get", "cm", "settings", "-o", "json").stdout)["data"]
    assert data == {"mode": "other"}
    daemon.kubectl("delete", "cm", "settings")


def test_patch_label_edit(daemon: Daemon) -> None:
    daemon.kubectl("apply", "-f", "-", input=POD.replace("name: web", "name: patched"))
    daemon.kubectl("patch", "pod", "patched", "--type=merge", "-p", '{"metadata":{"labels":{"tier":"front"}}}')
    daemon.kubectl("patch", "pod", "patched", "-p",  # strategic: containers merge on name
                   '{"spec":{"containers":[{"name":"main","image":"nginx:1.27"}]}}')
    pod = json.loads(daemon.kubectl("get", "pod", "patched", "-o", "json").stdout)
    assert pod["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert [(c["name"], c["image"]) for c in pod["spec"]["containers"]] == [("main", "nginx:1.27")]
    daemon.kubectl("label", "pod", "patched", "color=blue")
    assert daemon.kubectl("get", "pods", "-l", "color=blue", "-o", "name").stdout.strip() == "pod/patched"
    editor = "sed -i s/color:\\ blue/color:\\ green/"
    daemon.kubectl("edit", "pod", "patched", env={"KUBE_EDITOR": editor, "EDITOR": editor})
    assert daemon.kubectl("get", "pod", "patched", "-o", "jsonpath={.metadata.labels.color}").stdout == "green"
    bad = daemon.kubectl("patch", "pod", "patched", "-p", '{"spec":{"nodeName":"elsewhere"}}', check=False)
    assert bad.returncode != 0 and "Forbidden" in bad.stderr
    daemon.kubectl("wait", "--for=condition=Ready", "pod/patched", "--timeout=20s")
    daemon.kubectl("delete", "pod", "patched", "--wait=true")


def test_get_watch_prints_later_changes(daemon: Daemon) -> None:
    daemon.kubectl("apply", "-f", "-", input=CONFIGMAP.replace("settings", "watched"))
    proc = subprocess.Popen(
        ["kubectl", "--kubeconfig", str(daemon.kubeconfig), "get", "configmaps", "-w", "--no-headers"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        time.sleep(1.0)
        daemon.kubectl("apply", "-f", "-", input=CONFIGMAP.replace("settings", "later"))
        daemon.kubectl("delete", "configmap", "watched")
        time.sleep(1.5)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert "watched" in names and "later" in names, (out, err)
    assert names.index("later") > names.index("watched")
    daemon.kubectl("delete", "configmap", "later")


def test_strict_field_validation(daemon: Daemon) -> None:
    bad = POD.replace("      resources:", "      resource:").replace("name: web", "name: typo")
    out = daemon.kubectl("apply", "-f", "-", input=bad, check=False)
    assert out.returncode != 0
    assert 'strict decoding error: unknown field "spec.containers[0].resource"' in out.stderr
    assert daemon.kubectl("get", "pod", "typo", check=False).returncode == 1


def test_discovery_explain_api_resources(daemon: Daemon) -> None:
    names = daemon.kubectl("api-resources", "-o", "name").stdout.split()
    for name in ("pods", "nodes", "namespaces", "configmaps", "events", "leases.coordination.k8s.io",
                 "resourceclaims.resource.k8s.io", "resourceslices.resource.k8s.io", "deviceclasses.resource.k8s.io",
                 "customresourcedefinitions.apiextensions.k8s.io"):
        assert name in names
    groups = json.loads(daemon.kubectl("get", "--raw", "/apis").stdout)
    resource = next(g for g in groups["groups"] if g["name"] == "resource.k8s.io")
    assert resource["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in resource["versions"]][:3] == ["v1", "v1beta2", "v1beta1"]
    core = json.loads(daemon.kubectl("get", "--raw", "/api/v1").stdout)
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["namespaced"] and "watch" in pods["verbs"] and pods["shortNames"] == ["po"]
    explained = daemon.kubectl("explain", "pods.spec.containers.image").stdout
    assert "FIELD: image" in explained and "<string>" in explained
    nodes = daemon.kubectl("get", "nodes").stdout.splitlines()
    # the session's shared API daemon may hold other files' nodes too (test_authorization's az-node-a sorts first)
    assert nodes[0].split()[:2] == ["NAME", "STATUS"] and ["test-node", "Ready"] in [n.split()[:2] for n in nodes[1:]]
    ns = daemon.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert {"namespace/default", "namespace/kube-system", "namespace/kube-node-lease"} <= set(ns)
