"""Workloads on the embedded control plane against the real one, whole objects compared.

Two daemons with the same node, virtual nodes and plugins: one on the embedded control plane (its API
server, deployment/replicaset/daemonset/job controllers and scheduler), one with controlPlane.kubernetes
(etcd, kube-apiserver, kube-scheduler and kube-controller-manager v1.37.2 from the fixture's multi-role
binary; its node joins). The same kubectl steps on both:
- a Deployment of 3 pinned to the node, scaled to 5, back to 3, then a new template (a rolling update);
- a DaemonSet over the node and its two virtual nodes;
- a Job of two completions whose pods finish (nodeagent's finish-after annotation);
- a Job of three completions, one at a time, whose finished pods are deleted as they are counted: the
  running pod holds batch.kubernetes.io/job-tracking on both, succeeded reaches 3 although no finished
  pod is left (the counts live in status, as upstream's tracking with finalizers keeps them);
- an Indexed Job whose successPolicy is met by its index 0 (SuccessCriteriaMet, then Complete);
- an Indexed Job with backoffLimitPerIndex 1 whose pods all fail: each index retried once after its
  own backoff (the replacement carries job-index-failure-count 1), then failedIndexes "0,1" and Failed
  (FailedIndexes);
- a StatefulSet (OrderedReady) created with 0 replicas, scaled to 3, then back to 1;
- a DaemonSet whose pod keeps failing on the node: both controllers delete it with FailedDaemonPod
  events of the same text, spaced by the same failedPodsBackoff schedule (1 s, then 2 s, then 4 s
  after the first failures; compared within the events' one-second resolution);
- a CronJob firing once (every minute, created early in a minute on both sides so that both fire for
  the same one), its Job run to completion.
At the end, the events each controller posted about its objects (type, reason, message, source,
the involved object; no ownerReferences on either side) are compared as sets.
After each step, once both sides have settled, the objects are compared whole after normalising only
what differs by construction between two clusters: uids, resourceVersions, creation and transition
times, managedFields' times (their entries compared as a set: equal times order them by
manager), the random suffix of pod names (generateName + 5 characters), and pod
status fields the node fills from its own clock or addresses. Everything else — the API server's
defaulting of spec and template, the controllers' labels, annotations (revision, desired-replicas,
max-replicas), owner references, status counters, observedGeneration, conditions with their reasons
and messages, the ReplicaSets' names (the pod-template hash of the defaulted template) — must be equal.

Opt-in with the kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1: the same cached fixture binary),
skipped with its reason otherwise. About 4 minutes: the real control plane's start dominates.
"""

from __future__ import annotations

import itertools
import json
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.integration.daemon_helpers import BIN, wait_for
from tests.integration.kubeapiserver import fixture_binary
from tests.integration.test_real_control_plane import NODE, RealCP

pytestmark = [pytest.mark.integration, pytest.mark.kube_apiserver, pytest.mark.timeout(900)]

Side = RealCP
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
DROPPED_META = ("uid", "resourceVersion", "creationTimestamp", "selfLink")


@pytest.fixture(scope="module")
def sides() -> Iterator[tuple[Side, Side]]:
    """(the embedded control plane, the real one), both started and their node Ready."""
    binary = fixture_binary()
    for tool in ("nodeagent-device-plugin", "nodeagent-dra-driver"):
        if not (BIN / tool).exists():
            pytest.skip(f"{tool} is not installed in this environment")
    with tempfile.TemporaryDirectory(prefix="na-wr", dir="/tmp") as tmp:
        (Path(tmp) / "e").mkdir()
        (Path(tmp) / "r").mkdir()
        embedded, real = Side(Path(tmp) / "e", None), Side(Path(tmp) / "r", binary)
        try:
            for side in (embedded, real):
                side.start()
            for side in (embedded, real):
                wait_for(lambda s=side: all(_ready(s, n) for n in (NODE, "rcv-0", "rcv-1")), timeout=180,
                         what=f"the node and virtual nodes Ready\n{side.log()[-3000:]}")
            yield embedded, real
        finally:
            for side in (embedded, real):
                if side.proc is not None:
                    side.stop()


