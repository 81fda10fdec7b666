"""The StatefulSet controller's decisions (upstream pkg/controller/statefulset:
stateful_set_control.go, stateful_set_utils.go): pods with stable names `<set>-<ordinal>`,
created in order and removed from the highest ordinal.

One responsibility: from a StatefulSet, the pods of its namespace, its ControllerRevisions and
PersistentVolumeClaims, what one sync writes: the update revision (named and hashed as
upstream's, revision.py), the next pod (OrderedReady: one at a time, each after the lower ones
are Running and Ready (available with minReadySeconds); Parallel: every missing one), its
claims from volumeClaimTemplates (`<claim>-<set>-<ordinal>`), terminal pods deleted to be
recreated, pods beyond replicas deleted from the highest ordinal (OrderedReady: one at a time
once healthy), a RollingUpdate replacing pods of an old revision from the highest ordinal down
to the partition (maxUnavailable, 1 by default), and the status. Pod identity: labels
statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index, controller-revision-hash,
hostname and subdomain (spec.serviceName). Pure: no I/O.

Not done: OnDelete keeps pods but still counts them; persistentVolumeClaimRetentionPolicy (claims
are kept, as the default Retain does); spec.ordinals.start other than 0; the update of a pod
whose identity labels were changed by hand.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.controlplane.workloads import pods as P
from nodeagent.controlplane.workloads import revision as R
from nodeagent.controlplane.workloads.deployment_util import scaled_value
from nodeagent.controlplane.workloads.replicaset import claim

API_VERSION, KIND = "apps/v1", "StatefulSet"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


@dataclass
class Plan:
    revision: dict[str, Any] | None = None
    adopt: list[P.Obj] = field(default_factory=list)
    release: list[P.Obj] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    create: list[dict[str, Any]] = field(default_factory=list)
    delete: list[P.Obj] = field(default_factory=list)
    status: dict[str, Any] | None = None
    recheck_at: float | None = None


def ordinal(set_name: str, pod: P.Obj) -> int | None:
    m = re.fullmatch(re.escape(set_name) + r"-(\d+)", P.name(pod))
    return int(m.group(1)) if m else None


def _replicas(sts: P.Obj) -> int:
    value = (sts.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _running_ready(pod: P.Obj) -> bool:
    return P.phase(pod) == P.RUNNING and P.is_ready(pod)


def current_revision(sts: P.Obj, revisions: Sequence[P.Obj]) -> tuple[str, dict[str, Any] | None, list[P.Obj]]:
    template = (sts.get("spec") or {}).get("template") or {}
    data = R.template_patch(template)
    # getStatefulSetRevisions passes the collision count always (0 when unset): it is hashed in
    hash_ = R.hash_revision(data, int((sts.get("status") or {}).get("collisionCount") or 0))
    mine = [r for r in revisions if P.controlled_by(r, sts)]
    name = f"{P.name(sts)[:223]}-{hash_}"
    cur = next((r for r in mine if P.name(r) == name), None)
    if cur is not None:
        return name, None, mine
    number = max((int(r.get("revision") or 0) for r in mine), default=0) + 1
    lbls = {**(((template.get("metadata") or {}).get("labels")) or {}), R.HISTORY_HASH_LABEL: hash_}
    md: dict[str, Any] = {"name": name, "namespace": P.namespace(sts), "labels": lbls,
                          "ownerReferences": [P.owner_reference(sts, API_VERSION, KIND)]}
    if (sts.get("metadata") or {}).get("annotations"):
        md["annotations"] = dict(sts["metadata"]["annotations"])
    return name, {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": md,
                  "data": json.loads(data), "revision": number}, mine


def claims_of(sts: P.Obj, index: int) -> list[dict[str, Any]]:
    """getPersistentVolumeClaims: each template named `<claim>-<set>-<ordinal>`, labelled with the
    set's selector."""
    spec = sts.get("spec") or {}
    match = (spec.get("selector") or {}).get("matchLabels") or {}
    out = []
    for tmpl in spec.get("volumeClaimTemplates") or ():
        md = tmpl.get("metadata") or {}
        claim_md: dict[str, Any] = {"name": f"{md.get('name')}-{P.name(sts)}-{index}", "namespace": P.namespace(sts),
                                    "labels": {**(md.get("labels") or {}), **match}}
        if md.get("annotations"):
            claim_md["annotations"] = dict(md["annotations"])
        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": claim_md,
                    "spec": copy.deepcopy(dict(tmpl.get("spec") or {}))})
    return out


def new_pod(sts: P.Obj, index: int, revision_name: str) -> dict[str, Any]:
    """newStatefulSetPod: the template's pod named `<set>-<ordinal>` with its identity and storage; it
    keeps the generateName `<set>-` GetPodFromTemplate gave it (unused: the name is set)."""
    spec = sts.get("spec") or {}
    pod = P.pod_from_template(spec.get("template") or {}, sts, P.owner_reference(sts, API_VERSION, KIND),
                              pod_name=f"{P.name(sts)}-{index}")
    pod["metadata"]["generateName"] = f"{P.name(sts)}-"
    name = pod["metadata"]["name"]
    pod["metadata"]["labels"] = {**(pod["metadata"].get("labels") or {}), POD_NAME_LABEL: name,
                                 POD_INDEX_LABEL: str(index), R.HASH_LABEL: revision_name}
    pod["spec"]["hostname"] = name
    if spec.get("serviceName"):
        pod["spec"]["subdomain"] = spec["serviceName"]
    volumes = [v for v in pod["spec"].get("volumes") or ()]
    for tmpl, made in zip(spec.get("volumeClaimTemplates") or (), claims_of(sts, index), strict=False):
        vname = (tmpl.get("metadata") or {}).get("name")
        volumes = [v for v in volumes if v.get("name") != vname]
        volumes.append({"name": vname, "persistentVolumeClaim": {"claimName": made["metadata"]["name"]}})
    if volumes:
        pod["spec"]["volumes"] = volumes
    return pod


