"""The embedded workload controllers through kubectl against a `nodeagent` process: Deployments
(create, scale up and down, a rollout of a new image, Recreate), ReplicaSets, and each
controller switched off with controlPlane.controllers (then nothing happens for its kind).

The daemon runs its own node plus two virtual nodes (so pods spread and a DaemonSet has several
nodes to cover); pods run on the virtual nodes as on paper and on the local node as the node
agent runs them (Ready at once, no containers)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from nodeagent.controlplane.workloads import podhash
from tests.integration.daemon_helpers import Daemon, daemon_in_temp_dir, running_daemon, wait_for

pytestmark = [pytest.mark.integration]

VIRTUAL = [{"name": "vn-{index}", "count": 2, "labels": {"rack": "b"},
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}]


def agent(controllers: list[str] | None = None) -> dict[str, Any]:
    cp: dict[str, Any] = {"apiServer": {"bindAddress": "127.0.0.1:0"}}
    if controllers is not None:
        cp["controllers"] = controllers
    return {"virtualNodes": VIRTUAL, "controlPlane": cp}


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with daemon_in_temp_dir("na-wl-", agent=agent()) as d:
        yield d


def get(d: Daemon, *args: str) -> Any:
    return d.kubectl_json("get", *args)


def pods_of(d: Daemon, selector: str, ns: str = "default") -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = get(d, "pods", "-n", ns, "-l", selector)["items"]
    return items


def test_create_deployment_scale_and_status(daemon: Daemon) -> None:
    d = daemon
    d.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3")
    dep = get(d, "deployment", "web")
    wait_for(lambda: get(d, "deployment", "web")["status"].get("availableReplicas") == 3, timeout=30,
             what="3 available")
    (rs,) = get(d, "replicasets", "-l", "app=web")["items"]
    template_hash = podhash.compute_hash(dep["spec"]["template"])
    assert rs["metadata"]["name"] == f"web-{template_hash}"
    assert rs["metadata"]["labels"]["pod-template-hash"] == template_hash
    assert rs["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                                 "uid": dep["metadata"]["uid"], "controller": True,
                                                 "blockOwnerDeletion": True}]
    assert rs["metadata"]["annotations"] == {"deployment.kubernetes.io/desired-replicas": "3",
                                             "deployment.kubernetes.io/max-replicas": "4",
                                             "deployment.kubernetes.io/revision": "1"}
    pods = pods_of(d, "app=web")
    assert len(pods) == 3
    for pod in pods:
        assert pod["metadata"]["name"].startswith(f"web-{template_hash}-")
        suffix = pod["metadata"]["name"].rsplit("-", 1)[1]
        assert len(suffix) == 5 and set(suffix) <= set(podhash.ALPHANUMS)
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
        assert pod["metadata"]["ownerReferences"][0]["name"] == rs["metadata"]["name"]
    status = get(d, "deployment", "web")["status"]
    assert {k: status.get(k) for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                                         "observedGeneration")} == \
        {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 1}
    conds = {c["type"]: c for c in status["conditions"]}
    assert (conds["Available"]["status"], conds["Available"]["reason"], conds["Available"]["message"]) == \
        ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
    assert (conds["Progressing"]["reason"], conds["Progressing"]["message"]) == \
        ("NewReplicaSetAvailable", f'ReplicaSet "{rs["metadata"]["name"]}" has successfully progressed.')
    out = d.kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    assert 'deployment "web" successfully rolled out' in out.stdout

    d.kubectl("scale", "deployment", "web", "--replicas=5")
    wait_for(lambda: len(pods_of(d, "app=web")) == 5 and
             get(d, "deployment", "web")["status"].get("availableReplicas") == 5, timeout=30, what="5 pods")
    d.kubectl("scale", "deployment", "web", "--replicas=3")
    wait_for(lambda: get(d, "rs", rs["metadata"]["name"])["status"].get("replicas") == 3 and
             get(d, "deployment", "web")["status"].get("replicas") == 3, timeout=30, what="back to 3")
    live = [p for p in pods_of(d, "app=web") if not p["metadata"].get("deletionTimestamp")]
    assert len(live) == 3
    events = get(d, "events", "--field-selector", "involvedObject.kind=Deployment,involvedObject.name=web")
    messages = {e["message"] for e in events["items"]}
    assert f"Scaled up replica set {rs['metadata']['name']} from 0 to 3" in messages
    assert f"Scaled up replica set {rs['metadata']['name']} from 3 to 5" in messages
    assert f"Scaled down replica set {rs['metadata']['name']} from 5 to 3" in messages


def test_rollout_of_a_new_image(daemon: Daemon) -> None:
    d = daemon
    d.kubectl("create", "deployment", "roll", "--image=busybox:1.36", "--replicas=4")
    d.kubectl("rollout", "status", "deployment/roll", "--timeout=30s")
    first = get(d, "rs", "-l", "app=roll")["items"][0]["metadata"]["name"]
    d.kubectl("set", "image", "deployment/roll", "busybox=busybox:1.37")
    out = d.kubectl("rollout", "status", "deployment/roll", "--timeout=40s")
    assert 'deployment "roll" successfully rolled out' in out.stdout
    rss = {r["metadata"]["name"]: r for r in get(d, "rs", "-l", "app=roll")["items"]}
    assert len(rss) == 2
    (second,) = [n for n in rss if n != first]
    assert rss[first]["spec"]["replicas"] == 0
    assert rss[second]["spec"]["replicas"] == 4
    assert rss[second]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    dep = get(d, "deployment", "roll")
    assert dep["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert second == "roll-" + podhash.compute_hash(dep["spec"]["template"])
    images = {p["spec"]["containers"][0]["image"] for p in pods_of(d, "app=roll")
              if not p["metadata"].get("deletionTimestamp")}
    assert images == {"busybox:1.37"}
    history = d.kubectl("rollout", "history", "deployment/roll").stdout
    assert "1 " in history and "2 " in history
    d.kubectl("rollout", "undo", "deployment/roll")
    d.kubectl("rollout", "status", "deployment/roll", "--timeout=40s")
    rss = {r["metadata"]["name"]: r for r in get(d, "rs", "-l", "app=roll")["items"]}
    assert rss[first]["spec"]["replicas"] == 4
    assert rss[first]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert rss[first]["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"


def test_recreate_strategy(daemon: Daemon) -> None:
    d = daemon
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "rec"},
                "spec": {"replicas": 2, "strategy": {"type": "Recreate"}, "selector": {"matchLabels": {"app": "rec"}},
                         "template": {"metadata": {"labels": {"app": "rec"}},
                                      "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}}
    d.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    d.kubectl("rollout", "status", "deployment/rec", "--timeout=30s")
    d.kubectl("set", "image", "deployment/rec", "c=busybox:1.37")
    d.kubectl("rollout", "status", "deployment/rec", "--timeout=40s")
    sizes = sorted(r["spec"]["replicas"] for r in get(d, "rs", "-l", "app=rec")["items"])
    assert sizes == [0, 2]


def test_deleting_a_deployment_removes_its_replica_sets_and_pods(daemon: Daemon) -> None:
    d = daemon
    d.kubectl("create", "deployment", "gone", "--image=nginx", "--replicas=2")
    wait_for(lambda: len(pods_of(d, "app=gone")) == 2, timeout=30, what="2 pods")
    d.kubectl("delete", "deployment", "gone")
    wait_for(lambda: not get(d, "rs", "-l", "app=gone")["items"] and not pods_of(d, "app=gone"), timeout=40,
             what="replica sets and pods gone")


def test_template_labels_equal_to_other_maps_stay_apart(daemon: Daemon) -> None:
    """The store holds equal subtrees once (store/interning.py): a template whose labels equal its
    nodeSelector (and a DaemonSet's, a Job's) must still get pod-template-hash, controller-revision-hash or
    the Job's labels in its labels alone, not in the selector it shares a stored map with."""
    d = daemon
    same = {"rack": "b"}
    spec: dict[str, Any] = {"nodeSelector": same, "containers": [{"name": "c", "image": "pause"}]}
    template = {"metadata": {"labels": same}, "spec": spec}
    docs = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "alias"},
             "spec": {"replicas": 2, "selector": {"matchLabels": same}, "template": template}},
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "alias-ds"},
             "spec": {"selector": {"matchLabels": same}, "template": template}},
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "alias-job"},
             "spec": {"template": {**template, "spec": {**spec, "restartPolicy": "Never"}}}}]
    for doc in docs:
        d.kubectl("apply", "-f", "-", input=json.dumps(doc))
    wait_for(lambda: len(pods_of(d, "rack=b")) >= 2 + 2 + 1, timeout=30, what="the three workloads' pods")
    for pod in pods_of(d, "rack=b"):
        assert pod["spec"]["nodeSelector"] == same, pod["metadata"]["name"]
    (rs,) = get(d, "replicasets", "-l", "rack=b")["items"]
    assert rs["spec"]["template"]["spec"]["nodeSelector"] == same
    assert rs["spec"]["selector"]["matchLabels"] == {**same, "pod-template-hash": rs["metadata"]["labels"][
        "pod-template-hash"]}
    assert get(d, "deployment", "alias")["spec"]["template"]["spec"]["nodeSelector"] == same
    for kind, name in (("deployment", "alias"), ("daemonset", "alias-ds"), ("job", "alias-job")):
        d.kubectl("delete", kind, name, "--wait=true", "--timeout=60s")