def _ready(side: Side, node: str) -> bool:
    out = side.kubectl("get", "node", node, "-o", "json", check=False)
    if not out:
        return False
    conditions = json.loads(out)["status"].get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def normalise(obj: Any, names: dict[str, str]) -> Any:
    """Drop what two clusters differ in by construction; map run-specific names and uids to stable ones."""
    if isinstance(obj, dict):
        out = {normalise(k, names): normalise(v, names) for k, v in obj.items() if k not in DROPPED_META}
        if isinstance(out.get("managedFields"), list):  # each writer's entry, in an order its times decide
            out["managedFields"] = sorted(({**e, "fieldsV1": _without_dots(e.get("fieldsV1"))}
                                           for e in out["managedFields"]), key=lambda e: json.dumps(e, sort_keys=True))
        return out
    if isinstance(obj, list):
        return [normalise(v, names) for v in obj]
    if isinstance(obj, str):
        if TIME.match(obj):
            return "<time>"
        for real_name, stable in names.items():
            obj = obj.replace(real_name, stable)
        return obj
    return obj


def _without_dots(fields: Any) -> Any:
    """A FieldsV1 set without its "." members: nodeagent's field sets leave out the "." upstream writes
    for a pointer struct's own presence (apply/typedvalue.py), a written-down limit; every field each
    manager owns is still compared."""
    if not isinstance(fields, dict):
        return fields
    return {k: _without_dots(v) for k, v in fields.items()
            if k != "." and k != _SERVICE_NAME}


_SERVICE_NAME = "f:serviceName"
"""Left out: a StatefulSet created without spec.serviceName stores "" (a Go string without omitempty)
and kube-apiserver's create owns no field equal to the Go zero value (its managedFields compare with an
empty object of the type); nodeagent's create fields are taken from the JSON (written down)."""


def _pod_names(pods: list[dict[str, Any]]) -> dict[str, str]:
    """A pod's generated name -> generateName + its rank among its siblings (sorted by name per side
    would be random: rank by node, then by the order the controller created them is not observable,
    so siblings are ranked by node name and then treated as a set)."""
    out: dict[str, str] = {}
    counts: dict[str, int] = {}
    for pod in sorted(pods, key=lambda p: (p["metadata"].get("generateName", ""), p["spec"].get("nodeName", ""))):
        meta = pod["metadata"]
        prefix = meta.get("generateName")
        if prefix and meta["name"].startswith(prefix) and len(meta["name"]) == len(prefix) + 5:
            n = counts.get(prefix, 0)
            counts[prefix] = n + 1
            out[meta["name"]] = f"{prefix}<{n}>"
    return out


def snapshot(side: Side, kind: str, selector: str) -> dict[str, Any]:
    """The workload, its ReplicaSets or ControllerRevisions, its pods and its events, normalised."""
    mf = "--show-managed-fields"  # each writer's managedFields entry compared too
    objects = side.get(kind, "-l", selector, mf)["items"]
    owned_kind = {"deployments": "replicasets", "cronjobs": "jobs", "statefulsets": "controllerrevisions"}.get(kind)
    owned = side.get(owned_kind, "-l", selector, mf)["items"] if owned_kind else []
    pods = side.get("pods", "-l", selector, mf)["items"]
    names = _pod_names(pods)
    for pod in pods:  # the ServiceAccount admission's generated volume name
        for vol in pod["spec"].get("volumes") or ():
            if vol["name"].startswith("kube-api-access-"):
                names[vol["name"]] = "kube-api-access-<generated>"
    for obj in (*objects, *owned, *pods):
        meta = obj["metadata"]
        names[meta["uid"]] = f"<uid of {obj.get('kind', 'Pod')} {names.get(meta['name'], meta['name'])}>"
        if obj.get("kind") == "Job" and kind == "cronjobs":  # the scheduled minute's number
            names[meta["name"]] = "<job of the scheduled minute>"
    pod_view = sorted((_pod(p, names) for p in pods), key=json.dumps)
    return {"objects": normalise(objects, names),
            "owned": sorted(normalise(owned, names), key=lambda o: o["metadata"]["name"]),
            "pods": pod_view}


def _pod(pod: dict[str, Any], names: dict[str, str]) -> Any:
    """metadata, spec and the status fields a workload controller reads (phase, conditions' types and
    statuses, container readiness and restarts); not the runtime's own fields."""
    status = pod.get("status") or {}
    kept = {"phase": status.get("phase"), "qosClass": status.get("qosClass"),
            "conditions": sorted((c["type"], c["status"]) for c in status.get("conditions") or []),
            "containers": [(c["name"], c.get("ready"), c.get("restartCount"), sorted(c.get("state") or {}))
                           for c in status.get("containerStatuses") or []]}
    meta = {k: v for k, v in pod["metadata"].items() if k not in ("name",)}
    return normalise({"metadata": meta, "spec": pod["spec"], "status": kept}, names)


