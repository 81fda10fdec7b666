"""The DaemonSet controller's decisions (upstream pkg/controller/daemon: daemon_controller.go,
update.go, util/daemonset_util.go): a pod per node that should run one, virtual nodes included.

One responsibility: from a DaemonSet, the Nodes, the pods of its namespace and its
ControllerRevisions, what one sync writes: the current revision (`<daemonset>-<hash>`: the hash
is controller.ComputeHash of the template, as the pod-template-hash; the data the template patch
of revision.py), pods to create (one per node lacking one, pinned to it by
node affinity `matchFields metadata.name In [node]` for the default scheduler to bind, as since
1.12, with the tolerations upstream adds: not-ready and unreachable NoExecute, disk-, memory-
and pid-pressure and unschedulable NoSchedule, network-unavailable for hostNetwork), pods to
delete (nodes that no longer qualify, failed or succeeded pods, extras, pods of vanished nodes,
old pods a RollingUpdate replaces within maxUnavailable; with maxSurge a new pod is started next to
an old one on up to maxSurge nodes and the old one goes once the new one is available), old revisions beyond
revisionHistoryLimit, and the status counters. A failed pod is deleted (with the FailedDaemonPod
event) at most once per failedPodsBackoff delay per DaemonSet, observed generation and node: 1 s
doubling to 15 min, the sync rechecked after the delay, as podsShouldBeOnNode does; the Backoff
entries are the caller's (the controller's memory, as upstream's). Pure: no I/O; `now` in epoch
seconds.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.controlplane.workloads import podhash
from nodeagent.controlplane.workloads import pods as P
from nodeagent.controlplane.workloads import revision as R
from nodeagent.controlplane.workloads.backoff import Backoff
from nodeagent.controlplane.workloads.deployment_util import scaled_value
from nodeagent.controlplane.workloads.replicaset import claim
from nodeagent.objects.common import node_selector_matches

API_VERSION, KIND = "apps/v1", "DaemonSet"
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
"""spec.templateGeneration as apps/v1 writes it (the API server's DaemonSet strategy keeps it)."""
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
BURST_REPLICAS = 250
"""upstream's DaemonSet BurstReplicas."""
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")
FAILED_POD_BACKOFF, FAILED_POD_MAX_BACKOFF = 1.0, 900.0
"""kube-controller-manager's failedPodsBackoff: flowcontrol.NewBackOff(1*time.Second, 15*time.Minute)."""


def new_failed_pods_backoff() -> Backoff:
    return Backoff(FAILED_POD_BACKOFF, FAILED_POD_MAX_BACKOFF)


def failed_pods_backoff_key(ds: P.Obj, node: str) -> str:
    """failedPodsBackoffKey: `<uid>/<status.observedGeneration>/<node>`."""
    return f"{P.uid(ds)}/{int((ds.get('status') or {}).get('observedGeneration') or 0)}/{node}"


@dataclass
class Plan:
    revision: dict[str, Any] | None = None  # the current ControllerRevision to create
    revision_update: dict[str, Any] | None = None  # the current one, its revision number raised
    delete_revisions: list[str] = field(default_factory=list)
    adopt: list[P.Obj] = field(default_factory=list)
    release: list[P.Obj] = field(default_factory=list)
    create: list[dict[str, Any]] = field(default_factory=list)
    delete: list[P.Obj] = field(default_factory=list)
    status: dict[str, Any] | None = None
    events: list[tuple[str, str, str]] = field(default_factory=list)
    recheck_at: float | None = None
    hash: str = ""


def tolerations(ds: P.Obj) -> list[dict[str, Any]]:
    """daemonPodTolerations: the template's plus AddOrUpdateDaemonPodTolerations'."""
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    out = [dict(t) for t in spec.get("tolerations") or ()]
    wanted = [*DAEMON_TOLERATIONS, *([NETWORK_UNAVAILABLE] if spec.get("hostNetwork") else [])]
    for key, effect in wanted:
        tol = {"key": key, "operator": "Exists", "effect": effect}
        # AddOrUpdateTolerationInPodSpec: one with the same key, operator, value and effect is replaced
        out = [t for t in out if not (t.get("key") == key and (t.get("operator") or "Equal") == "Exists"
                                      and not t.get("value") and t.get("effect") == effect)]
        out.append(tol)
    return out


def _tolerates(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """v1.Toleration.ToleratesTaint."""
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    if tol.get("key") and tol.get("key") != taint.get("key"):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (tol.get("value") or "") == (taint.get("value") or "")


def _untolerated(node: P.Obj, tols: Sequence[Mapping[str, Any]], effects: tuple[str, ...]) -> bool:
    taints = (node.get("spec") or {}).get("taints") or ()
    return any(t.get("effect") in effects and not any(_tolerates(x, t) for x in tols) for t in taints)


def should_run(ds: P.Obj, node: P.Obj, tols: Sequence[Mapping[str, Any]]) -> tuple[bool, bool]:
    """nodeShouldRunDaemonPod: (should run, should continue running)."""
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    name = P.name(node)
    if spec.get("nodeName") and spec["nodeName"] != name:
        return False, False
    lbls = P.labels(node)
    if any(lbls.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False, False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required and not node_selector_matches(required, name, lbls):
        return False, False
    if _untolerated(node, tols, ("NoSchedule", "NoExecute")):
        return False, not _untolerated(node, tols, ("NoExecute",))
    return True, True


def target_node(pod: P.Obj) -> str | None:
    """util.GetTargetNodeName: spec.nodeName, else the node affinity's metadata.name."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or ():
        for req in term.get("matchFields") or ():
            if req.get("key") == "metadata.name" and req.get("operator") == "In" and len(req.get("values") or ()) == 1:
                return str(req["values"][0])
    return None


def pin_to_node(spec: dict[str, Any], node: str) -> None:
    """util.ReplaceDaemonSetPodNodeNameNodeAffinity."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
    else:
        required["nodeSelectorTerms"] = [term]


def _by_age(pods: Sequence[P.Obj]) -> list[P.Obj]:
    """podByCreationTimestampAndPhase: scheduled pods first, then older first, then by name."""
    return sorted(pods, key=lambda p: (not (p.get("spec") or {}).get("nodeName"),
                                       P.parse_time((p.get("metadata") or {}).get("creationTimestamp")) or 0.0,
                                       P.name(p)))


def current_revision(ds: P.Obj, revisions: Sequence[P.Obj]) -> tuple[str, dict[str, Any] | None, list[P.Obj]]:
    """constructHistory: (hash, the revision to create or None, the DaemonSet's old revisions)."""
    template = (ds.get("spec") or {}).get("template") or {}
    data = R.template_patch(template)
    # daemon/update.go snapshot: the name and label hash is controller.ComputeHash of the template
    # (the pod-template-hash function), the data the patch
    hash_ = podhash.compute_hash(template, (ds.get("status") or {}).get("collisionCount"))
    mine = [r for r in revisions if P.controlled_by(r, ds)]
    name = f"{P.name(ds)[:223]}-{hash_}"
    cur = next((r for r in mine if P.name(r) == name), None)
    old = [r for r in mine if r is not cur]
    if cur is not None:
        return hash_, None, old
    number = max((int(r.get("revision") or 0) for r in mine), default=0) + 1
    lbls = {**(((template.get("metadata") or {}).get("labels")) or {}), R.HASH_LABEL: hash_}
    new = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
           "metadata": {"name": name, "namespace": P.namespace(ds), "labels": lbls,
                        "ownerReferences": [P.owner_reference(ds, API_VERSION, KIND)]},
           "data": json.loads(data), "revision": number}
    return hash_, new, old


def plan(ds: P.Obj, nodes: Sequence[P.Obj], namespace_pods: Sequence[P.Obj], revisions: Sequence[P.Obj],
         now: float, failed_backoff: Backoff | None = None) -> Plan:
    """`failed_backoff`: the controller's failedPodsBackoff, consulted and advanced here (a fresh one
    when not given: every failed pod deleted at once)."""
    out = Plan()
    backoff = failed_backoff if failed_backoff is not None else new_failed_pods_backoff()
    retry_at: float | None = None
    if P.deleting(ds):
        return out
    spec = ds.get("spec") or {}
    out.hash, out.revision, old_revisions = current_revision(ds, revisions)
    owned, out.adopt, out.release = claim(ds, spec.get("selector"), namespace_pods)
    by_node: dict[str, list[P.Obj]] = {}
    for pod in owned:
        target = target_node(pod)
        if target is not None:
            by_node.setdefault(target, []).append(pod)
    tols = tolerations(ds)
    node_names = {P.name(n) for n in nodes}
    need: list[str] = []
    delete: list[P.Obj] = []
    for node in nodes:
        run, keep = should_run(ds, node, tols)
        pods = by_node.get(P.name(node), [])
        if run and not pods:
            need.append(P.name(node))
        elif keep:
            running = []
            for pod in pods:
                if P.deleting(pod):
                    continue
                if P.phase(pod) == P.FAILED:
                    key = failed_pods_backoff_key(ds, P.name(node))
                    if backoff.in_backoff_since_update(key, now):  # deleted too recently: wait
                        at = now + backoff.get(key)
                        retry_at = at if retry_at is None else min(retry_at, at)
                        continue
                    backoff.next(key, now)
                    out.events.append(("Warning", "FailedDaemonPod", f"Found failed daemon pod {P.namespace(pod)}/"
                                       f"{P.name(pod)} on node {P.name(node)}, will try to kill it"))
                    delete.append(pod)
                elif P.phase(pod) == P.SUCCEEDED:
                    out.events.append(("Normal", "SucceededDaemonPod",
                                       f"Found succeeded daemon pod {P.namespace(pod)}/{P.name(pod)} on node "
                                       f"{P.name(node)}, will try to delete it"))
                    delete.append(pod)
                else:
                    running.append(pod)
            if not allows_surge(ds):
                delete.extend(_by_age(running)[1:])
            elif not running and run:  # surging: at least one live pod per node
                need.append(P.name(node))
            else:
                delete.extend(_surge_excess(ds, running, out.hash, now))
        elif pods:
            delete.extend(p for p in pods if not P.deleting(p))
    for node_name, pods in by_node.items():  # getUnscheduledPodsWithoutNode
        if node_name not in node_names:
            delete.extend(p for p in pods if not P.deleting(p))
    out.create = [_new_pod(ds, out.hash, n) for n in need[:BURST_REPLICAS]]
    if (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate" and not need:
        old, surge_nodes = _rolling_update(ds, nodes, by_node, tols, out.hash, now)
        delete.extend(p for p in old if all(p is not d for d in delete))
        out.create += [_new_pod(ds, out.hash, n) for n in surge_nodes[: BURST_REPLICAS - len(out.create)]]
    out.delete = delete[:BURST_REPLICAS]
    out.delete_revisions = _cleanup_history(ds, old_revisions, owned)
    out.status, out.recheck_at = _status(ds, nodes, by_node, tols, out.hash, now)
    if retry_at is not None:
        out.recheck_at = retry_at if out.recheck_at is None else min(out.recheck_at, retry_at)
    return out


def _new_pod(ds: P.Obj, hash_: str, node: str) -> dict[str, Any]:
    template = copy.deepcopy(dict((ds.get("spec") or {}).get("template") or {}))
    tspec = template.setdefault("spec", {})
    tspec["tolerations"] = tolerations(ds)
    tmd = template.setdefault("metadata", {})
    labels = dict(tmd.get("labels") or {})
    generation = ((ds.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION)
    if generation is not None:  # CreatePodTemplate's pod-template-generation, from spec.templateGeneration
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    tmd["labels"] = {**labels, R.HASH_LABEL: hash_}
    pod = P.pod_from_template(template, ds, P.owner_reference(ds, API_VERSION, KIND))
    pin_to_node(pod["spec"], node)
    return pod


def _updated(pod: P.Obj, hash_: str) -> bool:
    return P.labels(pod).get(R.HASH_LABEL) == hash_


def _surge_count(ds: P.Obj, desired: int) -> int:
    """util.SurgeCount: maxSurge scaled (rounding up) over `desired`; 0 without a RollingUpdate's maxSurge."""
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge")
    if strategy.get("type", "RollingUpdate") != "RollingUpdate" or surge is None:
        return 0
    return scaled_value(surge, desired, True)


def allows_surge(ds: P.Obj) -> bool:
    """util.AllowsSurge."""
    return _surge_count(ds, 1) > 0


def _surge_excess(ds: P.Obj, running: Sequence[P.Obj], hash_: str, now: float) -> list[P.Obj]:
    """podsShouldBeOnNode while surging: keep the oldest new and the oldest old pod (the old one until
    it is not ready or the new one is available), delete the rest."""
    newest: P.Obj | None = None
    oldest: P.Obj | None = None
    out: list[P.Obj] = []
    for pod in _by_age(running):
        if _updated(pod, hash_) and newest is None:
            newest = pod
        elif not _updated(pod, hash_) and oldest is None:
            oldest = pod
        else:
            out.append(pod)
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    if newest is not None and oldest is not None and (
            not P.is_ready(oldest) or P.is_available(newest, min_ready, now)):
        out.append(oldest)
    return out


def _rolling_update(ds: P.Obj, nodes: Sequence[P.Obj], by_node: Mapping[str, Sequence[P.Obj]],
                    tols: Sequence[Mapping[str, Any]], hash_: str, now: float) -> tuple[list[P.Obj], list[str]]:
    """update.go rollingUpdate: (old pods to delete, nodes to surge a new pod onto)."""
    spec = ds.get("spec") or {}
    desired = sum(1 for n in nodes if should_run(ds, n, tols)[0])
    ru = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
    max_unavailable = scaled_value(ru.get("maxUnavailable", 1), desired, True)
    max_surge = _surge_count(ds, desired)
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        max_unavailable = 1
    if max_surge > 0:
        return _surge_update(ds, nodes, by_node, tols, hash_, now, max_surge, desired)
    min_ready = int(spec.get("minReadySeconds") or 0)
    unavailable = 0
    replace: list[P.Obj] = []
    candidates: list[P.Obj] = []
    for _node, pods in sorted(by_node.items()):
        live = [p for p in pods if not P.deleting(p)]
        new = [p for p in live if _updated(p, hash_)]
        old = [p for p in live if not _updated(p, hash_)]
        if len(new) > 1 or len(old) > 1:
            unavailable += 1
            continue
        if (not new and not old) or (new and old):
            unavailable += 1
        elif new:
            if not P.is_available(new[0], min_ready, now):
                unavailable += 1
        elif not P.is_available(old[0], min_ready, now):
            replace.append(old[0])
        elif unavailable < max_unavailable:
            candidates.append(old[0])
    room = max(0, min(max_unavailable - unavailable, len(candidates)))
    return replace + candidates[:room], []


def _surge_update(ds: P.Obj, nodes: Sequence[P.Obj], by_node: Mapping[str, Sequence[P.Obj]],
                  tols: Sequence[Mapping[str, Any]], hash_: str, now: float, max_surge: int, desired: int,
                  ) -> tuple[list[P.Obj], list[str]]:
    """rollingUpdate's surge half: a new pod next to an old one on up to maxSurge nodes (at once where
    the old one is unavailable), the old one deleted once the new one is available; an old pod on a node
    that should no longer run it goes only while more pods are available than desired."""
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    by_name = {P.name(n): n for n in nodes}
    delete: list[P.Obj] = []
    should_not_run: list[P.Obj] = []
    allowed: list[str] = []
    candidates: list[str] = []
    surge = available = 0
    for node_name, pods in sorted(by_node.items()):
        live = [p for p in pods if not P.deleting(p)]
        new = [p for p in live if _updated(p, hash_)]
        old = [p for p in live if not _updated(p, hash_)]
        if len(new) > 1 or len(old) > 1:
            surge += 1
            continue
        shown = old[0] if old else new[0] if new else None
        if shown is not None and P.is_available(shown, min_ready, now):
            available += 1
        node = by_name.get(node_name)
        runs = node is not None and should_run(ds, node, tols)[0]
        if not old:
            continue
        if not new:
            if not P.is_available(old[0], min_ready, now) and runs:
                allowed.append(node_name)
            elif not P.is_available(old[0], min_ready, now):
                delete.append(old[0])
            elif not runs:
                should_not_run.append(old[0])
            elif surge < max_surge:
                candidates.append(node_name)
        elif not P.is_available(new[0], min_ready, now):
            surge += 1
        else:
            delete.append(old[0])
    if (deletable := available - desired) > 0:
        delete.extend(should_not_run[:deletable])
    room = max(0, min(max_surge - surge, len(candidates)))
    return delete, allowed + candidates[:room]


def _cleanup_history(ds: P.Obj, old: Sequence[P.Obj], pods: Sequence[P.Obj]) -> list[str]:
    limit = (ds.get("spec") or {}).get("revisionHistoryLimit")
    limit = 10 if limit is None else int(limit)
    live = {P.labels(p).get(R.HASH_LABEL) for p in pods if not P.deleting(p)}
    unused = [r for r in old if P.labels(r).get(R.HASH_LABEL) not in live]
    excess = len(old) - limit
    if excess <= 0:
        return []
    unused.sort(key=lambda r: int(r.get("revision") or 0))
    return [P.name(r) for r in unused[:excess]]


def _status(ds: P.Obj, nodes: Sequence[P.Obj], by_node: Mapping[str, Sequence[P.Obj]],
            tols: Sequence[Mapping[str, Any]], hash_: str, now: float) -> tuple[dict[str, Any] | None, float | None]:
    """updateDaemonSetStatus, in the JSON the Go status marshals to."""
    spec = ds.get("spec") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    desired = current = mis = ready = updated = available = 0
    recheck: list[float] = []
    for node in nodes:
        run, _ = should_run(ds, node, tols)
        pods = list(by_node.get(P.name(node), ()))
        if run:
            desired += 1
            if not pods:
                continue
            current += 1
            pod = _by_age(pods)[0]
            if P.is_ready(pod):
                ready += 1
                if P.is_available(pod, min_ready, now):
                    available += 1
                elif (at := P.available_at(pod, min_ready)) is not None:
                    recheck.append(at)
            if _updated(pod, hash_):
                updated += 1
        elif pods:
            mis += 1
    old = ds.get("status") or {}
    status: dict[str, Any] = {"currentNumberScheduled": current, "numberMisscheduled": mis,
                              "desiredNumberScheduled": desired, "numberReady": ready}
    generation = int((ds.get("metadata") or {}).get("generation") or 0)
    if generation:
        status["observedGeneration"] = generation
    for key, value in (("updatedNumberScheduled", updated), ("numberAvailable", available),
                       ("numberUnavailable", desired - available)):
        if value:
            status[key] = value
    for key in ("collisionCount", "conditions"):
        if old.get(key) is not None:
            status[key] = old[key]
    return (status if status != old else None), (min(recheck) if recheck else None)