def test_a_bare_replica_set_keeps_its_pod_count(daemon: Daemon) -> None:
    d = daemon
    manifest = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "bare"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "bare"}},
                         "template": {"metadata": {"labels": {"app": "bare"}},
                                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    d.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    wait_for(lambda: get(d, "rs", "bare")["status"].get("readyReplicas") == 2, timeout=30, what="2 ready")
    victim = pods_of(d, "app=bare")[0]["metadata"]["name"]
    d.kubectl("delete", "pod", victim, "--wait=false")
    wait_for(lambda: len([p for p in pods_of(d, "app=bare") if not p["metadata"].get("deletionTimestamp")]) == 2
             and victim not in {p["metadata"]["name"] for p in pods_of(d, "app=bare")}, timeout=40,
             what="a replacement")
    rs = get(d, "rs", "bare")
    assert rs["status"]["replicas"] == 2
    assert rs["status"]["observedGeneration"] == 1
    assert rs["status"]["fullyLabeledReplicas"] == 2


def test_a_replication_controller_keeps_its_pod_count(daemon: Daemon) -> None:
    d = daemon
    manifest = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
                "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "legacy"}},
                                                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    d.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    wait_for(lambda: get(d, "rc", "legacy")["status"].get("readyReplicas") == 2, timeout=30, what="2 ready")
    rc = get(d, "rc", "legacy")
    assert rc["spec"]["selector"] == {"app": "legacy"}  # defaulted from the template's labels
    assert rc["status"] == {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
                            "observedGeneration": 1}  # no terminatingReplicas: v1 RC status has none
    for pod in pods_of(d, "app=legacy"):
        assert pod["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "ReplicationController",
                                                      "name": "legacy", "uid": rc["metadata"]["uid"],
                                                      "controller": True, "blockOwnerDeletion": True}]
    d.kubectl("scale", "rc", "legacy", "--replicas=1")
    wait_for(lambda: len(pods_of(d, "app=legacy")) == 1, timeout=40, what="scaled to 1")
    d.kubectl("delete", "rc", "legacy", "--wait=true", "--timeout=60s")


