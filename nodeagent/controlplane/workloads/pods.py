"""What every workload controller asks of pods and owners: upstream pkg/controller/controller_utils.go
and pkg/api/v1/pod's helpers over store JSON.

One responsibility: the shared rules (active, terminating, ready, available, controller
references, the pod a template makes, the order in which surplus pods are deleted) so the
ReplicaSet, DaemonSet, StatefulSet and Job decisions use one definition of each. Pure: no I/O;
`now` is passed in (epoch seconds).
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

Obj = Mapping[str, Any]
SUCCEEDED, FAILED, RUNNING, PENDING, UNKNOWN = "Succeeded", "Failed", "Running", "Pending", "Unknown"
_PHASE_ORDINAL = {PENDING: 0, UNKNOWN: 1, RUNNING: 2}


def parse_time(stamp: Any) -> float | None:
    """An RFC 3339 timestamp as epoch seconds (None when unset or unreadable)."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def deleting(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def is_active(pod: Obj) -> bool:
    """controller.IsPodActive: neither terminal nor being deleted."""
    return phase(pod) not in (SUCCEEDED, FAILED) and not deleting(pod)


def is_terminating(pod: Obj) -> bool:
    """controller.IsPodTerminating: being deleted and not terminal yet."""
    return phase(pod) not in (SUCCEEDED, FAILED) and deleting(pod)


def condition(obj: Obj, ctype: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == ctype:
            return cond
    return None


def is_ready(pod: Obj) -> bool:
    cond = condition(pod, "Ready")
    return cond is not None and cond.get("status") == "True"


def ready_since(pod: Obj) -> float | None:
    """The Ready condition's lastTransitionTime when the pod is ready."""
    cond = condition(pod, "Ready")
    if cond is None or cond.get("status") != "True":
        return None
    return parse_time(cond.get("lastTransitionTime"))


def is_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """podutil.IsPodAvailable: ready for at least minReadySeconds."""
    if not is_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = ready_since(pod)
    return since is not None and since + min_ready_seconds <= now


def available_at(pod: Obj, min_ready_seconds: int) -> float | None:
    """When a ready pod becomes available (None: not ready, or no minReadySeconds)."""
    since = ready_since(pod)
    return None if since is None or min_ready_seconds <= 0 else since + min_ready_seconds


def uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def namespace(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def controller_ref(obj: Obj) -> Mapping[str, Any] | None:
    """metav1.GetControllerOf."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return ref
    return None


def controlled_by(obj: Obj, owner: Obj) -> bool:
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == uid(owner)


def owner_reference(owner: Obj, api_version: str, kind: str) -> dict[str, Any]:
    """metav1.NewControllerRef: controller and blockOwnerDeletion true."""
    return {"apiVersion": api_version, "kind": kind, "name": name(owner), "uid": uid(owner),
            "controller": True, "blockOwnerDeletion": True}


def pod_from_template(template: Obj, owner: Obj, ref: Mapping[str, Any], *,
                      generate_name: str | None = None, pod_name: str | None = None) -> dict[str, Any]:
    """controller.GetPodFromTemplate: the template's labels, annotations and finalizers, its spec,
    the controller reference; named `<owner>-<random>` by the API server (generateName) unless
    a name is given (StatefulSet)."""
    tmd = template.get("metadata") or {}
    md: dict[str, Any] = {"namespace": namespace(owner), "ownerReferences": [dict(ref)]}
    if pod_name is not None:
        md["name"] = pod_name
    else:
        md["generateName"] = generate_name if generate_name is not None else f"{name(owner)}-"
    for key in ("labels", "annotations"):
        if tmd.get(key):
            md[key] = dict(tmd[key])
    if tmd.get("finalizers"):
        md["finalizers"] = list(tmd["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": copy.deepcopy(dict(template.get("spec") or {}))}


def selector_matches(selector: Mapping[str, Any] | None, lbls: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against labels; an empty or missing selector matches nothing
    (metav1.LabelSelectorAsSelector gives labels.Nothing() for nil, Everything() for {}: the
    workload kinds' validation forbids both, and the controllers skip such objects)."""
    if not selector:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if lbls.get(key) != value:
            return False
    for req in selector.get("matchExpressions") or ():
        key, op, values = req.get("key"), req.get("operator"), list(req.get("values") or ())
        if op == "In" and lbls.get(key) not in values:
            return False
        if op == "NotIn" and key in lbls and lbls[key] in values:
            return False
        if op == "Exists" and key not in lbls:
            return False
        if op == "DoesNotExist" and key in lbls:
            return False
    return True


def _max_restarts(pod: Obj) -> tuple[int, int]:
    status = pod.get("status") or {}
    regular = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ()), default=0)
    sidecars = {c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or ()
                if c.get("restartPolicy") == "Always"}
    sidecar = max((int(c.get("restartCount") or 0) for c in status.get("initContainerStatuses") or ()
                   if c.get("name") in sidecars), default=0)
    return regular, sidecar