def settled(side: Side, kind: str, name: str, check: Callable[[dict[str, Any]], bool]) -> None:
    def done() -> bool:
        out = side.kubectl("get", kind, name, "-o", "json", check=False)
        if not out:
            return False
        obj = json.loads(out)
        return obj["status"].get("observedGeneration") == obj["metadata"].get("generation") and check(obj)

    wait_for(done, timeout=120, what=f"{kind}/{name} settled\n{side.log()[-2000:]}")


def both(sides: tuple[Side, Side], action: Callable[[Side], object]) -> None:
    for side in sides:
        action(side)


def assert_same(sides: tuple[Side, Side], kind: str, selector: str, step: str) -> None:
    embedded, real = (snapshot(side, kind, selector) for side in sides)
    if embedded != real:
        a = json.dumps(embedded, indent=1, sort_keys=True).splitlines()
        b = json.dumps(real, indent=1, sort_keys=True).splitlines()
        import difflib
        diff = "\n".join(difflib.unified_diff(a, b, "embedded", "real", lineterm="", n=2))
        raise AssertionError(f"{step}: the embedded control plane and the real one differ:\n{diff}")


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {
                  "metadata": {"labels": {"app": "web"}},
                  "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE},
                           "containers": [{"name": "c", "image": "pause:1",
                                           "resources": {"requests": {"cpu": "10m", "memory": "8Mi"}}}]}}}}


def _available(replicas: int) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        st = obj["status"]
        return (st.get("replicas") == replicas and st.get("updatedReplicas") == replicas
                and st.get("availableReplicas") == replicas and st.get("readyReplicas") == replicas
                and any(c["type"] == "Progressing" and c.get("reason") == "NewReplicaSetAvailable"
                        for c in st.get("conditions") or []))
    return check


def test_a_deployment_scaled_and_rolled_is_the_same_object_on_both(sides: tuple[Side, Side]) -> None:
    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(DEPLOYMENT)))
    both(sides, lambda s: settled(s, "deployment", "web", _available(3)))
    assert_same(sides, "deployments", "app=web", "created with 3 replicas")
    both(sides, lambda s: s.kubectl("scale", "deployment", "web", "--replicas=5"))
    both(sides, lambda s: settled(s, "deployment", "web", _available(5)))
    assert_same(sides, "deployments", "app=web", "scaled to 5")
    both(sides, lambda s: s.kubectl("scale", "deployment", "web", "--replicas=3"))
    both(sides, lambda s: settled(s, "deployment", "web", _available(3)))
    both(sides, lambda s: wait_for(lambda: len(s.get("pods", "-l", "app=web")["items"]) == 3, timeout=60,
                                   what="the scaled-down pods gone"))
    assert_same(sides, "deployments", "app=web", "scaled back to 3")
    both(sides, lambda s: s.kubectl("set", "image", "deployment/web", "c=pause:2"))
    both(sides, lambda s: settled(s, "deployment", "web", _available(3)))
    both(sides, lambda s: wait_for(lambda: len(s.get("pods", "-l", "app=web")["items"]) == 3, timeout=60,
                                   what="the old ReplicaSet's pods gone"))
    assert_same(sides, "deployments", "app=web", "rolled to a new template")


RC = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
      "spec": {"replicas": 2, "template": {
          "metadata": {"labels": {"app": "legacy"}},
          "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE},
                   "containers": [{"name": "c", "image": "pause:1"}]}}}}


