"""ResourceQuota: what an object is charged, whether a create fits, and what a quota's status says.

One responsibility: upstream's quota evaluators (pkg/quota/v1/evaluator/core: pods, services,
persistentvolumeclaims; apiserver's generic object count `count/<resource>[.<group>]` and the
legacy aliases configmaps, secrets, replicationcontrollers, resourcequotas) and the two users of
them: the ResourceQuota admission's CheckRequest (k8s.io/apiserver plugin/resourcequota:
Constraints "must specify", "status unknown for quota", "exceeded quota", the charged
status.used) and the resourcequota controller's CalculateUsage (status.hard from spec.hard,
status.used recounted over the namespace).

Quantities are kept exactly (quantity.Exact: value and Format) and summed as resource.Quantity.Add
does (a zero sum takes the addend's Format), so status.used reads as kube-controller-manager writes
it. Pod scopes: Terminating, NotTerminating, BestEffort, NotBestEffort, PriorityClass (Exists,
DoesNotExist, In, NotIn), CrossNamespacePodAffinity. DRA device charges
(`<class>.deviceclass.resource.k8s.io/devices`) are controlplane/quota.py's evaluator, which its
callers hand in (`special`). Intended differences: a pod's usage reads its spec only (upstream's
InPlacePodVerticalScaling also takes status resources when larger: equal for every pod nodeagent
runs, which resizes none), and pod-level resources (spec.resources) stand for the containers'
when set, as PodLevelResources does. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from nodeagent.util import quantity
from nodeagent.util.quantity import Exact

if TYPE_CHECKING:
    from nodeagent.store.txn import Transaction

Usage = dict[str, Exact]

PODS_COUNT = "count/pods"
_POD_RESOURCES = frozenset({
    PODS_COUNT, "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods",
})
_VALIDATION = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})
_SERVICE_RESOURCES = frozenset({"count/services", "services", "services.nodeports", "services.loadbalancers"})
_PVC_RESOURCES = ("persistentvolumeclaims", "requests.storage")
_STORAGE_CLASS = ".storageclass.storage.k8s.io/"
_LEGACY_ALIASES = {("", "configmaps"): "configmaps", ("", "secrets"): "secrets",
                   ("", "replicationcontrollers"): "replicationcontrollers",
                   ("", "resourcequotas"): "resourcequotas"}
IGNORED = frozenset({("", "bindings"), ("", "componentstatuses"), ("authentication.k8s.io", "tokenreviews"),
                     ("authentication.k8s.io", "selfsubjectreviews"),
                     ("authorization.k8s.io", "subjectaccessreviews"),
                     ("authorization.k8s.io", "selfsubjectaccessreviews"),
                     ("authorization.k8s.io", "localsubjectaccessreviews"),
                     ("authorization.k8s.io", "selfsubjectrulesreviews"), ("", "events"), ("events.k8s.io", "events")})
"""pkg/quota/v1/install's ignoredResources: virtual resources, and events (never quota-ed)."""
ONE = quantity.Amount(1)
ZERO = quantity.Amount(0)


def count_name(group: str, plural: str) -> str:
    """ObjectCountQuotaResourceNameFor: `count/<resource>` for the core group, else `count/<resource>.<group>`."""
    return f"count/{plural}.{group}" if group else f"count/{plural}"


def add(a: Exact | None, b: Exact) -> Exact:
    """resource.Quantity.Add: a zero receiver takes the addend's Format."""
    if a is None:
        return b
    fmt = b.fmt if a == 0 else a.fmt
    return quantity.exact_value(Fraction(a) + Fraction(b), fmt)


def add_usage(into: Usage, more: Mapping[str, Exact]) -> None:
    for name, q in more.items():
        into[name] = add(into.get(name), q)


def text(q: Exact) -> str:
    return quantity.exact_string(q, q.fmt)


def parse_list(raw: object) -> Usage:
    """A ResourceList's quantities (entries that do not parse are left out: validation refuses them)."""
    out: Usage = {}
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            try:
                out[str(name)] = quantity.exact(value)
            except quantity.QuantityError:
                continue
    return out


def render(usage: Mapping[str, Exact]) -> dict[str, str]:
    return {name: text(q) for name, q in sorted(usage.items())}


