"""The workload kinds (apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision;
batch/v1 Job, CronJob) through kubectl and the Python kubernetes client against a running daemon:
create (kubectl's generators send protobuf), get with upstream's tables, scale through the scale
subresource, apply (client- and server-side), patch, watch, delete, discovery, validation errors,
and `kubectl rollout status` waiting for the status a deployment controller writes.

The API alone is under test: this module's daemon runs with the embedded workload controllers
switched off (controlPlane.controllers), so no ReplicaSets or pods follow from a Deployment here and
rollout status waits (what it waits for is asserted); test_workload_controllers.py has them on."""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon, running_daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import daemon_sender, kube_sender

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]


@pytest.fixture(scope="module")
def api_daemon() -> Iterator[Daemon]:
    """A daemon of this module: the API without the workload controllers acting on what it stores."""
    base = Path(tempfile.mkdtemp(prefix="na-wapi-", dir="/tmp"))
    agent = {"controlPlane": {"apiServer": {"bindAddress": "127.0.0.1:0"},
                              "controllers": ["*", "-deployment", "-replicaset", "-daemonset", "-job", "-cronjob",
                                              "-statefulset"]}}
    try:
        with running_daemon(base, agent=agent) as d:
            yield d
    finally:
        shutil.rmtree(base, ignore_errors=True)

