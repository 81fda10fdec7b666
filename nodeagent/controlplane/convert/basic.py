"""The control plane's edge between store objects (resource.k8s.io JSON) and the allocator's model.

One responsibility: translate. Validated store objects (objects/resource/validation.py shapes, read
through objects/resource/views) become frozen allocator dataclasses on the way in; an
AllocationResult becomes the `status.allocation` JSON on the way out. Also small readers of
Pod and Node JSON the controllers share (phase, conditions, claim references). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.cel.selectors import AttributeValue, Version, quantity_value
from nodeagent.controlplane import allocator as model
from nodeagent.controlplane.convert import sharing, taints
from nodeagent.objects.resource import views

PodKey = tuple[str, str]
"""(namespace, name)"""

SUCCEEDED = "Succeeded"
FAILED = "Failed"
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
"""resourceapi.Finalizer: the scheduler puts it on a claim it allocates, the claim controller takes it
off once the claim is deallocated (or deleted with no consumer), so a claim in use is not removed."""


# --- allocator input ----------------------------------------------------------------------------


def device_class(obj: Mapping[str, Any]) -> model.DeviceClass:
    return model.DeviceClass(
        name=obj["metadata"]["name"],
        selectors=views.class_selectors(obj),
        config=tuple(model.OpaqueConfig(c.driver, dict(c.parameters)) for c in views.class_config(obj)),
    )


def _selector_requirements(raw: Sequence[Mapping[str, Any]] | None) -> tuple[model.NodeSelectorRequirement, ...]:
    return tuple(
        model.NodeSelectorRequirement(r["key"], r["operator"], tuple(r.get("values") or ())) for r in raw or ()
    )


def node_selector(raw: Mapping[str, Any]) -> model.NodeSelector:
    """A v1.NodeSelector JSON object as the allocator's NodeSelector."""
    return model.NodeSelector(
        tuple(
            model.NodeSelectorTerm(
                _selector_requirements(t.get("matchExpressions")), _selector_requirements(t.get("matchFields"))
            )
            for t in raw.get("nodeSelectorTerms") or ()
        )
    )


def _attribute_value(a: views.Attribute) -> AttributeValue:
    """A stored attribute as the allocator and CEL see it: versions as Version, lists as tuples
    (KEP-5491 list-type attributes)."""
    if a.kind == "version":
        return Version(str(a.value))
    if a.kind == "versions" and isinstance(a.value, tuple):
        return tuple(Version(str(v)) for v in a.value)
    return a.value


def resource_slice(obj: Mapping[str, Any]) -> model.ResourceSlice:
    info = views.slice_info(obj)
    spec = obj.get("spec") or {}
    devices = tuple(
        model.Device(
            info.driver,
            info.pool,
            d.name,
            {k: _attribute_value(a) for k, a in d.attributes.items()},
            {k: quantity_value(v) for k, v in d.capacity.items()},
            **sharing.device_fields(raw, info.driver, node_selector),
            **taints.device_fields(raw),
            node_allocatable=raw.get("nodeAllocatableResources") or None,
        )
        for d, raw in zip(info.devices, spec.get("devices") or (), strict=True)
    )
    return model.ResourceSlice(
        name=info.name,
        driver=info.driver,
        pool=info.pool,
        devices=devices,
        generation=info.generation,
        resource_slice_count=info.resource_slice_count,
        node_name=info.node_name or None,
        all_nodes=info.all_nodes,
        node_selector=node_selector(info.node_selector) if info.node_selector else None,
        skip_node_operations=tuple((obj.get("spec") or {}).get("skipNodeOperations") or ()),
        **sharing.slice_fields(spec),
    )


def claim(obj: Mapping[str, Any]) -> model.Claim:
    requests: list[model.Request] = []
    bodies = sharing.request_bodies(obj)

    def capacity(ref: str) -> dict[str, model.Num]:
        return sharing.capacity_requests(bodies.get(ref) or {})

    for req in views.claim_requests(obj):
        if req.first_available:
            requests.append(
                model.Request(
                    req.name,
                    admin_access=req.alternatives[0].admin_access,
                    first_available=tuple(
                        model.SubRequest(a.subrequest, a.device_class_name, a.selectors, a.allocation_mode, a.count,
                                         capacity(a.ref), taints.tolerations(bodies.get(a.ref)))
                        for a in req.alternatives
                    ),
                )
            )
        else:
            a = req.alternatives[0]
            requests.append(
                model.Request(
                    req.name, a.device_class_name, a.selectors, a.allocation_mode, a.count, a.admin_access,
                    capacity=capacity(req.name), tolerations=taints.tolerations(bodies.get(req.name)),
                )
            )
    md = obj["metadata"]
    return model.Claim(
        namespace=md.get("namespace", ""),
        name=md["name"],
        uid=md.get("uid", ""),
        requests=tuple(requests),
        constraints=tuple(
            model.Constraint(c.requests, c.match_attribute or None, c.distinct_attribute or None)
            for c in views.claim_constraints(obj)
        ),
        config=tuple(
            model.DeviceConfig(model.OpaqueConfig(c.driver, dict(c.parameters)), c.requests)
            for c in views.claim_config(obj)
        ),
    )


def node(obj: Mapping[str, Any]) -> model.Node:
    return model.Node(obj["metadata"]["name"], dict(obj["metadata"].get("labels") or {}))