# --- pods ---


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _container_usage(requests: Mapping[str, Exact], limits: Mapping[str, Exact]) -> Usage:
    """podComputeUsageHelper."""
    out: Usage = {"pods": ONE}
    for res in ("cpu", "memory", "ephemeral-storage"):
        if res in requests:
            out[res] = requests[res]
            out[f"requests.{res}"] = requests[res]
        if res in limits:
            out[f"limits.{res}"] = limits[res]
    for res, q in requests.items():
        if res.startswith("hugepages-"):
            out[res] = q
            out[f"requests.{res}"] = q
        elif not _is_native(res):
            out[f"requests.{res}"] = q
    return out


def _resources(container: Mapping[str, Any], key: str) -> Usage:
    res = container.get("resources")
    return parse_list(res.get(key)) if isinstance(res, Mapping) else {}


def _containers(spec: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [c for c in spec.get(key) or () if isinstance(c, Mapping)]


def _max_into(into: Usage, other: Mapping[str, Exact]) -> None:
    for name, q in other.items():
        if name not in into or q > into[name]:
            into[name] = q


def _aggregate(spec: Mapping[str, Any], key: str) -> Usage:
    """resourcehelper.AggregateContainerRequests/Limits: the containers' sum, restartable init
    containers (sidecars) added to it, the largest of any init container's (with the sidecars
    started before it) taken when larger."""
    total: Usage = {}
    for c in _containers(spec, "containers"):
        add_usage(total, _resources(c, key))
    sidecars: Usage = {}
    init_max: Usage = {}
    for c in _containers(spec, "initContainers"):
        own = _resources(c, key)
        if c.get("restartPolicy") == "Always":
            add_usage(total, own)
            add_usage(sidecars, own)
            during: Usage = dict(sidecars)
        else:
            during = dict(own)
            add_usage(during, sidecars)
        _max_into(init_max, during)
    _max_into(total, init_max)
    return total


def _pod_level(spec: Mapping[str, Any], key: str) -> Usage | None:
    res = spec.get("resources")
    if not isinstance(res, Mapping):
        return None
    found = {k: v for k, v in parse_list(res.get(key)).items() if k in ("cpu", "memory")}
    return found or None


def pod_counted(pod: Mapping[str, Any], now: float) -> bool:
    """QuotaV1Pod: not terminal, and not stuck terminating past its deletion time plus grace period."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    md = pod.get("metadata") or {}
    deleted, grace = md.get("deletionTimestamp"), md.get("deletionGracePeriodSeconds")
    if deleted and isinstance(grace, int):
        try:
            at = datetime.strptime(str(deleted), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
        except ValueError:
            return True
        return not now > at + grace
    return True


def pod_usage(pod: Mapping[str, Any], now: float) -> Usage:
    """PodUsageFunc: count/pods always; the rest only for a pod quota still counts."""
    out: Usage = {PODS_COUNT: ONE}
    if not pod_counted(pod, now):
        return out
    spec = pod.get("spec") or {}
    requests, limits = _aggregate(spec, "requests"), _aggregate(spec, "limits")
    for key, agg in (("requests", requests), ("limits", limits)):
        level = _pod_level(spec, key)
        if level is not None:
            agg.update(level)
    overhead = parse_list(spec.get("overhead"))
    if overhead:
        add_usage(requests, overhead)
        add_usage(limits, {k: v for k, v in overhead.items() if k in limits})
    add_usage(out, _container_usage(requests, limits))
    return out


def _pod_matching(names: Iterable[str]) -> list[str]:
    return [n for n in names if n in _POD_RESOURCES or n.startswith(("hugepages-", "requests.hugepages-"))
            or (not _is_native(n) and n.startswith("requests."))]


def pod_constraints(required: Iterable[str], pod: Mapping[str, Any]) -> str | None:
    """podEvaluator.Constraints: every (init) container names each of cpu/memory requests/limits a
    quota tracks; the "must specify ..." text, None when all do (or pod-level resources are set)."""
    spec = pod.get("spec") or {}
    if _pod_level(spec, "requests") is not None or _pod_level(spec, "limits") is not None:
        return None
    needed = set(required) & _VALIDATION
    if not needed:
        return None
    missing: dict[str, set[str]] = {}
    for c in (*_containers(spec, "containers"), *_containers(spec, "initContainers")):
        have = _container_usage(_resources(c, "requests"), _resources(c, "limits"))
        for res in needed - have.keys():
            missing.setdefault(res, set()).add(str(c.get("name") or ""))
    if not missing:
        return None
    return "must specify " + "; ".join(f"{res} for: {','.join(sorted(missing[res]))}" for res in sorted(missing))


def _best_effort(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    for key in ("requests", "limits"):
        if any(v != 0 for v in (_pod_level(spec, key) or {}).values()):
            return False
    for c in (*_containers(spec, "containers"), *_containers(spec, "initContainers")):
        for key in ("requests", "limits"):
            if any(v != 0 for k, v in _resources(c, key).items() if k in ("cpu", "memory")):
                return False
    return True


def _cross_namespace_affinity(pod: Mapping[str, Any]) -> bool:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = affinity.get(kind) or {}
        for t in terms.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
            if t.get("namespaces") or t.get("namespaceSelector") is not None:
                return True
        for w in terms.get("preferredDuringSchedulingIgnoredDuringExecution") or ():
            t = w.get("podAffinityTerm") or {}
            if t.get("namespaces") or t.get("namespaceSelector") is not None:
                return True
    return False


def _selector_matches(selector: Mapping[str, Any], key: str, value: str | None) -> bool:
    """ScopedResourceSelectorRequirementsAsSelector over a label set of at most {key: value}."""
    op, values = selector.get("operator"), list(selector.get("values") or ())
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    return False


def pod_matches_scope(selector: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """podMatchesScopeFunc."""
    spec = pod.get("spec") or {}
    scope = selector.get("scopeName")
    if scope == "Terminating":
        return isinstance(spec.get("activeDeadlineSeconds"), int) and spec["activeDeadlineSeconds"] >= 0
    if scope == "NotTerminating":
        return not (isinstance(spec.get("activeDeadlineSeconds"), int) and spec["activeDeadlineSeconds"] >= 0)
    if scope == "BestEffort":
        return _best_effort(pod)
    if scope == "NotBestEffort":
        return not _best_effort(pod)
    if scope == "PriorityClass":
        name = str(spec.get("priorityClassName") or "") or None
        if selector.get("operator") == "Exists":
            return name is not None
        return _selector_matches(selector, "PriorityClass", name)
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(pod)
    return False


# --- the evaluators ---


def _no_scope(selector: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    return False


def _no_constraints(required: Iterable[str], obj: Mapping[str, Any]) -> str | None:
    return None


@dataclass(frozen=True)
class Evaluator:
    """One kind's quota evaluator (quota.Evaluator): which hard names it tracks, an object's usage,
    its scope test and its Constraints."""

    group: str
    plural: str
    matching: Callable[[Iterable[str]], list[str]]
    usage: Callable[[Mapping[str, Any], float], Usage]
    scope: Callable[[Mapping[str, Any], Mapping[str, Any]], bool] = _no_scope
    constraints: Callable[[Iterable[str], Mapping[str, Any]], str | None] = _no_constraints
    updates: Callable[[Mapping[str, Any], Mapping[str, Any]], bool] = lambda new, old: False
    """Handles of an update of the object proper (new, old): object counts never."""


def _service_usage(svc: Mapping[str, Any], now: float) -> Usage:
    spec = svc.get("spec") or {}
    ports = [p for p in spec.get("ports") or () if isinstance(p, Mapping)]
    out: Usage = {"count/services": ONE, "services": ONE, "services.loadbalancers": ZERO,
                  "services.nodeports": ZERO}
    kind = spec.get("type")
    if kind == "NodePort":
        out["services.nodeports"] = quantity.Amount(len(ports))
    elif kind == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is False:
            out["services.nodeports"] = quantity.Amount(sum(1 for p in ports if p.get("nodePort")))
        else:
            out["services.nodeports"] = quantity.Amount(len(ports))
        out["services.loadbalancers"] = ONE
    return out


def _pvc_matching(names: Iterable[str]) -> list[str]:
    return [n for n in names if n == "count/persistentvolumeclaims" or n in _PVC_RESOURCES
            or any(n.endswith(_STORAGE_CLASS + r) for r in _PVC_RESOURCES)]


def _pvc_usage(pvc: Mapping[str, Any], now: float) -> Usage:
    spec = pvc.get("spec") or {}
    out: Usage = {"persistentvolumeclaims": ONE, "count/persistentvolumeclaims": ONE}
    cls = spec.get("storageClassName")
    if cls is None:
        cls = ((pvc.get("metadata") or {}).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    cls = str(cls or "")
    if cls:
        out[cls + _STORAGE_CLASS + "persistentvolumeclaims"] = ONE
    storage = parse_list((spec.get("resources") or {}).get("requests")).get("storage")
    if storage is not None:
        rounded = quantity.exact_value(quantity.ceil_value(storage), storage.fmt)  # RoundUp(0)
        allocated = parse_list((pvc.get("status") or {}).get("allocatedResources")).get("storage")
        if allocated is not None and allocated > rounded:
            rounded = quantity.exact_value(quantity.ceil_value(allocated), allocated.fmt)
        out["requests.storage"] = rounded
        if cls:
            out[cls + _STORAGE_CLASS + "requests.storage"] = rounded
    return out


def _count_evaluator(group: str, plural: str) -> Evaluator:
    names = [count_name(group, plural)]
    alias = _LEGACY_ALIASES.get((group, plural))
    if alias:
        names.append(alias)
    frozen = frozenset(names)

    def usage(obj: Mapping[str, Any], now: float) -> Usage:
        return dict.fromkeys(names, ONE)

    return Evaluator(group, plural, lambda hard: [n for n in hard if n in frozen], usage)


def _terminating(pod: Mapping[str, Any]) -> bool:
    return pod_matches_scope({"scopeName": "Terminating"}, pod)


def _always(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    return True


PODS = Evaluator("", "pods", _pod_matching, pod_usage, pod_matches_scope, pod_constraints,
                 updates=lambda new, old: _terminating(new) != _terminating(old))
SERVICES = Evaluator("", "services", lambda hard: [n for n in hard if n in _SERVICE_RESOURCES], _service_usage,
                     updates=_always)
PVCS = Evaluator("", "persistentvolumeclaims", _pvc_matching, _pvc_usage, updates=_always)
_SPECIAL = {("", "pods"): PODS, ("", "services"): SERVICES, ("", "persistentvolumeclaims"): PVCS}
_counts: dict[tuple[str, str], Evaluator] = {}


def evaluator(group: str, plural: str) -> Evaluator:
    """The evaluator of a resource: its own for pods, services and PVCs, else an object count."""
    found = _SPECIAL.get((group, plural)) or _counts.get((group, plural))
    if found is None:
        found = _counts[(group, plural)] = _count_evaluator(group, plural)
    return found


def evaluator_for_count(name: str) -> tuple[str, str] | None:
    """(group, plural) a `count/<resource>[.<group>]` name counts, None for any other name."""
    if not name.startswith("count/"):
        return None
    plural, _, group = name.removeprefix("count/").partition(".")
    return group, plural


# --- quota objects ---


def scope_selectors(q: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """getScopeSelectorsFromQuota: spec.scopes (as Exists) then spec.scopeSelector's expressions."""
    spec = q.get("spec") or {}
    out: list[Mapping[str, Any]] = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or ()]
    out.extend(e for e in (spec.get("scopeSelector") or {}).get("matchExpressions") or () if isinstance(e, Mapping))
    return out