def test_a_replication_controller_scaled_is_the_same_object_on_both(sides: tuple[Side, Side]) -> None:
    """kube-controller-manager's replicationcontroller (the ReplicaSet controller over RCs): the RC's selector and
    labels defaulted from its template, its pods owned by `v1 ReplicationController`, its status without
    terminatingReplicas."""
    def ready(replicas: int) -> Callable[[dict[str, Any]], bool]:
        return lambda obj: (obj["status"].get("replicas"), obj["status"].get("availableReplicas")) == \
            (replicas, replicas)

    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(RC)))
    both(sides, lambda s: settled(s, "rc", "legacy", ready(2)))
    assert_same(sides, "replicationcontrollers", "app=legacy", "created with 2 replicas")
    both(sides, lambda s: s.kubectl("scale", "rc", "legacy", "--replicas=1"))
    both(sides, lambda s: settled(s, "rc", "legacy", ready(1)))
    both(sides, lambda s: wait_for(lambda: len(s.get("pods", "-l", "app=legacy")["items"]) == 1, timeout=60,
                                   what="the scaled-down pod gone"))
    assert_same(sides, "replicationcontrollers", "app=legacy", "scaled to 1")


DAEMONSET = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "labels": {"app": "agent"}},
             "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
                 "metadata": {"labels": {"app": "agent"}},
                 "spec": {"containers": [{"name": "c", "image": "pause:1"}]}}}}


def test_a_daemonset_over_the_node_and_its_virtual_nodes_is_the_same_on_both(sides: tuple[Side, Side]) -> None:
    def ready_everywhere(obj: dict[str, Any]) -> bool:
        st = obj["status"]
        return bool(st.get("desiredNumberScheduled") == 3 and st.get("numberAvailable") == 3
                    and st.get("updatedNumberScheduled") == 3)

    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(DAEMONSET)))
    both(sides, lambda s: settled(s, "daemonset", "agent", ready_everywhere))
    assert_same(sides, "daemonsets", "app=agent", "a DaemonSet over three nodes")


JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch", "labels": {"app": "batch"}},
       "spec": {"completions": 2, "parallelism": 2, "template": {
           "metadata": {"labels": {"app": "batch"},
                        "annotations": {"nodeagent.dev/finish-after-seconds": "2", "nodeagent.dev/exit-code": "0"}},
           "spec": {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": NODE},
                    "containers": [{"name": "c", "image": "busybox:1"}]}}}}


def test_a_job_run_to_completion_is_the_same_on_both(sides: tuple[Side, Side]) -> None:
    def complete(obj: dict[str, Any]) -> bool:
        return any(c["type"] == "Complete" and c["status"] == "True" for c in obj["status"].get("conditions") or [])

    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(JOB)))
    for side in sides:
        wait_for(lambda s=side: complete(s.get("job", "batch")), timeout=120,
                 what=f"the Job complete\n{side.log()[-2000:]}")
    assert_same(sides, "jobs", "app=batch", "a Job of two completions")


def test_a_finished_job_with_a_ttl_goes_with_its_pods_on_both(sides: tuple[Side, Side]) -> None:
    """ttl-after-finished: kube-controller-manager deletes the Job (foreground: its pods first) its TTL after the
    Complete condition's time; so does the embedded controller."""
    job = json.loads(json.dumps(JOB).replace('"batch"', '"brief"'))
    job["spec"].update(completions=1, parallelism=1, ttlSecondsAfterFinished=2)
    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(job)))
    for side in sides:
        wait_for(lambda s=side: not s.get("jobs", "-l", "app=brief")["items"]
                 and not s.get("pods", "-l", "app=brief")["items"], timeout=120,
                 what=f"the finished Job and its pod gone\n{side.log()[-2000:]}")


def test_a_job_whose_finished_pods_are_deleted_keeps_its_counts_on_both(sides: tuple[Side, Side]) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pruned", "labels": {"app": "pruned"}},
           "spec": {"completions": 3, "parallelism": 1, "template": {
               "metadata": {"labels": {"app": "pruned"},
                            "annotations": {"nodeagent.dev/finish-after-seconds": "3", "nodeagent.dev/exit-code": "0"}},
               "spec": {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": NODE},
                        "containers": [{"name": "c", "image": "busybox:1"}]}}}}

    def running(side: Side) -> list[dict[str, Any]]:
        return [p for p in side.get("pods", "-l", "app=pruned")["items"]
                if p["status"].get("phase") not in ("Succeeded", "Failed") and "deletionTimestamp" not in p["metadata"]]

    def prune(side: Side) -> None:
        side.kubectl("delete", "pods", "-l", "app=pruned", "--field-selector=status.phase=Succeeded", "--wait=false")

    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(job)))
    for side in sides:
        wait_for(lambda s=side: bool(running(s)), timeout=60, what=f"the Job's first pod\n{side.log()[-2000:]}")
        assert [p["metadata"].get("finalizers") for p in running(side)] == [["batch.kubernetes.io/job-tracking"]]
    for side in sides:
        wait_for(lambda s=side: int(s.get("job", "pruned")["status"].get("succeeded") or 0) >= 1, timeout=120,
                 what=f"the first pod counted\n{side.log()[-2000:]}")
    both(sides, prune)
    for side in sides:
        wait_for(lambda s=side: _finished("Complete")(s.get("job", "pruned")), timeout=120,
                 what=f"the Job complete after its first finished pod was deleted\n{side.log()[-2000:]}")
    both(sides, prune)
    both(sides, lambda s: wait_for(lambda: s.get("pods", "-l", "app=pruned")["items"] == [], timeout=90,
                                   what="the finished pods gone"))
    for side in sides:
        assert side.get("job", "pruned")["status"]["succeeded"] == 3
    assert_same(sides, "jobs", "app=pruned", "a Job whose finished pods were deleted")


