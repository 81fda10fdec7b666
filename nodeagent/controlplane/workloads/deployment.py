"""The Deployment controller's decisions (upstream pkg/controller/deployment: sync.go, rolling.go,
recreate.go, progress.go and util/deployment_util.go).

One responsibility: from a Deployment, the ReplicaSets of its namespace and its pods, the
writes one sync makes, in upstream's order: adopt/release ReplicaSets, create the new
ReplicaSet (`<deployment>-<pod-template-hash>`, the hash as the real controller computes it),
scale ReplicaSets (rolling update within maxSurge/maxUnavailable, Recreate, proportional
scaling), update revision annotations, delete old ReplicaSets beyond revisionHistoryLimit, and
the status with upstream's conditions. `Sync` works on copies and records operations the
manager (controllers/deployment.py) applies in one store transaction. Pure: no I/O.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.controlplane.workloads import deployment_util as U
from nodeagent.controlplane.workloads import podhash
from nodeagent.controlplane.workloads import pods as P
from nodeagent.controlplane.workloads.replicaset import claim


@dataclass
class Ops:
    """What one sync writes, in order."""

    adopt: list[dict[str, Any]] = field(default_factory=list)  # ReplicaSets with ownerReferences changed
    create: list[dict[str, Any]] = field(default_factory=list)  # new ReplicaSets
    update: dict[str, dict[str, Any]] = field(default_factory=dict)  # ReplicaSet name -> spec/annotations
    delete: list[str] = field(default_factory=list)  # old ReplicaSets beyond the history limit
    annotations: dict[str, str] | None = None  # the Deployment's annotations, when they change
    status: dict[str, Any] | None = None  # the Deployment's status, when it changes
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)
    recheck_at: float | None = None  # progress deadline to look at again


class Sync:
    """One syncDeployment over copies of the Deployment and its ReplicaSets."""

    def __init__(self, d: P.Obj, namespace_rs: Sequence[P.Obj], pods_of: Mapping[str, Sequence[P.Obj]],
                 now: float) -> None:
        self.d = copy.deepcopy(dict(d))
        self.d.setdefault("status", {})
        self.now = now
        self.ops = Ops()
        self.pods_of = pods_of  # ReplicaSet uid -> its pods
        self.names = {P.name(rs) for rs in namespace_rs}
        self.others = {P.name(rs): rs for rs in namespace_rs}
        owned, adopt, release = claim(d, (d.get("spec") or {}).get("selector"), namespace_rs)
        ref = P.owner_reference(d, "apps/v1", "Deployment")
        for rs in adopt:
            new = copy.deepcopy(dict(rs))
            new["metadata"]["ownerReferences"] = [*(rs["metadata"].get("ownerReferences") or []), ref]
            self.ops.adopt.append(new)
        for rs in release:
            new = copy.deepcopy(dict(rs))
            new["metadata"]["ownerReferences"] = [r for r in rs["metadata"].get("ownerReferences") or []
                                                  if r.get("uid") != P.uid(d)]
            self.ops.adopt.append(new)
        self.rs = [copy.deepcopy(dict(r)) for r in owned]

    # --- entry ---

    def run(self) -> Ops:
        d = self.d
        spec = d.get("spec") or {}
        if spec.get("selector") == {}:
            self.ops.events.append(("Warning", "SelectingAll",
                                    "This deployment is selecting all pods. A non-empty selector is required."))
            gen = int(d["metadata"].get("generation") or 0)
            if U._status_int(d, "observedGeneration") < gen:
                self._write_status({**d["status"], "observedGeneration": gen})
            return self.ops
        if P.deleting(d):
            new, old = self._all_replica_sets(False)
            self._sync_status([*old, *([new] if new else [])], new)
            return self.ops
        self._check_paused()
        if spec.get("paused"):
            self._sync()
            return self.ops
        if self._is_scaling_event():
            self._sync()
            return self.ops
        if U.rolling(d):
            self._rollout_rolling()
        else:
            self._rollout_recreate()
        return self.ops

    # --- replica sets ---

    def _find_new(self) -> dict[str, Any] | None:
        want = U.template_key((self.d.get("spec") or {}).get("template"))
        for rs in sorted(self.rs, key=U._created_key):
            if U.template_key((rs.get("spec") or {}).get("template")) == want:
                return rs
        return None

    def _all_replica_sets(self, create: bool) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        new = self._find_new()
        old = [rs for rs in self.rs if rs is not new]
        new = self._new_replica_set(new, old, create)
        return new, old

    def _new_replica_set(self, existing: dict[str, Any] | None, old: list[dict[str, Any]],
                         create: bool) -> dict[str, Any] | None:
        d = self.d
        new_revision = str(max((U.revision(rs) for rs in old), default=0) + 1)
        if existing is not None:
            changed = self._set_new_rs_annotations(existing, new_revision, exists=True)
            min_ready = int((d.get("spec") or {}).get("minReadySeconds") or 0)
            if changed or int(existing["spec"].get("minReadySeconds") or 0) != min_ready:
                existing["spec"]["minReadySeconds"] = min_ready
                if not existing["spec"]["minReadySeconds"]:
                    existing["spec"].pop("minReadySeconds")
                self._touch(existing)
            needs = self._set_revision(existing["metadata"].get("annotations", {}).get(U.REVISION, ""))
            if U.has_progress_deadline(d) and U.get_condition(d["status"], U.PROGRESSING) is None:
                U.set_condition(d["status"], U.new_condition(U.PROGRESSING, "True", "FoundNewReplicaSet",
                                                         f'Found new replica set "{P.name(existing)}"', self.now))
                needs = True
            if needs:
                self._write_status(d["status"])
            return existing
        if not create:
            return None
        spec = d.get("spec") or {}
        collision = (d.get("status") or {}).get("collisionCount")
        template = copy.deepcopy(dict(spec.get("template") or {}))
        hash_ = podhash.compute_hash(template, collision)
        tmd = template.setdefault("metadata", {})
        tmd["labels"] = {**(tmd.get("labels") or {}), U.HASH_LABEL: hash_}
        selector = copy.deepcopy(dict(spec.get("selector") or {}))
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), U.HASH_LABEL: hash_}
        name = U.replica_set_name(P.name(d), hash_)
        rs: dict[str, Any] = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": P.namespace(d), "labels": dict(tmd["labels"]),
                         "ownerReferences": [P.owner_reference(d, "apps/v1", "Deployment")]},
            "spec": {"replicas": 0, "selector": selector, "template": template},
        }
        if spec.get("minReadySeconds"):
            rs["spec"]["minReadySeconds"] = spec["minReadySeconds"]
        if name in self.names:
            found = self.others[name]
            if P.controlled_by(found, d) and U.template_key(found["spec"].get("template")) == U.template_key(template):
                return copy.deepcopy(dict(found))  # created by a sync whose status write was lost
            d["status"]["collisionCount"] = int(collision or 0) + 1
            self._write_status(d["status"])
            raise Collision(name)
        rs["spec"]["replicas"] = self._new_rs_new_replicas([*old, rs], rs)
        self._set_new_rs_annotations(rs, new_revision, exists=False)
        self.ops.create.append(rs)
        self.rs.append(rs)
        self.names.add(name)
        if rs["spec"]["replicas"] > 0:
            self.ops.events.append(("Normal", "ScalingReplicaSet",
                                    f"Scaled up replica set {name} from 0 to {rs['spec']['replicas']}"))
        needs = self._set_revision(new_revision)
        if U.has_progress_deadline(d):
            U.set_condition(d["status"], U.new_condition(U.PROGRESSING, "True", "NewReplicaSetCreated",
                                                     f'Created new replica set "{name}"', self.now))
            needs = True
        if needs:
            self._write_status(d["status"])
        return rs

    def _set_new_rs_annotations(self, rs: dict[str, Any], new_revision: str, *, exists: bool) -> bool:
        ann = rs["metadata"].setdefault("annotations", {})
        changed = False
        for k, v in ((self.d["metadata"].get("annotations")) or {}).items():
            if k in U.SKIP_COPY or ann.get(k) == v:
                continue
            ann[k] = v
            changed = True
        old = ann.get(U.REVISION)
        try:
            old_int = int(old) if old else 0
        except ValueError:
            return False
        if old_int < int(new_revision):
            ann[U.REVISION] = new_revision
            changed = True
            if old is not None:
                history = ann.get(U.REVISION_HISTORY, "")
                parts = history.split(",")
                if not parts[0]:
                    ann[U.REVISION_HISTORY] = old
                else:
                    total, start = len(history) + len(old) + 1, 0
                    while total > U.MAX_REV_HISTORY_CHARS and start < len(parts):
                        total -= len(parts[start]) + 1
                        start += 1
                    if total <= U.MAX_REV_HISTORY_CHARS:
                        ann[U.REVISION_HISTORY] = ",".join([*parts[start:], old])
        want = U.replicas(self.d)
        if not exists and self._set_replicas_annotations(rs, want, want + U.max_surge(self.d)):
            changed = True
        return changed

    @staticmethod
    def _set_replicas_annotations(rs: dict[str, Any], desired: int, maximum: int) -> bool:
        ann = rs["metadata"].setdefault("annotations", {})
        changed = False
        for key, value in ((U.DESIRED, str(desired)), (U.MAX_REPLICAS, str(maximum))):
            if ann.get(key) != value:
                ann[key] = value
                changed = True
        return changed

    def _set_revision(self, rev: str) -> bool:
        """SetDeploymentRevision: the Deployment's annotation follows its new ReplicaSet's."""
        ann = self.d["metadata"].setdefault("annotations", {})
        if ann.get(U.REVISION) == rev:
            return False
        ann[U.REVISION] = rev
        self.ops.annotations = dict(ann)
        return True

    def _touch(self, rs: dict[str, Any]) -> None:
        self.ops.update[P.name(rs)] = rs

    def _scale_rs(self, rs: dict[str, Any], new_scale: int) -> bool:
        """scaleReplicaSetAndRecordEvent / scaleReplicaSet: the size and the U.replicas annotations."""
        old = U.replicas(rs)
        size_changed = old != new_scale
        ann_changed = self._set_replicas_annotations(rs, U.replicas(self.d), U.replicas(self.d) + U.max_surge(self.d))
        if size_changed or ann_changed:
            rs["spec"]["replicas"] = new_scale
            self._touch(rs)
            if size_changed:
                op = "up" if old < new_scale else "down"
                self.ops.events.append(("Normal", "ScalingReplicaSet",
                                        f"Scaled {op} replica set {P.name(rs)} from {old} to {new_scale}"))
        return size_changed

    def _new_rs_new_replicas(self, all_rs: Sequence[P.Obj], new: P.Obj) -> int:
        if not U.rolling(self.d):
            return U.replicas(self.d)
        current = sum(U.replicas(rs) for rs in all_rs)
        max_total = U.replicas(self.d) + U.max_surge(self.d)
        if current >= max_total:
            return U.replicas(new)
        up = min(max_total - current, U.replicas(self.d) - U.replicas(new))
        return U.replicas(new) + up

    # --- strategies ---

    def _rollout_rolling(self) -> None:
        new, old = self._all_replica_sets(True)
        all_rs = [*old, *([new] if new else [])]
        if self._reconcile_new(all_rs, new):
            self._sync_rollout_status(all_rs, new)
            return
        if self._reconcile_old(all_rs, [rs for rs in old if U.replicas(rs) > 0], new):
            self._sync_rollout_status(all_rs, new)
            return
        if self._complete(self._calculate_status(all_rs, new)):
            self._cleanup(old)
        self._sync_rollout_status(all_rs, new)

    def _reconcile_new(self, all_rs: Sequence[dict[str, Any]], new: dict[str, Any] | None) -> bool:
        if new is None:
            return False
        want = U.replicas(self.d)
        if U.replicas(new) == want:
            return False
        if U.replicas(new) > want:
            return self._scale_rs(new, want)
        return self._scale_rs(new, self._new_rs_new_replicas(all_rs, new))

    def _reconcile_old(self, all_rs: Sequence[dict[str, Any]], old: list[dict[str, Any]],
                       new: dict[str, Any] | None) -> bool:
        if sum(U.replicas(rs) for rs in old) == 0:
            return False
        all_pods = sum(U.replicas(rs) for rs in all_rs)
        min_available = U.replicas(self.d) - U.max_unavailable(self.d)
        new_unavailable = (U.replicas(new) - U._status_int(new, "availableReplicas")) if new else 0
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        cleaned = 0
        for rs in sorted(old, key=U._created_key):
            if cleaned >= max_scaled_down:
                break
            if U.replicas(rs) == 0 or U.replicas(rs) == U._status_int(rs, "availableReplicas"):
                continue
            down = min(max_scaled_down - cleaned, U.replicas(rs) - U._status_int(rs, "availableReplicas"))
            self._scale_rs(rs, U.replicas(rs) - down)
            cleaned += down
        scaled = self._scale_down_old_rolling(all_rs, old)
        return cleaned + scaled > 0

    def _scale_down_old_rolling(self, all_rs: Sequence[dict[str, Any]], old: list[dict[str, Any]]) -> int:
        min_available = U.replicas(self.d) - U.max_unavailable(self.d)
        available = sum(U._status_int(rs, "availableReplicas") for rs in all_rs)
        if available <= min_available:
            return 0
        total = available - min_available
        done = 0
        for rs in sorted(old, key=U._created_key):
            if done >= total:
                break
            if U.replicas(rs) == 0:
                continue
            down = min(U.replicas(rs), total - done)
            self._scale_rs(rs, U.replicas(rs) - down)
            done += down
        return done

    def _rollout_recreate(self) -> None:
        new, old = self._all_replica_sets(False)
        all_rs = [*old, *([new] if new else [])]
        scaled = False
        for rs in old:
            if U.replicas(rs) > 0 and self._scale_rs(rs, 0):
                scaled = True
        if scaled:
            self._sync_rollout_status(all_rs, new)
            return
        if self._old_pods_running(new, old):
            self._sync_rollout_status(all_rs, new)
            return
        if new is None:
            new, old = self._all_replica_sets(True)
            all_rs = [*old, *([new] if new else [])]
        if new is not None:
            self._scale_rs(new, U.replicas(self.d))
        if self._complete(self._calculate_status(all_rs, new)):
            self._cleanup(old)
        self._sync_rollout_status(all_rs, new)

    def _old_pods_running(self, new: P.Obj | None, old: Sequence[P.Obj]) -> bool:
        if sum(U._status_int(rs, "replicas") for rs in old) > 0:
            return True
        for rs in self.rs:
            if new is not None and P.uid(rs) == P.uid(new):
                continue
            for pod in self.pods_of.get(P.uid(rs), ()):
                if P.phase(pod) not in (P.FAILED, P.SUCCEEDED):
                    return True
        return False

    def _is_scaling_event(self) -> bool:
        new, old = self._all_replica_sets(False)
        for rs in [*old, *([new] if new else [])]:
            if U.replicas(rs) <= 0:
                continue
            raw = (rs["metadata"].get("annotations") or {}).get(U.DESIRED)
            try:
                desired = int(raw) if raw is not None else None
            except ValueError:
                desired = None
            if desired is not None and desired != U.replicas(self.d):
                return True
        return False

    def _sync(self) -> None:
        """sync(): scaling (and a paused Deployment's cleanup) without a rollout."""
        new, old = self._all_replica_sets(False)
        self._scale(new, old)
        if (self.d.get("spec") or {}).get("paused"):
            self._cleanup(old)
        all_rs = [*old, *([new] if new else [])]
        self._sync_status(all_rs, new)

    def _scale(self, new: dict[str, Any] | None, old: list[dict[str, Any]]) -> None:
        d = self.d
        active = [rs for rs in [*([new] if new else []), *old] if U.replicas(rs) > 0]
        target: dict[str, Any] | None = None
        if not active:
            if new is not None:
                target = new
            elif old:
                target = sorted(old, key=U._created_key)[-1]
        elif len(active) == 1:
            target = active[0]
        if target is not None or not active:
            if target is not None and U.replicas(target) != U.replicas(d):
                self._scale_rs(target, U.replicas(d))
            return
        if new is not None and U.replicas(new) == U.replicas(d) and \
                (new["metadata"].get("annotations") or {}).get(U.DESIRED) == str(U.replicas(d)) and \
                U._status_int(new, "availableReplicas") == U.replicas(d):
            for rs in old:
                if U.replicas(rs) > 0:
                    self._scale_rs(rs, 0)
            return
        if not U.rolling(d):
            return
        total = sum(U.replicas(rs) for rs in active)
        allowed = U.replicas(d) + U.max_surge(d) if U.replicas(d) > 0 else 0
        to_add = allowed - total
        if to_add > 0:  # ReplicaSetsBySizeNewer: larger first, then newer
            ordered = sorted(active, key=lambda rs: (-U.replicas(rs), -U._created_key(rs)[0]))
        else:  # ReplicaSetsBySizeOlder: larger first, then older
            ordered = sorted(active, key=lambda rs: (-U.replicas(rs), U._created_key(rs)[0]))
        sizes: dict[str, int] = {}
        added = 0
        for rs in ordered:
            if to_add == 0:
                sizes[P.name(rs)] = U.replicas(rs)
                continue
            prop = self._proportion(rs, to_add, added)
            sizes[P.name(rs)] = U.replicas(rs) + prop
            added += prop
        for i, rs in enumerate(ordered):
            size = sizes[P.name(rs)]
            if i == 0 and to_add != 0:
                size = max(0, size + to_add - added)
            self._scale_rs(rs, size)

    def _proportion(self, rs: P.Obj, to_add: int, added: int) -> int:
        if rs is None or U.replicas(rs) == 0 or to_add == 0 or to_add == added:
            return 0
        fraction = self._fraction(rs)
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    def _fraction(self, rs: P.Obj) -> int:
        d = self.d
        if U.replicas(d) == 0:
            return -U.replicas(rs)
        deployment_replicas = U.replicas(d) + U.max_surge(d)
        raw = (rs["metadata"].get("annotations") or {}).get(U.MAX_REPLICAS)
        try:
            annotated = int(raw) if raw is not None else U._status_int(d, "replicas")
        except ValueError:
            annotated = U._status_int(d, "replicas")
        if annotated == 0:
            annotated = U._status_int(d, "replicas")
        if annotated == 0:
            return 0
        size = U.replicas(rs) * deployment_replicas / annotated
        return math.floor(size + 0.5) - U.replicas(rs)  # integer.RoundToInt32

    def _cleanup(self, old: Sequence[dict[str, Any]]) -> None:
        limit = (self.d.get("spec") or {}).get("revisionHistoryLimit")
        if limit is None:
            return
        alive = [rs for rs in old if not P.deleting(rs)]
        diff = len(alive) - int(limit)
        if diff <= 0:
            return
        for rs in sorted(alive, key=lambda r: (U.revision(r), U._created_key(r)))[:diff]:
            if U._status_int(rs, "replicas") != 0 or U.replicas(rs) != 0 or \
                    int(rs["metadata"].get("generation") or 0) > U._status_int(rs, "observedGeneration"):
                continue
            self.ops.delete.append(P.name(rs))

    def _check_paused(self) -> None:
        d = self.d
        if not U.has_progress_deadline(d):
            return
        cond = U.get_condition(d["status"], U.PROGRESSING)
        if cond is not None and cond.get("reason") == "ProgressDeadlineExceeded":
            return
        paused_exists = cond is not None and cond.get("reason") == "DeploymentPaused"
        if (d.get("spec") or {}).get("paused") and not paused_exists:
            U.set_condition(d["status"], U.new_condition(U.PROGRESSING, "Unknown", "DeploymentPaused",
                                                     "Deployment is paused", self.now))
        elif not (d.get("spec") or {}).get("paused") and paused_exists:
            U.set_condition(d["status"], U.new_condition(U.PROGRESSING, "Unknown", "DeploymentResumed",
                                                     "Deployment is resumed", self.now))
        else:
            return
        self._write_status(d["status"])

    # --- status ---

    def _calculate_status(self, all_rs: Sequence[P.Obj], new: P.Obj | None) -> dict[str, Any]:
        d = self.d
        available = sum(U._status_int(rs, "availableReplicas") for rs in all_rs)
        total = sum(U.replicas(rs) for rs in all_rs)
        status: dict[str, Any] = {}
        gen = int(d["metadata"].get("generation") or 0)
        counters = (("observedGeneration", gen),
                    ("replicas", sum(U._status_int(rs, "replicas") for rs in all_rs)),
                    ("updatedReplicas", U._status_int(new, "replicas") if new else 0),
                    ("readyReplicas", sum(U._status_int(rs, "readyReplicas") for rs in all_rs)),
                    ("availableReplicas", available),
                    ("unavailableReplicas", max(0, total - available)))
        for key, value in counters:
            if value:
                status[key] = value
        status["terminatingReplicas"] = sum(U._status_int(rs, "terminatingReplicas") for rs in all_rs)
        conditions = [dict(c) for c in d["status"].get("conditions") or ()]
        if conditions:
            status["conditions"] = conditions
        if d["status"].get("collisionCount") is not None:
            status["collisionCount"] = d["status"]["collisionCount"]
        if available >= U.replicas(d) - U.max_unavailable(d):
            U.set_condition(status, U.new_condition(U.AVAILABLE, "True", "MinimumReplicasAvailable",
                                                "Deployment has minimum availability.", self.now))
        else:
            U.set_condition(status, U.new_condition(U.AVAILABLE, "False", "MinimumReplicasUnavailable",
                                                "Deployment does not have minimum availability.", self.now))
        return status

    def _complete(self, status: Mapping[str, Any]) -> bool:
        want = U.replicas(self.d)
        return (int(status.get("updatedReplicas") or 0) == want and int(status.get("replicas") or 0) == want
                and int(status.get("availableReplicas") or 0) == want
                and int(status.get("observedGeneration") or 0) >= int(self.d["metadata"].get("generation") or 0))

    def _progressing(self, status: Mapping[str, Any]) -> bool:
        old = self.d["status"]
        old_old = int(old.get("replicas") or 0) - int(old.get("updatedReplicas") or 0)
        new_old = int(status.get("replicas") or 0) - int(status.get("updatedReplicas") or 0)
        return (int(status.get("updatedReplicas") or 0) > int(old.get("updatedReplicas") or 0) or new_old < old_old
                or int(status.get("readyReplicas") or 0) > int(old.get("readyReplicas") or 0)
                or int(status.get("availableReplicas") or 0) > int(old.get("availableReplicas") or 0))

    def _deadline(self, status: Mapping[str, Any]) -> float | None:
        """When a Progressing condition (not complete, not timed out) times out."""
        if not U.has_progress_deadline(self.d):
            return None
        cond = U.get_condition(status, U.PROGRESSING)
        if cond is None or cond.get("reason") in ("NewReplicaSetAvailable", "ProgressDeadlineExceeded"):
            return None
        since = P.parse_time(cond.get("lastUpdateTime"))
        if since is None:
            return None
        return since + int((self.d.get("spec") or {}).get("progressDeadlineSeconds") or 0)

    def _sync_rollout_status(self, all_rs: Sequence[P.Obj], new: P.Obj | None) -> None:
        d = self.d
        status = self._calculate_status(all_rs, new)
        if not U.has_progress_deadline(d):
            U.remove_condition(status, U.PROGRESSING)
        cur = U.get_condition(d["status"], U.PROGRESSING)
        complete = (int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0)
                    and cur is not None and cur.get("reason") == "NewReplicaSetAvailable")
        if U.has_progress_deadline(d) and not complete:
            rs_name = P.name(new) if new else ""
            if self._complete(status):
                msg = f'ReplicaSet "{rs_name}" has successfully progressed.' if new else \
                    f'Deployment "{P.name(d)}" has successfully progressed.'
                U.set_condition(status, U.new_condition(U.PROGRESSING, "True", "NewReplicaSetAvailable", msg, self.now))
            elif self._progressing(status):
                msg = f'ReplicaSet "{rs_name}" is progressing.' if new else f'Deployment "{P.name(d)}" is progressing.'
                cond = U.new_condition(U.PROGRESSING, "True", "ReplicaSetUpdated", msg, self.now)
                if cur is not None:
                    if cur.get("status") == "True":
                        cond["lastTransitionTime"] = cur.get("lastTransitionTime")
                    U.remove_condition(status, U.PROGRESSING)
                U.set_condition(status, cond)
            elif (due := self._deadline(status)) is not None and due < self.now:
                msg = f'ReplicaSet "{rs_name}" has timed out progressing.' if new else \
                    f'Deployment "{P.name(d)}" has timed out progressing.'
                U.set_condition(status, U.new_condition(U.PROGRESSING, "False", "ProgressDeadlineExceeded", msg,
                                                        self.now))
        failure = next((c for rs in all_rs for c in (rs.get("status") or {}).get("conditions") or ()
                        if c.get("type") == U.REPLICA_FAILURE and c.get("status") == "True"), None)
        if failure is not None:
            U.set_condition(status, {"type": U.REPLICA_FAILURE, "status": "True",
                                   "lastUpdateTime": failure.get("lastTransitionTime"),
                                   "lastTransitionTime": failure.get("lastTransitionTime"),
                                   "reason": failure.get("reason", ""), "message": failure.get("message", "")})
        else:
            U.remove_condition(status, U.REPLICA_FAILURE)
        if status != d["status"]:
            self._write_status(status)
        due = self._deadline(status)
        self.ops.recheck_at = due + 0.001 if due is not None and due >= self.now else None

    def _sync_status(self, all_rs: Sequence[P.Obj], new: P.Obj | None) -> None:
        status = self._calculate_status(all_rs, new)
        if status != self.d["status"]:
            self._write_status(status)

    def _write_status(self, status: Mapping[str, Any]) -> None:
        self.d["status"] = dict(status)
        self.ops.status = dict(status)


class Collision(Exception):
    """The new ReplicaSet's name is taken by another template: collisionCount went up, sync again."""
