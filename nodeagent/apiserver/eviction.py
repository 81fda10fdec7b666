"""pods/NAME/eviction: POST a policy/v1 (or v1beta1) Eviction to delete a pod only as far as its
PodDisruptionBudget allows, as upstream's EvictionREST (pkg/registry/core/pod/storage/eviction.go,
v1.37.2).

Why: the Eviction API is what `kubectl drain`, the cluster autoscaler and the descheduler use;
without it drain fell back to deleting pods and ignored every budget. The rules, in upstream's order:
- a terminal (Succeeded, Failed), Pending or already deleting pod is deleted with no budget check
  (a Pending one with its resourceVersion as precondition, so it cannot turn Ready meanwhile);
- more than one budget selecting the pod: a 500 Status, nothing deleted;
- an unready pod is deleted without using the budget when the budget's
  unhealthyPodEvictionPolicy is AlwaysAllow, or (IfHealthyBudget, the default) when the budget
  is met (currentHealthy >= desiredHealthy > 0); its resourceVersion is the precondition, a
  conflict answers 429 so that the client retries;
- else checkAndDecrement: a status older than the spec (429, retry after 10 s), a negative or
  overfull (2,000 disruptedPods) budget (403), no disruption left (429 with the reason as a
  DisruptionBudget cause); otherwise disruptionsAllowed - 1 (DisruptionAllowed False at 0) and
  disruptedPods[pod] = now, in one status write (none on dry run);
- then the pod gets DisruptionTarget True (EvictionByEvictionAPI, "Eviction API: evicting") and
  is deleted with the Eviction's deleteOptions (dryRun from the query when the body has none).
Answers a Status Success (201). Intended differences: upstream retries a PDB status write on a
conflict (up to 20 times); here the check and the write are one store transaction, so there is no
conflict to retry; a budget-free pod's delete is retried at once on a conflict, not after 0.5 s.
The Eviction body is not run through ValidatingAdmissionPolicies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nodeagent.apiserver.catalog import Resource
from nodeagent.apiserver.errors import APIError, bad_request, from_error, invalid, not_found
from nodeagent.apiserver.options import DeleteOptions, delete_options
from nodeagent.errors import NodeAgentError
from nodeagent.objects import disruption as D
from nodeagent.store import ObjectStore
from nodeagent.store.meta import rfc3339

MAX_DISRUPTED_POD_SIZE = 2000
"""MaxDisruptedPodSize."""
RETRIES = 20
"""EvictionsRetry's steps (upstream waits about 0.5 s between them; a store conflict here is a write that
came between the read and the delete, so the next attempt reads it at once)."""
VERSIONS = ("policy/v1", "policy/v1beta1")
_VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."
_TERMINAL = ("Succeeded", "Failed")


Deleter = Callable[[Resource, str, str, DeleteOptions], object]
"""The pods' delete as a DELETE carries it out (the registry's Store.Delete, graceful deletion)."""


def evict(store: ObjectStore, pods: Resource, namespace: str, name: str, body: Any, dry_run_query: bool,
          delete: Deleter, now: float) -> tuple[int, dict[str, Any]]:
    """The HTTP code and Status of one eviction; APIError for a refusal. `delete(res, ns, name,
    opts)` deletes the pod as a DELETE does."""
    eviction = _check(body, namespace, name)
    opts = _options(eviction, dry_run_query)
    user_rv = opts.resource_version
    for attempt in range(RETRIES):  # EvictionsRetry: a conflict is tried again unless the caller set the version
        pod = store.peek("Pod", namespace, name)
        if pod is None:
            raise not_found("", "pods", name)
        md, phase = pod["metadata"], (pod.get("status") or {}).get("phase")
        if not (phase in _TERMINAL or phase == "Pending" or md.get("deletionTimestamp")):
            break
        deleting = opts
        if phase not in _TERMINAL and not md.get("deletionTimestamp") and not user_rv:
            deleting = _with_rv(opts, str(md.get("resourceVersion")))
        try:
            _condition_and_delete(store, pods, namespace, name, deleting, delete, now)
        except APIError as err:
            if err.code != 409 or user_rv or attempt == RETRIES - 1:
                raise
            continue
        return _success()
    assert pod is not None
    pdbs = [p for p in store.scan("PodDisruptionBudget", namespace) if D.selects(p, md.get("labels") or {})]
    if len(pdbs) > 1:
        return 500, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                     "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                                "does not support.", "code": 500}
    unhealthy_ok = False
    if pdbs:
        pdb = pdbs[0]
        status = pdb.get("status") or {}
        if not D.pod_ready(pod) and (
                (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow"
                or int(status.get("currentHealthy") or 0) >= int(status.get("desiredHealthy") or 0) > 0):
            unhealthy_ok = True
        else:
            _check_and_decrement(store, pdb, name, opts.dry_run, now)
    deleting = _with_rv(opts, str(md.get("resourceVersion"))) if unhealthy_ok else opts
    try:
        _condition_and_delete(store, pods, namespace, name, deleting, delete, now)
    except APIError as err:
        if err.code == 409 and unhealthy_ok and not user_rv:
            raise _too_many(str(pdbs[0]["metadata"]["name"])) from None
        raise
    return _success()


def _success() -> tuple[int, dict[str, Any]]:
    return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _check(body: Any, namespace: str, name: str) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise bad_request("the body of the request was in an unknown format - accepted media types include: "
                          "application/json, application/yaml")
    version, kind = body.get("apiVersion"), body.get("kind")
    if version not in VERSIONS or kind != "Eviction":
        raise bad_request(f"{kind or ''} in version \"{version or ''}\" cannot be handled as a Eviction: "
                          "no kind \"" + str(kind or "") + "\" is registered for the version")
    md = body.get("metadata") or {}
    if md.get("namespace") and md["namespace"] != namespace:
        raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
    if md.get("name") != name:
        raise bad_request("name in URL does not match name in Eviction object")
    return body


def _options(eviction: Mapping[str, Any], dry_run_query: bool) -> DeleteOptions:
    """The Eviction's deleteOptions with propagateDryRun's rule."""
    doc = eviction.get("deleteOptions")
    if doc is not None and not isinstance(doc, Mapping):
        raise bad_request("deleteOptions: the body must be an object")
    if doc and doc.get("ignoreStoreReadErrorWithClusterBreakingPotential"):
        raise invalid("policy", "Eviction", str(eviction["metadata"]["name"]), [
            ("deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential",
             "Invalid value: true: can not be set for pod eviction, try after removing the option")])
    body = {k: v for k, v in (doc or {}).items() if k not in ("kind", "apiVersion")}
    query_dry = ["All"] if dry_run_query else []
    if body.get("dryRun") and query_dry and list(body["dryRun"]) != query_dry:
        raise APIError(500, "InternalError", "Internal error occurred: Non-matching dry-run options in request "
                       f"and content: [{' '.join(query_dry)}] and [{' '.join(body['dryRun'])}]",
                       details={"causes": [{"message": "Non-matching dry-run options in request and content: "
                                            f"[{' '.join(query_dry)}] and [{' '.join(body['dryRun'])}]"}]})
    if not body.get("dryRun") and query_dry:
        body["dryRun"] = query_dry
    return delete_options({}, body)


def _with_rv(opts: DeleteOptions, rv: str) -> DeleteOptions:
    return DeleteOptions(dry_run=opts.dry_run, propagation=opts.propagation, grace_period=opts.grace_period,
                         uid=opts.uid, resource_version=rv, extra=opts.extra, orphan_dependents=opts.orphan_dependents)


def _too_many(pdb: str, retry_after: int = 10, cause: str = "") -> APIError:
    """createTooManyRequestsError (retry after 10 s) or checkAndDecrement's 429 (none)."""
    message = cause or f"The disruption budget {pdb} is still being processed by the server."
    details: dict[str, Any] = {"causes": [{"reason": "DisruptionBudget", "message": message}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return APIError(429, "TooManyRequests", _VIOLATES, details=details,
                    headers={"Retry-After": str(retry_after)} if retry_after else None)


def _forbidden(pdb: str, why: str, cause: str) -> APIError:
    return APIError(403, "Forbidden", f'poddisruptionbudget.policy "{pdb}" is forbidden: {why}',
                    details={"name": pdb, "group": "policy", "kind": "poddisruptionbudget",
                             "causes": [{"reason": "DisruptionBudget", "message": cause}]})


def _check_and_decrement(store: ObjectStore, seen: Mapping[str, Any], pod: str, dry_run: bool, now: float) -> None:
    """checkAndDecrement on the budget as stored now (the read and the write in one transaction)."""
    ns, name = str(seen["metadata"].get("namespace") or ""), str(seen["metadata"]["name"])
    try:
        with store.transaction(manager="kube-apiserver") as tx:
            pdb = tx.try_get("PodDisruptionBudget", ns, name)
            if pdb is None:
                raise not_found("policy", "poddisruptionbudgets", name)
            status = pdb.setdefault("status", {})
            allowed = int(status.get("disruptionsAllowed") or 0)
            if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
                raise _too_many(name)
            if allowed < 0:
                raise _forbidden(name, "pdb disruptions allowed is negative", f"The disruption budget {name} does "
                                 "not allow evicting pods currently: pdb disruptions allowed is negative")
            if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
                raise _forbidden(name, "DisruptedPods map too big - too many evictions not confirmed by PDB "
                                 "controller", f"The disruption budget {name} does not allow evicting pods "
                                 "currently: too many pending evictions not confirmed by PDB controller")
            if allowed == 0:
                raise _too_many(name, 0, _refusal(name, status))
            if dry_run:
                return
            status["disruptionsAllowed"] = allowed - 1
            if allowed - 1 == 0:
                D.update_disruption_allowed(status, rfc3339(now))
            status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod: rfc3339(now)}
            tx.update_status(pdb)
    except NodeAgentError as err:
        raise from_error(err, group="policy", kind="PodDisruptionBudget", plural="poddisruptionbudgets",
                         name=name) from None


def _refusal(name: str, status: Mapping[str, Any]) -> str:
    cond = D.find_condition(status)
    failed = cond is not None and cond.get("status") == "False" and bool(cond.get("message"))
    current, desired = int(status.get("currentHealthy") or 0), int(status.get("desiredHealthy") or 0)
    if failed and cond is not None and cond.get("reason") == D.SYNC_FAILED:
        return (f"The disruption budget {name} does not allow evicting pods currently because it failed sync: "
                f"{cond.get('message')}")
    if current <= desired:
        return f"The disruption budget {name} needs {desired} healthy pods and has {current} currently"
    if failed and cond is not None:
        return (f"The disruption budget {name} does not allow evicting pods currently ({cond.get('reason')}): "
                f"{cond.get('message')}")
    return f"The disruption budget {name} does not allow evicting pods currently"


def _condition_and_delete(store: ObjectStore, pods: Resource, namespace: str, name: str, opts: DeleteOptions,
                          delete: Deleter, now: float) -> None:
    """addConditionAndDeletePod: DisruptionTarget on the latest pod (the preconditions checked
    against it), then the delete (with the new resourceVersion when one was a precondition)."""
    if not opts.dry_run:
        try:
            with store.transaction() as tx:
                pod = tx.try_get("Pod", namespace, name)
                if pod is None:
                    raise not_found("", "pods", name)
                md = pod["metadata"]
                if opts.uid and opts.uid != md.get("uid"):
                    raise _conflict(name, f"the UID in the precondition ({opts.uid}) does not match the UID in "
                                    f"record ({md.get('uid')}). The object might have been deleted and then recreated")
                if opts.resource_version and opts.resource_version != md.get("resourceVersion"):
                    raise _conflict(name, f"the ResourceVersion in the precondition ({opts.resource_version}) does "
                                    f"not match the ResourceVersion in record ({md.get('resourceVersion')}). The "
                                    "object might have been modified")
                status = pod.setdefault("status", {})
                conds, found = [], False
                for cond in status.get("conditions") or ():
                    if cond.get("type") == D.DISRUPTION_TARGET:
                        found = True
                        cond = {**cond, "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting",
                                "status": "True",
                                **({} if cond.get("status") == "True" else {"lastTransitionTime": rfc3339(now)})}
                    conds.append(cond)
                if not found:
                    conds.append({"type": D.DISRUPTION_TARGET, "status": "True", "lastProbeTime": None,
                                  "lastTransitionTime": rfc3339(now), "reason": "EvictionByEvictionAPI",
                                  "message": "Eviction API: evicting"})
                status["conditions"] = conds
                written = tx.update(pod, with_status=True, keep_generation=True)
        except NodeAgentError as err:
            raise from_error(err, group="", kind="Pod", plural="pods", name=name) from None
        if opts.resource_version:
            opts = _with_rv(opts, str(written["metadata"]["resourceVersion"]))
    delete(pods, namespace, name, opts)


def _conflict(name: str, detail: str) -> APIError:
    return APIError(409, "Conflict", f'Operation cannot be fulfilled on Pod "{name}": {detail}',
                    details={"name": name, "kind": "Pod"})