def _matches(ev: Evaluator, q: Mapping[str, Any], hard: Iterable[str], obj: Mapping[str, Any]) -> bool:
    """generic.Matches: the quota tracks something of the evaluator's and every scope matches."""
    return bool(ev.matching(hard)) and all(ev.scope(s, obj) for s in scope_selectors(q))


class QuotaRefused(Exception):
    """The admission's refusal: the text after `is forbidden: `."""


def check_request(ev: Evaluator, obj: Mapping[str, Any], old: Mapping[str, Any] | None,
                  quotas: Sequence[Mapping[str, Any]], now: float) -> dict[int, dict[str, str]]:
    """CheckRequest of a create (`old` None) or an update: the new status.used of each quota the
    write charges (by index in `quotas`); QuotaRefused with kube-apiserver's text when it must not be."""
    interesting: list[int] = []
    hards: dict[int, Usage] = {}
    for i, q in enumerate(quotas):
        status = q.get("status") or {}
        hard = parse_list(status.get("hard"))
        if not _matches(ev, q, hard, obj):
            continue
        restricted = ev.matching(hard)
        name = str((q.get("metadata") or {}).get("name") or "")
        refused = ev.constraints(restricted, obj)
        if refused:
            raise QuotaRefused(f"failed quota: {name}: {refused}")
        used_names = (status.get("used") or {}).keys()
        if any(r not in used_names for r in hard if r in restricted):
            raise QuotaRefused(f"status unknown for quota: {name}, resources: {','.join(sorted(restricted))}")
        interesting.append(i)
        hards[i] = hard
    if not interesting:
        return {}
    usage = ev.usage(obj, now)
    negative = sorted(n for n, q in usage.items() if q < 0)
    if negative:
        raise QuotaRefused(f"quota usage is negative for resource(s): {','.join(negative)}")
    deltas: dict[int, Usage] = dict.fromkeys(interesting, usage)
    if old is not None and (old.get("metadata") or {}).get("resourceVersion"):
        prev = ev.usage(old, now)
        delta = {n: q if n not in prev else quantity.exact_value(max(Fraction(q) - Fraction(prev[n]), Fraction(0)),
                                                                  q.fmt) for n, q in usage.items()}
        for i in interesting:
            if _matches(ev, quotas[i], hards[i], old):
                deltas[i] = delta
    out: dict[int, dict[str, str]] = {}
    for i in interesting:
        hard = hards[i]
        requested = {n: q for n, q in deltas[i].items() if n in hard and q != 0}
        if not requested:
            continue
        used = parse_list((quotas[i].get("status") or {}).get("used"))
        new_used = dict(used)
        add_usage(new_used, requested)
        exceeded = sorted(n for n in requested if new_used[n] > hard[n])
        if exceeded:
            name = str((quotas[i].get("metadata") or {}).get("name") or "")

            def show(src: Mapping[str, Exact], names: list[str] = exceeded) -> str:
                return ",".join(f"{n}={text(src[n])}" for n in names if n in src)

            raise QuotaRefused(f"exceeded quota: {name}, requested: {show(requested)}, used: {show(used)}, "
                               f"limited: {show(hard)}")
        out[i] = render(new_used)
    return out