def _finished(ctype: str) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        return any(c["type"] == ctype and c["status"] == "True" for c in obj["status"].get("conditions") or [])
    return check


def _indexed_job(name: str, exit_code: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"completionMode": "Indexed", **spec, "template": {
                "metadata": {"labels": {"app": name},
                             "annotations": {"nodeagent.dev/finish-after-seconds": "1",
                                             "nodeagent.dev/exit-code": str(exit_code)}},
                "spec": {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": NODE},
                         "containers": [{"name": "c", "image": "busybox:1"}]}}}}


def test_an_indexed_job_meeting_its_success_policy_is_the_same_on_both(sides: tuple[Side, Side]) -> None:
    job = _indexed_job("first-wins", 0, completions=3, parallelism=1,
                       successPolicy={"rules": [{"succeededIndexes": "0"}]})
    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(job)))
    for side in sides:
        wait_for(lambda s=side: _finished("Complete")(s.get("job", "first-wins")), timeout=120,
                 what=f"the Job complete\n{side.log()[-2000:]}")
    assert_same(sides, "jobs", "app=first-wins", "an Indexed Job meeting its successPolicy")


def test_an_indexed_job_with_backoff_limit_per_index_is_the_same_on_both(sides: tuple[Side, Side]) -> None:
    job = _indexed_job("per-index", 1, completions=2, parallelism=2, backoffLimitPerIndex=1)
    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(job)))
    for side in sides:
        wait_for(lambda s=side: _finished("Failed")(s.get("job", "per-index")), timeout=180,
                 what=f"the Job failed\n{side.log()[-2000:]}")
    assert_same(sides, "jobs", "app=per-index", "an Indexed Job with backoffLimitPerIndex")


STATEFULSET = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "labels": {"app": "db"}},
               "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "db"}}, "template": {
                   "metadata": {"labels": {"app": "db"}},
                   "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE},
                            "containers": [{"name": "c", "image": "pause:1"}]}}}}


def _set_of(replicas: int) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        st = obj["status"]
        return all(int(st.get(k) or 0) == replicas for k in
                   ("replicas", "readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas"))
    return check


def test_a_statefulset_scaled_up_and_down_is_the_same_on_both(sides: tuple[Side, Side]) -> None:
    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(STATEFULSET)))
    both(sides, lambda s: settled(s, "statefulset", "db", _set_of(0)))
    assert_same(sides, "statefulsets", "app=db", "a StatefulSet of 0")
    both(sides, lambda s: s.kubectl("scale", "statefulset", "db", "--replicas=3"))
    both(sides, lambda s: settled(s, "statefulset", "db", _set_of(3)))
    assert_same(sides, "statefulsets", "app=db", "scaled to 3")
    both(sides, lambda s: s.kubectl("scale", "statefulset", "db", "--replicas=1"))
    both(sides, lambda s: settled(s, "statefulset", "db", _set_of(1)))
    both(sides, lambda s: wait_for(lambda: len(s.get("pods", "-l", "app=db")["items"]) == 1, timeout=60,
                                   what="the scaled-down pods gone"))
    assert_same(sides, "statefulsets", "app=db", "scaled back to 1")


