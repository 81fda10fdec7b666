"""Pod writes of the workload controllers (upstream's controller.PodControlInterface): a create
and a delete as the API server would carry them out for the controller's request.

Why: the embedded controllers write the store directly (no API round trip), so the parts of the
API server's pod handling that a controller's request would meet are done here: a create is
stored Pending with its QoS class and defaulted as kube-apiserver decodes a Pod (the pod strategy's
PrepareForCreate; objects/pod/defaults.py), and a delete is
graceful as the pod strategy's CheckGracefulDelete makes it (the pod's
terminationGracePeriodSeconds; at once for a pod no node runs), so the node stops the pod
before it goes, as with kube-apiserver.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.events import NORMAL, WARNING, EventRecorder
from nodeagent.errors import NodeAgentError
from nodeagent.objects import resourcequota
from nodeagent.objects.pod.admission import forbidden
from nodeagent.objects.pod.defaults import pod_defaults
from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.objects.pod_create_admission import admit_new_pod
from nodeagent.pods.qos import pod_qos
from nodeagent.store import Transaction
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import Clock


def create_pod(tx: Transaction, pod: dict[str, Any], clock: Clock) -> dict[str, Any]:
    """The create as kube-apiserver carries it out: the decoding's defaults (SetObjectDefaults_Pod), its
    default mutating admission (ServiceAccount, Priority, DefaultTolerationSeconds: a refusal is the
    controller's FailedCreate), PrepareForCreate, then the ResourceQuota admission (its refusal too)."""
    pod.setdefault("spec", {})
    pod_defaults(pod)
    pod = tx.record_fields(None, pod)  # kube-apiserver's create handler: the defaulted pod, before admission
    admit_new_pod(pod, tx.peek, lambda: tx.list("PriorityClass"), tx.generate_name, strict=False)
    pod["status"] = {"phase": "Pending", "qosClass": pod_qos(pod_from_manifest(pod, clock=clock))}
    try:
        resourcequota.admit_create(tx, "", "pods", pod, clock.now())
    except resourcequota.QuotaRefused as err:
        raise forbidden(pod, str(err)) from None
    return tx.create(pod)


def grace_period(pod: Mapping[str, Any]) -> int:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    period = int(spec.get("terminationGracePeriodSeconds") or 0)
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        period = 0
    return 1 if period < 0 else period


def delete_pod(tx: Transaction, pod: Mapping[str, Any], now: float) -> None:
    """Delete with the pod's grace period; a pod already marked for deletion is left as it is."""
    md = pod.get("metadata") or {}
    ns, name = str(md.get("namespace") or "default"), str(md["name"])
    if md.get("deletionTimestamp"):
        return
    period = grace_period(pod)
    if period > 0 or md.get("finalizers"):
        tx.mark_deleting("Pod", ns, name, deletion_timestamp=rfc3339(now + period), grace_period=period)
        return
    tx.delete("Pod", ns, name, uid=str(md.get("uid") or "") or None)


def adopt_and_release(tx: Transaction, owner: Mapping[str, Any], ref: Mapping[str, Any],
                      adopt: Iterable[Mapping[str, Any]], release: Iterable[Mapping[str, Any]]) -> None:
    """Add the owner's controller reference to the pods it adopts and drop it from those it releases
    (upstream's ControllerRefManager ClaimPods, as every workload controller does it)."""
    for pod in adopt:
        cur = copy.deepcopy(dict(pod))
        cur["metadata"]["ownerReferences"] = [*(pod["metadata"].get("ownerReferences") or []), ref]
        tx.update(cur)
    uid = str((owner.get("metadata") or {}).get("uid") or "")
    for pod in release:
        cur = copy.deepcopy(dict(pod))
        cur["metadata"]["ownerReferences"] = [r for r in pod["metadata"].get("ownerReferences") or []
                                              if r.get("uid") != uid]
        tx.update(cur)


def create_and_delete(tx: Transaction, owner: Mapping[str, Any], create: Iterable[dict[str, Any]],
                      delete: Iterable[Mapping[str, Any]], clock: Clock, events: EventRecorder,
                      now: float) -> str | None:
    """Create then delete pods for `owner` with upstream's SuccessfulCreate/FailedCreate and
    SuccessfulDelete/FailedDelete events; creating stops at the first failure (the rest wait for the
    next sync, as the slow-start batches do). The last failure's text, None when all went through."""
    failure: str | None = None
    for pod in create:
        try:
            made = create_pod(tx, pod, clock)
        except NodeAgentError as err:
            failure = str(err)
            events.record(tx, owner, WARNING, "FailedCreate", f"Error creating: {err}", now=now)
            break
        events.record(tx, owner, NORMAL, "SuccessfulCreate", f"Created pod: {made['metadata']['name']}", now=now)
    for gone in delete:
        try:
            delete_pod(tx, gone, now)
        except NodeAgentError as err:
            failure = str(err)
            events.record(tx, owner, WARNING, "FailedDelete", f"Error deleting: {err}", now=now)
            continue
        events.record(tx, owner, NORMAL, "SuccessfulDelete", f"Deleted pod: {gone['metadata']['name']}", now=now)
    return failure


def write_status(tx: Transaction, kind: str, owner: Mapping[str, Any], status: Mapping[str, Any] | None) -> None:
    """Replace the owner's status as its /status subresource would (None: nothing to write)."""
    if status is None:
        return
    md = owner["metadata"]
    cur = tx.get(kind, str(md.get("namespace") or "default"), str(md["name"]))
    cur["status"] = status
    tx.update_status(cur)