def calculate_status(q: Mapping[str, Any], objects: Callable[[str, str], Iterable[Mapping[str, Any]]],
                     now: float, special: Sequence[Evaluator] = ()) -> dict[str, Any]:
    """syncResourceQuota's status: hard as spec.hard, used recounted for every hard name an evaluator
    tracks (`objects(group, plural)`: the namespace's objects of a resource), other names kept from
    the old status.used. `special`: evaluators of higher layers (DRA claims), before object counts."""
    spec_hard = parse_list((q.get("spec") or {}).get("hard"))
    old_used = parse_list((q.get("status") or {}).get("used"))
    selectors = scope_selectors(q)
    names = sorted(spec_hard)
    evaluators: dict[tuple[str, str], Evaluator] = {}
    for ev in (PODS, SERVICES, PVCS, *special):
        if ev.matching(names):
            evaluators[(ev.group, ev.plural)] = ev
    for n in names:
        counted = evaluator_for_count(n)
        if counted is not None and counted not in evaluators:
            evaluators[counted] = evaluator(*counted)
    for gp, alias in _LEGACY_ALIASES.items():
        if alias in spec_hard and gp not in evaluators:
            evaluators[gp] = evaluator(*gp)
    used: Usage = {}
    for ev in evaluators.values():
        tracked = ev.matching(names)
        stats: Usage = dict.fromkeys(tracked, ZERO)
        for obj in objects(ev.group, ev.plural):
            if all(ev.scope(s, obj) for s in selectors):
                add_usage(stats, ev.usage(obj, now))
        for n in tracked:
            used[n] = stats[n]
    merged = {n: used.get(n, old_used.get(n)) for n in names}
    return {"hard": render(spec_hard), "used": render({n: q for n, q in merged.items() if q is not None})}