@pytest.mark.parametrize("off", ["replicationcontroller", "-replicationcontroller-controller"])
def test_replication_controller_off(short_dir: Path, off: str) -> None:
    with running_daemon(short_dir, agent=agent(["*", off] if off.startswith("-") else ["*", f"-{off}"])) as d:
        d.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "idle"},
            "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "idle"}},
                                                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}))
        d.kubectl("create", "deployment", "busy", "--image=nginx", "--replicas=1")
        wait_for(lambda: len(pods_of(d, "app=busy")) == 1, timeout=30, what="the other controllers still work")
        assert pods_of(d, "app=idle") == []


def _daemonset(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}, **spec}}


def test_daemonset_a_pod_per_node_virtual_nodes_included(daemon: Daemon) -> None:
    d = daemon

    d.kubectl("apply", "-f", "-", input=json.dumps(_daemonset("agent")))
    nodes = {n["metadata"]["name"] for n in get(d, "nodes")["items"]}
    assert nodes == {"test-node", "vn-0", "vn-1"}
    wait_for(lambda: get(d, "ds", "agent")["status"].get("numberAvailable") == 3, timeout=40, what="3 available")
    ds = get(d, "ds", "agent")
    pods = pods_of(d, "app=agent")
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(nodes)
    want_hash = podhash.compute_hash(ds["spec"]["template"])  # daemon/update.go snapshot: controller.ComputeHash
    for pod in pods:
        assert pod["metadata"]["labels"]["controller-revision-hash"] == want_hash
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms == {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [pod["spec"]["nodeName"]]}]}]}
        tolerated = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
        assert ("node.kubernetes.io/not-ready", "NoExecute") in tolerated
        assert ("node.kubernetes.io/unschedulable", "NoSchedule") in tolerated
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    (rev,) = get(d, "controllerrevisions", "-l", "app=agent")["items"]
    assert rev["metadata"]["name"] == f"agent-{want_hash}" and rev["revision"] == 1
    status = ds["status"]
    assert {k: status.get(k) for k in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady",
                                         "numberAvailable", "updatedNumberScheduled", "numberMisscheduled",
                                         "observedGeneration")} == \
        {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 3, "numberAvailable": 3,
         "updatedNumberScheduled": 3, "numberMisscheduled": 0, "observedGeneration": 1}
    out = d.kubectl("rollout", "status", "daemonset/agent", "--timeout=20s")
    assert "successfully rolled out" in out.stdout

    # a node selector narrows it to the rack-b virtual nodes; a rolling update replaces the pods
    d.kubectl("patch", "ds", "agent", "--type=merge", "-p",
              json.dumps({"spec": {"template": {"spec": {"nodeSelector": {"rack": "b"}}}}}))
    d.kubectl("rollout", "status", "daemonset/agent", "--timeout=40s")
    wait_for(lambda: sorted(p["spec"]["nodeName"] for p in pods_of(d, "app=agent")
                            if not p["metadata"].get("deletionTimestamp")) == ["vn-0", "vn-1"],
             timeout=40, what="pods on the rack-b nodes only")
    assert len(get(d, "controllerrevisions", "-l", "app=agent")["items"]) == 2