# --- allocator output ---------------------------------------------------------------------------


def node_selector_json(sel: model.NodeSelector) -> dict[str, Any]:
    def reqs(rs: Sequence[model.NodeSelectorRequirement]) -> list[dict[str, Any]]:
        out = []
        for r in rs:
            item: dict[str, Any] = {"key": r.key, "operator": r.operator}
            if r.values:
                item["values"] = list(r.values)
            out.append(item)
        return out

    terms = []
    for t in sel.terms:
        term: dict[str, Any] = {}
        if t.match_expressions:
            term["matchExpressions"] = reqs(t.match_expressions)
        if t.match_fields:
            term["matchFields"] = reqs(t.match_fields)
        terms.append(term)
    return {"nodeSelectorTerms": terms}


def allocation_json(result: model.AllocationResult, timestamp: str = "") -> dict[str, Any]:
    """`status.allocation` for one claim from the allocator's result."""
    results = []
    for d in result.devices:
        item: dict[str, Any] = {"request": d.request, "driver": d.driver, "pool": d.pool, "device": d.device}
        if d.admin_access:
            item["adminAccess"] = True
        if d.skip_node_operations:
            item["skipNodeOperations"] = list(d.skip_node_operations)
        sharing.result_json(d, item)
        taints.result_json(d, item)
        results.append(item)
    devices: dict[str, Any] = {"results": results}
    if result.config:
        config = []
        for c in result.config:
            entry: dict[str, Any] = {"source": c.source, "opaque": {"driver": c.opaque.driver}}
            if c.requests:
                entry["requests"] = list(c.requests)
            if c.opaque.parameters:
                entry["opaque"]["parameters"] = dict(c.opaque.parameters)
            config.append(entry)
        devices["config"] = config
    out: dict[str, Any] = {"devices": devices}
    if result.node_selector is not None:
        out["nodeSelector"] = node_selector_json(result.node_selector)
    if timestamp:
        out["allocationTimestamp"] = timestamp
    return out


def allocated_devices(claim_obj: Mapping[str, Any]) -> list[model.DeviceId]:
    """Devices a claim holds exclusively (adminAccess results, and shares of a device that allows
    multiple allocations, do not block other claims)."""
    alloc = (claim_obj.get("status") or {}).get("allocation")
    if not alloc:
        return []
    return [
        (r["driver"], r["pool"], r["device"])
        for r in (alloc.get("devices") or {}).get("results") or ()
        if not r.get("adminAccess") and not r.get("shareID")
    ]


# --- Pod and Node readers -----------------------------------------------------------------------


def pod_key(pod: Mapping[str, Any]) -> PodKey:
    md = pod["metadata"]
    return (md.get("namespace") or "default", md["name"])


def pod_uid(pod: Mapping[str, Any]) -> str:
    return str(pod["metadata"].get("uid") or "")


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in (SUCCEEDED, FAILED)


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def node_name_of(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def condition(obj: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == ctype:
            return c  # type: ignore[no-any-return]
    return None


def node_ready(node_obj: Mapping[str, Any]) -> bool:
    """The Ready condition True. A cordon (spec.unschedulable) is the placement's to judge: a pod
    that tolerates node.kubernetes.io/unschedulable:NoSchedule may still go there (upstream's
    NodeUnschedulable filter)."""
    cond = condition(node_obj, "Ready")
    return cond is not None and cond.get("status") == "True"


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> bool:
    """Put `cond` into status.conditions; the transition time is kept when the status is unchanged.
    Returns False when nothing changed."""
    conds: list[dict[str, Any]] = list(status.get("conditions") or [])
    for i, c in enumerate(conds):
        if c.get("type") == cond["type"]:
            if all(c.get(k) == cond.get(k) for k in ("status", "reason", "message")):
                return False
            if c.get("status") == cond.get("status") and "lastTransitionTime" in c:
                cond = dict(cond, lastTransitionTime=c["lastTransitionTime"])
            conds[i] = cond
            break
    else:
        conds.append(cond)
    status["conditions"] = conds
    return True


def pod_claim_names(pod: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(pod claim name, ResourceClaim name) per spec.resourceClaims entry; None while a template's
    claim has not been generated yet."""
    spec = pod.get("spec") or {}
    statuses = {
        s.get("name"): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
    }
    out: list[tuple[str, str | None]] = []
    for entry in spec.get("resourceClaims") or ():
        name = entry.get("name", "")
        if entry.get("resourceClaimName"):
            out.append((name, entry["resourceClaimName"]))
        elif entry.get("resourceClaimTemplateName"):
            out.append((name, statuses.get(name) or None))
    return out


def reserved_for(claim_obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((claim_obj.get("status") or {}).get("reservedFor") or ())


def is_reserved_for(claim_obj: Mapping[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid for r in (claim_obj.get("status") or {}).get("reservedFor") or ())


def is_allocated(claim_obj: Mapping[str, Any]) -> bool:
    return bool((claim_obj.get("status") or {}).get("allocation"))


def controller_name(claim_obj: Mapping[str, Any]) -> str:
    """spec.controllerName of a classic-DRA claim ("" for structured parameters)."""
    return str((claim_obj.get("spec") or {}).get("controllerName") or "")


def pod_ref(pod: Mapping[str, Any]) -> dict[str, str]:
    return {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod_uid(pod)}