CRONJOB = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick", "labels": {"app": "tick"}},
           "spec": {"schedule": "* * * * *", "jobTemplate": {
               "metadata": {"labels": {"app": "tick"}},
               "spec": {"template": {
                   "metadata": {"labels": {"app": "tick"},
                                "annotations": {"nodeagent.dev/finish-after-seconds": "1"}},
                   "spec": {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": NODE},
                            "containers": [{"name": "c", "image": "busybox:1"}]}}}}}}


def test_a_cronjob_firing_once_is_the_same_on_both(sides: tuple[Side, Side]) -> None:
    import time
    if time.time() % 60 > 40:  # both created within the same minute, so both fire for the next one
        time.sleep(61 - time.time() % 60)
    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(CRONJOB)))
    for side in sides:
        wait_for(lambda s=side: bool(s.get("cronjob", "tick")["status"].get("lastSuccessfulTime")), timeout=150,
                 what=f"the CronJob's first Job complete\n{side.log()[-2000:]}")
    both(sides, lambda s: s.kubectl("patch", "cronjob", "tick", "--type=merge", "-p", '{"spec":{"suspend":true}}'))
    assert_same(sides, "cronjobs", "app=tick", "a CronJob that fired once")


CRASHY = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "crashy", "labels": {"app": "crashy"}},
          "spec": {"selector": {"matchLabels": {"app": "crashy"}}, "template": {
              "metadata": {"labels": {"app": "crashy"},
                           "annotations": {"nodeagent.dev/finish-after-seconds": "1", "nodeagent.dev/exit-code": "1"}},
              "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE},
                       "containers": [{"name": "c", "image": "busybox:1"}]}}}}


def _failed_daemon_pod_events(side: Side) -> list[dict[str, Any]]:
    evs = [e for e in side.get("events")["items"]
           if e["involvedObject"].get("name") == "crashy" and e["reason"] == "FailedDaemonPod"]
    return sorted(evs, key=lambda e: e.get("firstTimestamp") or e.get("eventTime") or "")


def test_a_failing_daemon_pod_is_deleted_on_the_same_backoff_on_both(sides: tuple[Side, Side]) -> None:
    """The pod fails 1 s after it starts. Deletions: the first failure at once (no entry yet); the
    second 1 s later is past the 1 s delay (deleted, delay 2 s); the third fails 1 s after its start,
    within 2 s, so waits for the requeue 2 s later (gap about 3 s, delay 4 s); the fourth waits 4 s
    (gap about 5 s). Without the backoff every gap would be about 1 s."""
    from datetime import datetime
    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(CRASHY)))
    for side in sides:
        wait_for(lambda s=side: len(_failed_daemon_pod_events(s)) >= 4, timeout=120,
                 what=f"four FailedDaemonPod events\n{side.log()[-2000:]}")
    gaps: list[list[float]] = []
    for side in sides:
        evs = _failed_daemon_pod_events(side)[:4]
        for e in evs:
            assert (e["type"], e["source"].get("component"), e["involvedObject"]["kind"]) == \
                ("Warning", "daemonset-controller", "DaemonSet")
            assert re.fullmatch(rf"Found failed daemon pod default/crashy-[a-z0-9]{{5}} on node {NODE}, "
                                r"will try to kill it", e["message"]), e["message"]
        times = [datetime.fromisoformat(e["firstTimestamp"].replace("Z", "+00:00")).timestamp() for e in evs]
        gaps.append([b - a for a, b in itertools.pairwise(times)])
    print("failedPodsBackoff gaps (embedded, real):", gaps)
    both(sides, lambda s: s.kubectl("delete", "daemonset", "crashy", "--wait=false"))
    for side_gaps in gaps:  # whole seconds: each gap within [expected - 1, expected + 3]
        assert all(want - 1 <= got <= want + 3 for want, got in zip((1, 3, 5), side_gaps, strict=True)), gaps
    embedded, real = gaps
    assert all(abs(a - b) <= 2 for a, b in zip(embedded, real, strict=True)), gaps