WORKLOADS = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:16"}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: agent, image: "busybox:1.36"}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: cache}
spec:
  replicas: 2
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec: {containers: [{name: cache, image: "redis:7"}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: pi, image: "perl:5.34"}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: tick, image: "busybox:1.36"}]
"""


def _rows(daemon: Daemon, *args: str) -> list[list[str]]:
    return [line.split() for line in daemon.kubectl("get", *args).stdout.splitlines()]


def test_create_scale_get_and_rollout_status(api_daemon: Daemon) -> None:
    d = api_daemon
    out = d.kubectl("create", "deployment", "web", "--image=pause", "--replicas=3")
    assert out.stdout.strip() == "deployment.apps/web created"
    table = _rows(d, "deploy", "web")
    assert table[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table[1][:4] == ["web", "0/3", "0", "0"] and table[1][4].endswith("s")
    assert d.kubectl("scale", "deployment", "web", "--replicas=5").stdout.strip() == "deployment.apps/web scaled"
    doc = json.loads(d.kubectl("get", "deploy", "web", "-o", "json").stdout)
    assert doc["spec"]["replicas"] == 5 and doc["metadata"]["generation"] == 2
    assert doc["status"] == {}
    scale = json.loads(d.kubectl("get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web/scale").stdout)
    assert scale["spec"] == {"replicas": 5} and scale["status"] == {"replicas": 0, "selector": "app=web"}
    wide = _rows(d, "deploy", "web", "-o", "wide")
    assert wide[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1][:4] == ["web", "0/5", "0", "0"] and wide[1][5:] == ["pause", "pause", "app=web"]
    # no deployment controller writes status.observedGeneration yet: rollout status waits for it
    waiting = d.kubectl("rollout", "status", "deployment", "web", "--timeout=2s", check=False)
    assert waiting.returncode == 1
    assert "Waiting for deployment spec update to be observed..." in waiting.stdout
    # what a controller would write: the status subresource, then rollout status is satisfied
    status = {"status": {"observedGeneration": 2, "replicas": 5, "updatedReplicas": 5, "readyReplicas": 5,
                         "availableReplicas": 5,
                         "conditions": [{"type": "Progressing", "status": "True",
                                         "reason": "NewReplicaSetAvailable"},
                                        {"type": "Available", "status": "True"}]}}
    d.kubectl("patch", "deployment", "web", "--subresource=status", "--type=merge", "-p", json.dumps(status))
    done = d.kubectl("rollout", "status", "deployment", "web", "--timeout=5s")
    assert done.stdout.strip() == 'deployment "web" successfully rolled out'
    assert _rows(d, "deploy", "web")[1][:4] == ["web", "5/5", "5", "5"]
    assert d.kubectl("delete", "deployment", "web").stdout.strip() == 'deployment.apps "web" deleted'


def test_apply_every_kind_and_get_the_tables(api_daemon: Daemon) -> None:
    d = api_daemon
    out = d.kubectl("apply", "-f", "-", input=WORKLOADS).stdout.split("\n")
    assert [line for line in out if line] == ["statefulset.apps/db created", "daemonset.apps/agent created",
                                              "replicaset.apps/cache created", "job.batch/pi created",
                                              "cronjob.batch/tick created"]
    again = d.kubectl("apply", "-f", "-", input=WORKLOADS).stdout
    assert again.count("unchanged") == 5
    text = d.kubectl("get", "deploy,rs,sts,ds,job,cronjob").stdout
    assert "replicaset.apps/cache   2         0         0       " in text
    assert [line.split()[:2] for line in text.splitlines() if line.startswith("statefulset.apps/db")] == \
        [["statefulset.apps/db", "0/2"]]
    ds = _rows(d, "ds", "agent")
    assert ds[0] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE", "SELECTOR", "AGE"]
    assert ds[1][:7] == ["agent", "0", "0", "0", "0", "0", "kubernetes.io/os=linux"]
    job = _rows(d, "job", "pi")
    assert job[0] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"] and job[1][:3] == ["pi", "Running", "0/1"]
    cj = _rows(d, "cj", "tick")
    assert cj[0] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert cj[1][:7] == ["tick", "*/5", "*", "*", "*", "*", "<none>"]
    sel = d.kubectl("get", "job", "pi", "-o", "jsonpath={.spec.selector.matchLabels}").stdout
    uid = d.kubectl("get", "job", "pi", "-o", "jsonpath={.metadata.uid}").stdout
    assert json.loads(sel) == {"batch.kubernetes.io/controller-uid": uid}
    # server-side apply and a strategic merge patch
    d.kubectl("scale", "statefulset", "db", "--replicas=4")
    assert d.kubectl("get", "sts", "db", "-o", "jsonpath={.spec.replicas}").stdout == "4"
    d.kubectl("patch", "rs", "cache", "-p", '{"spec":{"template":{"spec":{"containers":[{"name":"cache",'
              '"image":"redis:7.2"}]}}}}')
    assert d.kubectl("get", "rs", "cache", "-o", "jsonpath={.spec.template.spec.containers[0].image}").stdout == \
        "redis:7.2"
    ssa = d.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=WORKLOADS).stdout
    assert "serverside-applied" in ssa
    names = d.kubectl("get", "all", "-o", "name").stdout.split()
    for want in ("statefulset.apps/db", "daemonset.apps/agent", "replicaset.apps/cache", "job.batch/pi",
                 "cronjob.batch/tick"):
        assert want in names
    for kind, name in (("sts", "db"), ("ds", "agent"), ("rs", "cache"), ("job", "pi"), ("cj", "tick")):
        d.kubectl("delete", kind, name)
    assert d.kubectl("get", "sts,ds,rs,job,cj", "-o", "name").stdout.strip() == ""


def test_validation_errors_are_kube_apiservers(api_daemon: Daemon) -> None:
    d = api_daemon
    bad = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: bad}
spec:
  replicas: -1
  selector: {matchLabels: {app: bad}}
  template:
    metadata: {labels: {app: other}}
    spec: {containers: [{name: c, image: pause}]}
"""
    out = d.kubectl("apply", "-f", "-", input=bad, check=False)
    assert out.returncode == 1
    assert ('The Deployment "bad" is invalid: \n* spec.replicas: Invalid value: -1: must be greater than or equal '
            "to 0\n* spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: "
            "`selector` does not match template `labels`") in out.stderr
    scale = d.kubectl("create", "deployment", "small", "--image=pause")
    assert scale.returncode == 0
    neg = d.kubectl("patch", "deployment", "small", "--subresource=scale", "--type=merge",
                    "-p", '{"spec":{"replicas":-2}}', check=False)
    assert neg.returncode == 1
    assert ('The Scale "small" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0'
            in neg.stderr)