def test_daemonset_rolling_update_with_max_surge(daemon: Daemon) -> None:
    """maxSurge 1, maxUnavailable 0: each node gets its new pod next to the old one, the old one goes once
    the new one is available, and never fewer than one available pod per node."""
    d = daemon
    manifest = _daemonset("surge")
    manifest["spec"]["updateStrategy"] = {"type": "RollingUpdate",
                                          "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    d.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    d.kubectl("rollout", "status", "daemonset/surge", "--timeout=40s")
    d.kubectl("set", "image", "daemonset/surge", "*=busybox:1.37")
    seen: list[int] = []

    def rolled() -> bool:
        live = [p for p in pods_of(d, "app=surge") if not p["metadata"].get("deletionTimestamp")]
        seen.append(len(live))
        status = get(d, "ds", "surge")["status"]
        return (status.get("updatedNumberScheduled"), status.get("numberAvailable")) == (3, 3) and len(live) == 3 \
            and {p["spec"]["containers"][0]["image"] for p in live} == {"busybox:1.37"}

    wait_for(rolled, timeout=60, what="all three nodes on the new image")
    assert min(seen) >= 3  # an old pod goes only after its node's new one is available
    d.kubectl("rollout", "status", "daemonset/surge", "--timeout=20s")


def test_daemonset_controller_off(short_dir: Path) -> None:
    with running_daemon(short_dir, agent=agent(["*", "-daemonset"])) as d:
        d.kubectl("apply", "-f", "-", input=json.dumps(_daemonset("idle")))
        d.kubectl("create", "deployment", "busy", "--image=nginx", "--replicas=1")
        wait_for(lambda: len(pods_of(d, "app=busy")) == 1, timeout=30, what="the other controllers still work")
        assert pods_of(d, "app=idle") == []
        assert get(d, "controllerrevisions")["items"] == []


def _job(name: str, *, exit_code: int = 0, **spec: Any) -> dict[str, Any]:
    """A Job whose pods end after 1 s on their node (nodeagent.dev/finish-after-seconds; a container of a
    nodeagent node runs nothing), with `exit_code`."""
    annotations = {"nodeagent.dev/finish-after-seconds": "1", "nodeagent.dev/exit-code": str(exit_code)}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"annotations": annotations},
                                  "spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox:1.36"}]}}, **spec}}