def test_a_job_past_its_deadline_is_the_same_on_both(sides: tuple[Side, Side]) -> None:
    """activeDeadlineSeconds with pods that never end: FailureTarget and Failed (DeadlineExceeded),
    the active pods deleted and counted as failed."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "late", "labels": {"app": "late"}},
           "spec": {"completions": 2, "parallelism": 2, "activeDeadlineSeconds": 5, "template": {
               "metadata": {"labels": {"app": "late"}},
               "spec": {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": NODE},
                        "containers": [{"name": "c", "image": "busybox:1"}]}}}}
    both(sides, lambda s: s.kubectl("apply", "-f", "-", input=json.dumps(job)))
    for side in sides:
        wait_for(lambda s=side: _finished("Failed")(s.get("job", "late")), timeout=120,
                 what=f"the Job failed\n{side.log()[-2000:]}")
    both(sides, lambda s: wait_for(lambda: s.get("pods", "-l", "app=late")["items"] == [], timeout=90,
                                   what="the deleted pods gone"))
    assert_same(sides, "jobs", "app=late", "a Job past its activeDeadlineSeconds")



CONTROLLED = ("Deployment", "ReplicaSet", "DaemonSet", "Job", "StatefulSet", "CronJob", "ReplicationController")
GENERATED = re.compile(r"(pod:? )(\S+)-[a-z0-9]{5}\b")
MINUTE = re.compile(r"\btick-\d+\b")
SCALE_STEP = re.compile(r" from \d+ to \d+$")
"""A rolling update's steps depend on when the new pods turn Ready, so ScalingReplicaSet events are compared
without their numbers (each ReplicaSet scaled up and down on both sides)."""


def _controller_events(side: Side) -> set[tuple[Any, ...]]:
    """The events the workload controllers posted about the objects above (the crashing DaemonSet's apart:
    its test compares them), generated pod names and the CronJob's minute made stable."""
    out = set()
    for e in side.get("events", "--show-managed-fields")["items"]:
        inv = e["involvedObject"]
        if inv.get("kind") not in CONTROLLED or inv.get("name") == "crashy":
            continue
        message = MINUTE.sub("tick-<minute>", GENERATED.sub(r"\1\2-<random>", e.get("message") or ""))
        if e.get("reason") == "ScalingReplicaSet":
            message = SCALE_STEP.sub(" from <n> to <n>", message)
        out.add((inv["kind"], MINUTE.sub("tick-<minute>", inv["name"]), inv.get("apiVersion"), e.get("type"),
                 e.get("reason"), message, _source(e), "ownerReferences" in e["metadata"], _managers(e)))
    return out


def _source(event: Mapping[str, Any]) -> tuple[Any, ...]:
    """Who an event says posted it: its source and reporting fields (client-go's makeEvent fills both)."""
    source = event.get("source") or {}
    return (source.get("component"), source.get("host"), event.get("reportingComponent"),
            event.get("reportingInstance"))


def _managers(obj: Mapping[str, Any]) -> tuple[tuple[str, str, str], ...]:
    """Who wrote an object, as its managedFields name them (manager, operation, apiVersion)."""
    return tuple(sorted((m.get("manager", ""), m.get("operation", ""), m.get("apiVersion", ""))
                        for m in obj["metadata"].get("managedFields") or ()))


def _node_events(side: Side) -> set[tuple[Any, ...]]:
    """The reasons of the events the nodes posted about the workloads' pods, with their source and writers."""
    return {(e.get("reason"), _source(e), _managers(e))
            for e in side.get("events", "--show-managed-fields")["items"]
            if e["involvedObject"].get("kind") == "Pod" and (e.get("source") or {}).get("component") == "kubelet"}


def test_the_nodes_events_are_written_as_the_kubelet_writes_them(sides: tuple[Side, Side]) -> None:
    """The node's events about its pods (Pulled, Created, Started, Killing...) carry the kubelet's managedFields
    entry on both sides (the embedded node's in-process events recorded none)."""
    embedded, real = (_node_events(side) for side in sides)
    assert {reason for reason, *_ in real} >= {"Pulled", "Created", "Started"}
    assert embedded == real, (sorted(embedded - real), sorted(real - embedded))


def test_the_controllers_events_are_the_same_on_both(sides: tuple[Side, Side]) -> None:
    """Each controller's events as kube-controller-manager's: the same reasons and texts, from the same
    component, and no ownerReferences (upstream's events expire by the event TTL instead)."""
    embedded, real = (_controller_events(side) for side in sides)
    assert {kind for kind, *_ in real} >= {"Deployment", "ReplicaSet", "DaemonSet", "Job", "StatefulSet",
                                          "ReplicationController"}
    assert not any(owned for *_, owned, _managers in real | embedded)
    assert embedded == real, (sorted(embedded - real), sorted(real - embedded))