def test_python_client_crud_scale_and_watch(api_daemon: Daemon) -> None:
    api = config.new_client_from_config(str(api_daemon.kubeconfig))
    apps, batch = client.AppsV1Api(api), client.BatchV1Api(api)
    seen: list[tuple[str, int]] = []
    ready, first = threading.Event(), threading.Event()

    def watch_deployments() -> None:
        w = watch.Watch()
        ready.set()
        for ev in w.stream(apps.list_namespaced_deployment, "default", label_selector="team=py",
                           timeout_seconds=10):
            seen.append((ev["type"], ev["object"].spec.replicas))
            first.set()
            if ev["type"] == "DELETED":
                w.stop()

    thread = threading.Thread(target=watch_deployments)
    thread.start()
    ready.wait(5)
    body = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="py", labels={"team": "py"}),
        spec=client.V1DeploymentSpec(
            replicas=2, selector=client.V1LabelSelector(match_labels={"app": "py"}),
            template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels={"app": "py"}),
                                              spec=client.V1PodSpec(containers=[client.V1Container(
                                                  name="c", image="pause")]))))
    created: Any = apps.create_namespaced_deployment("default", body)
    assert created.spec.replicas == 2 and created.spec.strategy.type == "RollingUpdate"
    # The watch thread's request may reach the server after the create (the event set before
    # stream() only says the thread runs): scale only once the watch has seen the Deployment.
    assert first.wait(10)
    scale: Any = apps.patch_namespaced_deployment_scale("py", "default", {"spec": {"replicas": 6}})
    assert scale.spec.replicas == 6 and scale.status.selector == "app=py"
    assert apps.read_namespaced_deployment_scale("py", "default").spec.replicas == 6
    listed = apps.list_namespaced_deployment("default", label_selector="team=py")
    assert [i.metadata.name for i in listed.items] == ["py"]
    apps.delete_namespaced_deployment("py", "default")
    thread.join(15)
    assert seen[0] == ("ADDED", 2) and ("MODIFIED", 6) in seen and seen[-1][0] == "DELETED"
    with pytest.raises(ApiException) as err:
        apps.read_namespaced_deployment("py", "default")
    assert err.value.status == 404
    job = client.V1Job(metadata=client.V1ObjectMeta(name="pyjob"), spec=client.V1JobSpec(
        template=client.V1PodTemplateSpec(spec=client.V1PodSpec(restart_policy="Never", containers=[
            client.V1Container(name="c", image="busybox")]))))
    out: Any = batch.create_namespaced_job("default", job)
    assert out.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": out.metadata.uid}
    batch.delete_namespaced_job("pyjob", "default")


# --- the same requests against the real kube-apiserver (opt-in tier: NODEAGENT_KUBE_APISERVER=1) ---------

_TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "pause"}]}}
_APPS, _BATCH = "/apis/apps/v1/namespaces/default", "/apis/batch/v1/namespaces/default"