def test_job_runs_to_completion(daemon: Daemon) -> None:
    d = daemon
    d.kubectl("apply", "-f", "-", input=json.dumps(_job("pi", completions=3, parallelism=2)))
    d.kubectl("wait", "--for=condition=complete", "job/pi", "--timeout=40s")
    job = get(d, "job", "pi")
    status = job["status"]
    assert (status["succeeded"], status.get("failed"), status.get("active"), status["ready"],
            status["terminating"]) == (3, None, None, 0, 0)
    conds = [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]]
    assert conds == [("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
                     ("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods")]
    assert status["startTime"] <= status["completionTime"]
    pods = get(d, "pods", "-l", f"batch.kubernetes.io/controller-uid={job['metadata']['uid']}")["items"]
    assert len(pods) == 3 and {p["status"]["phase"] for p in pods} == {"Succeeded"}
    assert all(p["metadata"]["name"].startswith("pi-") and p["metadata"]["labels"]["job-name"] == "pi"
               for p in pods)
    assert "3/3" in d.kubectl("get", "job", "pi").stdout


def test_a_finished_job_goes_after_its_ttl_with_its_pods(daemon: Daemon) -> None:
    """ttl-after-finished: the Job and (its deletion is foreground) its pods are deleted ttlSecondsAfterFinished
    after the Complete condition's lastTransitionTime, not before."""
    d = daemon
    d.kubectl("apply", "-f", "-", input=json.dumps(_job("brief", ttlSecondsAfterFinished=3)))
    d.kubectl("wait", "--for=condition=complete", "job/brief", "--timeout=40s")
    done = next(c for c in get(d, "job", "brief")["status"]["conditions"] if c["type"] == "Complete")
    finished = datetime.fromisoformat(done["lastTransitionTime"].replace("Z", "+00:00")).timestamp()
    assert pods_of(d, "batch.kubernetes.io/job-name=brief")  # kept until the TTL
    wait_for(lambda: not d.kubectl("get", "job", "brief", "--ignore-not-found").stdout.strip(), timeout=30,
             what="the Job gone")
    assert time.time() >= finished + 3
    wait_for(lambda: not pods_of(d, "batch.kubernetes.io/job-name=brief"), timeout=30, what="its pods gone")


def test_job_counts_survive_the_deletion_of_its_finished_pods(daemon: Daemon) -> None:
    """Tracking with finalizers (as kube-controller-manager): a running pod holds
    batch.kubernetes.io/job-tracking, a finished one loses it once counted, and deleting the counted pods
    keeps the counts: one pod at a time, every finished pod deleted, the Job still completes with 3."""
    d = daemon
    d.kubectl("apply", "-f", "-", input=json.dumps(_job("pruned", completions=3, parallelism=1)))
    seen_finalizers: set[tuple[str, ...]] = set()

    def prune_and_check() -> bool:
        for p in pods_of(d, "job-name=pruned"):
            md = p["metadata"]
            if p["status"].get("phase") == "Running" and "deletionTimestamp" not in md:
                seen_finalizers.add(tuple(md.get("finalizers") or ()))
            if p["status"].get("phase") == "Succeeded" and not md.get("finalizers"):
                d.kubectl("delete", "pod", md["name"], "--wait=false", check=False)
        conds = get(d, "job", "pruned")["status"].get("conditions") or []
        return any(c["type"] == "Complete" and c["status"] == "True" for c in conds)

    wait_for(prune_and_check, timeout=60, what="the Job complete while its finished pods are deleted")
    status = get(d, "job", "pruned")["status"]
    assert status["succeeded"] == 3 and not status.get("failed") and status["uncountedTerminatedPods"] == {}
    assert seen_finalizers <= {("batch.kubernetes.io/job-tracking",)} and seen_finalizers
    assert len(pods_of(d, "job-name=pruned")) < 3  # at least one finished pod was deleted before the end


def test_job_past_its_backoff_limit_fails(daemon: Daemon) -> None:
    d = daemon
    d.kubectl("apply", "-f", "-", input=json.dumps(_job("fails", exit_code=1, backoffLimit=0)))
    d.kubectl("wait", "--for=condition=failed", "job/fails", "--timeout=40s")
    status = get(d, "job", "fails")["status"]
    assert status["failed"] == 1 and not status.get("succeeded")
    conds = [(c["type"], c["reason"], c["message"]) for c in status["conditions"]]
    assert conds == [("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
                     ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]


def test_indexed_job_runs_every_index(daemon: Daemon) -> None:
    d = daemon
    d.kubectl("apply", "-f", "-", input=json.dumps(_job("idx", completions=4, parallelism=2,
                                                        completionMode="Indexed")))
    d.kubectl("wait", "--for=condition=complete", "job/idx", "--timeout=60s")
    status = get(d, "job", "idx")["status"]
    assert (status["succeeded"], status["completedIndexes"]) == (4, "0-3")
    pods = get(d, "pods", "-l", "job-name=idx")["items"]
    by_index = sorted((p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"],
                       p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"], p["spec"]["hostname"])
                      for p in pods)
    assert by_index == [(str(i), str(i), f"idx-{i}") for i in range(4)]
    assert all(p["metadata"]["generateName"] == f"idx-{p['spec']['hostname'][4:]}-" for p in pods)
    env = pods[0]["spec"]["containers"][0]["env"]
    assert env == [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
        "apiVersion": "v1", "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}]


def test_pod_failure_policy_fails_the_job_on_an_exit_code(daemon: Daemon) -> None:
    d = daemon
    policy = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}},
                        {"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In",
                                                              "values": [42]}}]}
    d.kubectl("apply", "-f", "-", input=json.dumps(_job("pfp", exit_code=42, podFailurePolicy=policy)))
    d.kubectl("wait", "--for=condition=failed", "job/pfp", "--timeout=40s")
    status = get(d, "job", "pfp")["status"]
    (pod,) = get(d, "pods", "-l", "job-name=pfp")["items"]
    message = (f"Container c for pod default/{pod['metadata']['name']} failed with exit code 42 matching FailJob "
               "rule at index 1")
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("FailureTarget", "PodFailurePolicy", message), ("Failed", "PodFailurePolicy", message)]
    assert status["failed"] == 1