def admit(tx: Transaction, group: str, plural: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None,
          now: float, special: Evaluator | None = None) -> None:
    """The ResourceQuota admission of a create (`old` None) or an update of the object proper inside
    its store transaction: QuotaRefused, or the namespace's quotas' status.used charged in that
    transaction (kube-apiserver updates the quotas' status before it stores the object); `special`:
    the resource's evaluator when a higher layer has it (DRA claims). A store
    without quotas costs one dict lookup, quotas only in other namespaces a pass over their keys
    (a quota created in this very transaction is not looked for)."""
    if not tx.any_committed("ResourceQuota") or (group, plural) in IGNORED:
        return
    ev = special or evaluator(group, plural)
    if old is not None and not ev.updates(obj, old):
        return
    namespace = str((obj.get("metadata") or {}).get("namespace") or "default")
    if not tx.any_committed("ResourceQuota", namespace):  # quotas elsewhere: not this transaction's writes' list
        return
    quotas = tx.list("ResourceQuota", namespace)
    if not quotas:
        return
    for i, used in check_request(ev, obj, old, quotas, now).items():
        q = quotas[i]
        q["status"] = {**(q.get("status") or {}), "used": used}
        tx.update_status(q, copy=False)


def admit_create(tx: Transaction, group: str, plural: str, obj: Mapping[str, Any], now: float) -> None:
    admit(tx, group, plural, obj, None, now)