def plan(sts: P.Obj, namespace_pods: Sequence[P.Obj], revisions: Sequence[P.Obj],
         existing_claims: set[str], now: float) -> Plan:
    out = Plan()
    spec = sts.get("spec") or {}
    update_revision, out.revision, _ = current_revision(sts, revisions)
    status_old = sts.get("status") or {}
    current_name = str(status_old.get("currentRevision") or update_revision)
    owned, out.adopt, out.release = claim(sts, spec.get("selector"), namespace_pods)
    members = {o: p for p in owned if (o := ordinal(P.name(sts), p)) is not None}
    count = _replicas(sts)
    ordered = (spec.get("podManagementPolicy") or "OrderedReady") == "OrderedReady"
    min_ready = int(spec.get("minReadySeconds") or 0)
    if not P.deleting(sts):
        _manage(sts, out, members, count, ordered, min_ready, update_revision, existing_claims, now)
    live = [p for o, p in members.items() if o < count]
    status = _status(sts, live, min_ready, current_name, update_revision, now)
    if status != status_old:
        out.status = status
    due = [t for p in live if (t := P.available_at(p, min_ready)) is not None and t > now]
    out.recheck_at = min(due) if due else None
    return out


def _manage(sts: P.Obj, out: Plan, members: Mapping[int, P.Obj], count: int, ordered: bool, min_ready: int,
            update_revision: str, existing_claims: set[str], now: float) -> None:
    for i in range(count):
        pod = members.get(i)
        if pod is not None and P.phase(pod) in (P.SUCCEEDED, P.FAILED):
            if not P.deleting(pod):
                out.delete.append(pod)
            if ordered:
                return
            continue
        if pod is None:
            out.claims.extend(c for c in claims_of(sts, i) if c["metadata"]["name"] not in existing_claims)
            out.create.append(new_pod(sts, i, update_revision))
            if ordered:
                return
            continue
        if ordered and (P.deleting(pod) or not _running_ready(pod) or not P.is_available(pod, min_ready, now)):
            return
    condemned = sorted((o for o in members if o >= count), reverse=True)
    for o in condemned:
        pod = members[o]
        if P.deleting(pod):
            if ordered:
                return
            continue
        out.delete.append(pod)
        if ordered:
            return
    if condemned:
        return
    strategy = spec_strategy(sts)
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return
    ru = strategy.get("rollingUpdate") or {}
    partition = int(ru.get("partition") or 0)
    max_unavailable = max(1, scaled_value(ru.get("maxUnavailable", 1), count, True))
    unavailable = sum(1 for i in range(count) if (p := members.get(i)) is None or P.deleting(p)
                      or not P.is_available(p, min_ready, now))
    budget = max_unavailable - unavailable
    for i in range(count - 1, partition - 1, -1):
        pod = members.get(i)
        if budget <= 0:
            break
        if pod is not None and P.labels(pod).get(R.HASH_LABEL) != update_revision and not P.deleting(pod):
            out.delete.append(pod)
            budget -= 1


def spec_strategy(sts: P.Obj) -> Mapping[str, Any]:
    return ((sts.get("spec") or {}).get("updateStrategy")) or {}


def _status(sts: P.Obj, live: Sequence[P.Obj], min_ready: int, current: str, update: str,
            now: float) -> dict[str, Any]:
    created = [p for p in live if P.phase(p)]
    ready = sum(1 for p in live if _running_ready(p))
    available = sum(1 for p in live if _running_ready(p) and P.is_available(p, min_ready, now))
    kept = [p for p in created if not P.deleting(p)]
    cur_n = sum(1 for p in kept if P.labels(p).get(R.HASH_LABEL) == current)
    upd_n = sum(1 for p in kept if P.labels(p).get(R.HASH_LABEL) == update)
    count = _replicas(sts)
    if upd_n == count and ready == count:  # the update is complete: the update revision is current
        current, cur_n = update, upd_n
    status: dict[str, Any] = {}
    generation = int((sts.get("metadata") or {}).get("generation") or 0)
    if generation:
        status["observedGeneration"] = generation
    status["replicas"] = len(created)
    for key, value in (("readyReplicas", ready), ("currentReplicas", cur_n), ("updatedReplicas", upd_n),
                       ("currentRevision", current), ("updateRevision", update)):
        if value:
            status[key] = value
    status["collisionCount"] = int((sts.get("status") or {}).get("collisionCount") or 0)
    if (sts.get("status") or {}).get("conditions"):
        status["conditions"] = sts["status"]["conditions"]
    status["availableReplicas"] = available
    return status