def test_job_controller_off(short_dir: Path) -> None:
    with running_daemon(short_dir, agent=agent(["*", "-job"])) as d:
        d.kubectl("apply", "-f", "-", input=json.dumps(_job("idle")))
        d.kubectl("create", "deployment", "busy", "--image=nginx", "--replicas=1")
        wait_for(lambda: len(pods_of(d, "app=busy")) == 1, timeout=30, what="the other controllers still work")
        assert pods_of(d, "job-name=idle") == []
        assert not get(d, "job", "idle").get("status")


def test_statefulset_ordered_creation_and_scale_down(daemon: Daemon) -> None:
    d = daemon
    manifest = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                         "template": {"metadata": {"labels": {"app": "db"}},
                                      "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}}
    d.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    d.kubectl("rollout", "status", "statefulset/db", "--timeout=40s")
    pods = {p["metadata"]["name"]: p for p in pods_of(d, "app=db")}
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    created = [pods[f"db-{i}"]["metadata"]["creationTimestamp"] for i in range(3)]
    assert created == sorted(created)
    ready_at = [next(c["lastTransitionTime"] for c in pods[f"db-{i}"]["status"]["conditions"] if c["type"] == "Ready")
                for i in range(3)]
    assert all(ready_at[i] <= created[i + 1] for i in range(2))  # each after the one before is ready
    for i in range(3):
        p = pods[f"db-{i}"]
        assert p["spec"]["hostname"] == f"db-{i}" and p["spec"]["subdomain"] == "db"
        assert p["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == f"db-{i}"
        assert p["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == str(i)
    status = get(d, "sts", "db")["status"]
    (rev,) = get(d, "controllerrevisions", "-l", "app=db")["items"]
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"], status["currentRevision"],
            status["updateRevision"]) == (3, 3, 3, rev["metadata"]["name"], rev["metadata"]["name"])
    assert pods["db-0"]["metadata"]["labels"]["controller-revision-hash"] == rev["metadata"]["name"]
    d.kubectl("scale", "sts", "db", "--replicas=1")
    wait_for(lambda: sorted(p["metadata"]["name"] for p in pods_of(d, "app=db")) == ["db-0"], timeout=60,
             what="scaled down to db-0")
    events = get(d, "events", "--field-selector", "involvedObject.kind=StatefulSet,involvedObject.name=db")
    assert "Create Pod db-0 in StatefulSet db successful" in {e["message"] for e in events["items"]}


@pytest.mark.parametrize("off", ["-deployment", "-deployment-controller"])
def test_deployment_controller_off(short_dir: Path, off: str) -> None:
    with running_daemon(short_dir, agent=agent(["*", off])) as d:
        d.kubectl("create", "deployment", "idle", "--image=nginx", "--replicas=2")
        manifest = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs-on"},
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "rs-on"}},
                             "template": {"metadata": {"labels": {"app": "rs-on"}},
                                          "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
        d.kubectl("apply", "-f", "-", input=json.dumps(manifest))
        wait_for(lambda: len(pods_of(d, "app=rs-on")) == 1, timeout=30, what="the replica set still works")
        assert get(d, "rs", "-l", "app=idle")["items"] == []
        assert get(d, "deployment", "idle").get("status", {}).get("observedGeneration") is None


def test_replicaset_controller_off(short_dir: Path) -> None:
    with running_daemon(short_dir, agent=agent(["*", "-replicaset"])) as d:
        d.kubectl("create", "deployment", "norc", "--image=nginx", "--replicas=2")
        wait_for(lambda: len(get(d, "rs", "-l", "app=norc")["items"]) == 1, timeout=30, what="its replica set")
        assert pods_of(d, "app=norc") == []