def _log_rank(t: float, now: float) -> int:
    d = (now - t) * 1e9  # Go compares durations in nanoseconds
    return int(math.log2(d)) if d > 0 else -1


def _deletion_cost(pod: Obj) -> int:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get("controller.kubernetes.io/pod-deletion-cost")
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


def deletion_order(pods: Sequence[Obj], related: Sequence[Obj], now: float) -> list[Obj]:
    """The pods sorted as controller.ActivePodsWithRanks sorts them, the first deleted first:
    unassigned, then Pending < Unknown < Running, not ready, lower pod-deletion-cost, more
    active related pods on the same node ("doubled up"), ready more recently (log2 buckets),
    more container restarts, created more recently (log2 buckets); ties by uid."""
    on_node: dict[str, int] = {}
    for pod in related:
        if is_active(pod):
            node = str((pod.get("spec") or {}).get("nodeName") or "")
            on_node[node] = on_node.get(node, 0) + 1

    def less(a: Obj, b: Obj) -> bool:
        na, nb = (str((p.get("spec") or {}).get("nodeName") or "") for p in (a, b))
        if na != nb and (not na or not nb):
            return not na
        pa, pb = _PHASE_ORDINAL.get(phase(a), 0), _PHASE_ORDINAL.get(phase(b), 0)
        if pa != pb:
            return pa < pb
        ra, rb = is_ready(a), is_ready(b)
        if ra != rb:
            return not ra
        ca, cb = _deletion_cost(a), _deletion_cost(b)
        if ca != cb:
            return ca < cb
        ka, kb = on_node.get(na, 0), on_node.get(nb, 0)
        if ka != kb:
            return ka > kb
        if ra and rb:
            ta, tb = ready_since(a), ready_since(b)
            if ta != tb:
                if ta is None or tb is None:
                    return ta is None
                diff = _log_rank(ta, now) - _log_rank(tb, now)
                return uid(a) < uid(b) if diff == 0 else diff < 0
        xa, xb = _max_restarts(a), _max_restarts(b)
        if xa != xb:
            return xa[0] > xb[0] if xa[0] != xb[0] else xa[1] > xb[1]
        sa = parse_time((a.get("metadata") or {}).get("creationTimestamp"))
        sb = parse_time((b.get("metadata") or {}).get("creationTimestamp"))
        if sa != sb:
            if sa is None or sb is None:
                return sa is None
            diff = _log_rank(sa, now) - _log_rank(sb, now)
            return uid(a) < uid(b) if diff == 0 else diff < 0
        return False

    return sorted(pods, key=_cmp_key(less))


def _cmp_key(less: Callable[[Obj, Obj], bool]) -> Callable[[Obj], Any]:
    return functools.cmp_to_key(lambda a, b: -1 if less(a, b) else 1 if less(b, a) else 0)


def set_condition(conditions: list[dict[str, Any]], cond: dict[str, Any]) -> list[dict[str, Any]]:
    """The conditions with `cond` in place of the one of its type; unchanged when that one has
    the same status and reason (upstream's SetCondition for the workload kinds)."""
    for cur in conditions:
        if cur.get("type") == cond["type"] and cur.get("status") == cond["status"] and \
                cur.get("reason") == cond.get("reason"):
            return conditions
    return [c for c in conditions if c.get("type") != cond["type"]] + [cond]