def _workload(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    body = {"selector": {"matchLabels": {"app": "x"}}, "template": copy.deepcopy(_TEMPLATE), **spec}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": body}


def _refusals() -> list[tuple[str, dict[str, Any]]]:
    """Invalid objects, each refused with several of ValidateDeployment's (and its kin's) errors."""
    mismatch = _workload("Deployment", "neg", replicas=-1)
    mismatch["spec"]["template"]["metadata"]["labels"] = {"app": "y"}
    no_selector = _workload("Deployment", "nosel")
    del no_selector["spec"]["selector"]
    never = _workload("Deployment", "never")
    never["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    deadline = _workload("DaemonSet", "dsdl")
    deadline["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 3
    no_containers = _workload("ReplicaSet", "rs", replicas=1)
    no_containers["spec"]["template"]["spec"]["containers"] = []
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job"},
           "spec": {"template": copy.deepcopy(_TEMPLATE)}}
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
            "spec": {"schedule": "", "jobTemplate": {"spec": {"template": copy.deepcopy(_TEMPLATE)}}}}
    return [
        (f"{_APPS}/deployments", mismatch), (f"{_APPS}/deployments", no_selector), (f"{_APPS}/deployments", never),
        (f"{_APPS}/deployments", _workload("Deployment", "zero", strategy={
            "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}})),
        (f"{_APPS}/deployments", _workload("Deployment", "empty", selector={})),
        (f"{_APPS}/daemonsets", _workload("DaemonSet", "ds", selector={})), (f"{_APPS}/daemonsets", deadline),
        (f"{_APPS}/statefulsets", _workload("StatefulSet", "sts", podManagementPolicy="Bogus")),
        (f"{_APPS}/replicasets", no_containers), (f"{_BATCH}/jobs", job), (f"{_BATCH}/cronjobs", cron),
    ]


def _normalized(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        out["metadata"].pop(key, None)
    uid = obj["metadata"].get("uid", "")
    return json.loads(json.dumps(out).replace(uid, "UID")) if uid else out


def _answers(send: Any) -> list[Any]:
    out: list[Any] = []
    for path, body in _refusals():
        code, answer = send("POST", path, body)
        out.append((code, answer.get("reason"), answer.get("message")))
    # paused: the session's real kube-controller-manager then creates no ReplicaSet for it (sync with
    # createIfNotExisted=false), so status.replicas stays 0 there as here, where no workload controller runs
    code, created = send("POST", f"{_APPS}/deployments", _workload("Deployment", "good", replicas=2, paused=True))
    out.append((code, _normalized(created)))
    code, scale = send("GET", f"{_APPS}/deployments/good/scale", None)
    out.append((code, scale["spec"], scale["status"]))
    code, refused = send("PATCH", f"{_APPS}/deployments/good/scale", {"spec": {"replicas": -3}},
                         "application/merge-patch+json")
    out.append((code, refused.get("reason"), refused.get("message")))
    code, scaled = send("PATCH", f"{_APPS}/deployments/good/scale", {"spec": {"replicas": 4}},
                        "application/merge-patch+json")
    out.append((code, scaled["spec"], scaled["status"]))
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "okjob"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}}}}
    code, created_job = send("POST", f"{_BATCH}/jobs", job)
    out.append((code, _normalized(created_job)))
    code, sts = send("POST", f"{_APPS}/statefulsets", _workload("StatefulSet", "ident", serviceName="db"))
    for _ in range(10):  # a real kube-controller-manager on the shared server may write its status first: 409
        sts["spec"].update(serviceName="other", podManagementPolicy="Parallel", replicas=3)
        code, refused = send("PUT", f"{_APPS}/statefulsets/ident", sts)
        if code != 409:
            break
        code, sts = send("GET", f"{_APPS}/statefulsets/ident", None)
    out.append((code, refused.get("reason"), refused.get("message")))
    # field selectors: a Job's status.successful; refused labels differ in wording (nodeagent's one text)
    code, listed = send("GET", f"{_BATCH}/jobs?fieldSelector=status.successful%3D0", None)
    out.append((code, [item["metadata"]["name"] for item in listed.get("items") or []]))
    code, listed = send("GET", f"{_APPS}/replicasets?fieldSelector=status.replicas%3D0", None)
    out.append(code)
    return out


@pytest.mark.kube_apiserver
def test_the_same_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    """Refusals (messages with every error, in kube-apiserver's order), the defaulted Deployment and Job
    (generated selector and labels), the scale subresource's reads, refusal and write: identical."""
    mine, theirs = _answers(daemon_sender(api_daemon)), _answers(kube_sender(kube_apiserver))
    assert len(mine) == len(theirs)
    for got, want in zip(mine, theirs, strict=True):
        assert got == want
