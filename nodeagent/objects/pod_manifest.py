"""v1 Pod manifests <-> the Pod model: parsing, API-server defaulting and validation, output.

Parsing is lenient about fields nodeagent does not read (volumes, env, ports...), strict
about the ones it does: a wrong type or value raises ValidationError with the field path
and wording of the API server (e.g. `spec.containers[0].resources.requests[cpu]: Invalid
value: "abc": quantities must match ...`). Defaulting follows the API server: a request
defaults to its limit, pod-level requests default from containers or limits. Output
(`pod_to_manifest`) gives the Kubernetes JSON shape of a pod and its status. Pure: no I/O.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent import quantity
from nodeagent.clock import Clock
from nodeagent.errors import ValidationError
from nodeagent.objects import meta
from nodeagent.objects.pod import (
    ANNOTATION_EXIT_CODE,
    ANNOTATION_FINISH_AFTER,
    ClaimRef,
    Container,
    ContainerStatus,
    Pod,
    PodResourceClaim,
    PodStatus,
)
from nodeagent.objects.pod_scheduling import check_scheduling

QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
NEGATIVE_MSG = "must be greater than or equal to 0"
NOT_INTEGER_MSG = "must be an integer"
RESTART_POLICIES = ("Always", "OnFailure", "Never")
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
POD_LEVEL_RESOURCES = ("cpu", "memory")
HUGEPAGES_PREFIX = "hugepages-"
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


# --- resource name classes (v1helper) --------------------------------------------------------


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """An extended resource (example.com/gpu): not native, not a quota `requests.` name."""
    if is_native(name) or name.startswith("requests."):
        return False
    try:
        meta.check_qualified_name("", "requests." + name)
    except ValidationError:
        return False
    return True


def is_overcommit_allowed(name: str) -> bool:
    return is_native(name) and not is_hugepages(name)


def aggregate_container_requests(
    containers: Sequence[Container], init_containers: Sequence[Container]
) -> dict[str, int]:
    """The kubelet's AggregateContainerRequests: max(sum of regular + sidecars, each init phase).

    An init container running at index i needs its own request plus every restartable
    (sidecar) init container started before it; sidecars also run beside the regular ones.
    """
    reqs: dict[str, int] = {}
    for c in containers:
        _add(reqs, c.requests)
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in init_containers:
        if c.is_sidecar:
            _add(reqs, c.requests)
            _add(sidecars, c.requests)
            phase = dict(sidecars)
        else:
            phase = dict(c.requests)
            _add(phase, sidecars)
        for name, value in phase.items():
            init_max[name] = max(init_max.get(name, 0), value)
    for name, value in init_max.items():
        reqs[name] = max(reqs.get(name, 0), value)
    return reqs


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0) + value


# --- typed accessors ---------------------------------------------------------------------------


def _type_error(path: str, value: object, expected: str) -> ValidationError:
    return ValidationError(path, f"Invalid type: expected {expected}, got {meta.go_type(value)}")


def _mapping(obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _type_error(path, value, "object")
    return value


def _list(obj: Mapping[str, Any], key: str, path: str) -> Sequence[Any]:
    value = obj.get(key)
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise _type_error(path, value, "array")
    return value


def _str(obj: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _type_error(path, value, "string")
    return value


def _string_map(obj: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    raw = _mapping(obj, key, path)
    out: dict[str, str] = {}
    for k, v in raw.items():
        if not isinstance(v, str):
            raise _type_error(f"{path}[{k}]", v, "string")
        out[str(k)] = v
    return out


# --- parsing -------------------------------------------------------------------------------


def pod_from_manifest(
    doc: Mapping[str, Any],
    *,
    default_namespace: str = "default",
    source: str = "api",
    uid: str | None = None,
    clock: Clock,
) -> Pod:
    """Parse, default and validate one v1 Pod document; raise ValidationError naming the field."""
    if not isinstance(doc, Mapping):
        raise _type_error("", doc, "object")
    api_version = doc.get("apiVersion")
    if api_version != "v1":
        if api_version is None:
            raise meta.required("apiVersion")
        raise meta.not_supported("apiVersion", api_version, ["v1"])
    kind = doc.get("kind")
    if kind != "Pod":
        if kind is None:
            raise meta.required("kind")
        raise meta.not_supported("kind", kind, ["Pod"])

    md = _mapping(doc, "metadata", "metadata")
    pod_uid = _str(md, "uid", "metadata.uid") or uid or str(uuid.uuid4())
    name = _str(md, "name", "metadata.name")
    generate_name = _str(md, "generateName", "metadata.generateName")
    if not name:
        if not generate_name:
            raise meta.required("metadata.name", "name or generateName is required")
        name = generate_name + _generated_suffix(pod_uid)
    meta.check_dns_subdomain("metadata.name", name)
    namespace = _str(md, "namespace", "metadata.namespace") or default_namespace
    meta.check_dns_label("metadata.namespace", namespace)
    labels = _string_map(md, "labels", "metadata.labels")
    meta.check_labels("metadata.labels", labels)
    annotations = _string_map(md, "annotations", "metadata.annotations")
    meta.check_annotations("metadata.annotations", annotations)
    _check_nodeagent_annotations(annotations)

    if doc.get("spec") is None:
        raise meta.required("spec")
    spec = _mapping(doc, "spec", "spec")
    claims = _parse_pod_claims(spec)
    claim_names = {c.name for c in claims}
    names: set[str] = set()
    init = tuple(
        _parse_container(c, f"spec.initContainers[{i}]", init=True, names=names, claim_names=claim_names)
        for i, c in enumerate(_list(spec, "initContainers", "spec.initContainers"))
    )
    raw_containers = _list(spec, "containers", "spec.containers")
    if not raw_containers:
        raise meta.required("spec.containers")
    containers = tuple(
        _parse_container(c, f"spec.containers[{i}]", init=False, names=names, claim_names=claim_names)
        for i, c in enumerate(raw_containers)
    )
    restart_policy = _str(spec, "restartPolicy", "spec.restartPolicy", "Always")
    if restart_policy not in RESTART_POLICIES:
        raise meta.not_supported("spec.restartPolicy", restart_policy, RESTART_POLICIES)
    priority = spec.get("priority", 0)
    if priority is None:
        priority = 0
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise _type_error("spec.priority", priority, "integer")
    priority_class = _str(spec, "priorityClassName", "spec.priorityClassName")
    if priority_class:
        meta.check_dns_subdomain("spec.priorityClassName", priority_class)
    node_name = _str(spec, "nodeName", "spec.nodeName")
    check_scheduling(spec)
    pod_requests, pod_limits = _parse_pod_resources(spec, containers, init)

    created = clock.now()
    manifest = _plain(doc)
    manifest.setdefault("metadata", {})
    manifest["metadata"].update(
        name=name, namespace=namespace, uid=pod_uid, creationTimestamp=rfc3339(created)
    )
    return Pod(
        uid=pod_uid,
        name=name,
        namespace=namespace,
        labels=labels,
        annotations=annotations,
        containers=containers,
        init_containers=init,
        priority=priority,
        priority_class_name=priority_class,
        node_name=node_name,
        restart_policy=restart_policy,
        resource_claims=claims,
        pod_requests=pod_requests,
        pod_limits=pod_limits,
        source=source,
        creation_timestamp=created,
        manifest=manifest,
    )


def _check_nodeagent_annotations(annotations: Mapping[str, str]) -> None:
    """nodeagent's own annotations must be usable: a typo would silently never finish the pod."""
    finish = annotations.get(ANNOTATION_FINISH_AFTER)
    if finish is not None:
        path = f"metadata.annotations[{ANNOTATION_FINISH_AFTER}]"
        try:
            seconds = float(finish)
        except ValueError:
            raise meta.invalid(path, finish, "must be a number of seconds") from None
        if not seconds >= 0 or seconds == float("inf"):
            raise meta.invalid(path, finish, NEGATIVE_MSG)
    code = annotations.get(ANNOTATION_EXIT_CODE)
    if code is not None:
        path = f"metadata.annotations[{ANNOTATION_EXIT_CODE}]"
        try:
            value = int(code)
        except ValueError:
            raise meta.invalid(path, code, "must be an integer exit code") from None
        if not 0 <= value <= 255:
            raise meta.invalid(path, code, "must be between 0 and 255, inclusive")


def _generated_suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_GENERATE_ALPHABET[b % len(_GENERATE_ALPHABET)] for b in digest[:5])


def _plain(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-clean deep copy of the document (YAML may carry dates and other scalars)."""
    out: dict[str, Any] = json.loads(json.dumps(doc, default=str))
    return out


def _unique_label(raw: Mapping[str, Any], path: str, seen: set[str]) -> str:
    """`<path>.name`: required, a DNS label, not seen before in its list (recorded in `seen`)."""
    name = _str(raw, "name", f"{path}.name")
    if not name:
        raise meta.required(f"{path}.name")
    meta.check_dns_label(f"{path}.name", name)
    if name in seen:
        raise meta.duplicate(f"{path}.name", name)
    seen.add(name)
    return name


def _parse_pod_claims(spec: Mapping[str, Any]) -> tuple[PodResourceClaim, ...]:
    out: list[PodResourceClaim] = []
    seen: set[str] = set()
    for i, raw in enumerate(_list(spec, "resourceClaims", "spec.resourceClaims")):
        path = f"spec.resourceClaims[{i}]"
        if not isinstance(raw, Mapping):
            raise _type_error(path, raw, "object")
        name = _unique_label(raw, path, seen)
        claim_name = _str(raw, "resourceClaimName", f"{path}.resourceClaimName")
        template = _str(raw, "resourceClaimTemplateName", f"{path}.resourceClaimTemplateName")
        if claim_name and template:
            detail = "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be set"
            raise meta.invalid(path, claim_name, detail)
        if not claim_name and not template:
            raise meta.required(path, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
        if claim_name:
            meta.check_dns_subdomain(f"{path}.resourceClaimName", claim_name)
        if template:
            meta.check_dns_subdomain(f"{path}.resourceClaimTemplateName", template)
        out.append(PodResourceClaim(name, claim_name, template))
    return tuple(out)


def _parse_container(
    raw: object, path: str, *, init: bool, names: set[str], claim_names: set[str]
) -> Container:
    if not isinstance(raw, Mapping):
        raise _type_error(path, raw, "object")
    name = _unique_label(raw, path, names)
    image = _str(raw, "image", f"{path}.image")
    if not image.strip():
        raise meta.required(f"{path}.image")
    restart_policy = _str(raw, "restartPolicy", f"{path}.restartPolicy")
    if restart_policy:
        if not init:
            raise meta.forbidden(f"{path}.restartPolicy", "may not be set for non-init containers")
        if restart_policy != "Always":
            raise meta.not_supported(f"{path}.restartPolicy", restart_policy, ["Always"])
    resources = _mapping(raw, "resources", f"{path}.resources")
    requests, limits = _parse_requirements(resources, f"{path}.resources", container=True)
    claims = _parse_container_claims(resources, f"{path}.resources.claims", claim_names)
    return Container(
        name=name, image=image, requests=requests, limits=limits, restart_policy=restart_policy, claims=claims
    )


def _parse_container_claims(
    resources: Mapping[str, Any], path: str, claim_names: set[str]
) -> tuple[ClaimRef, ...]:
    out: list[ClaimRef] = []
    seen: set[str] = set()
    for i, raw in enumerate(_list(resources, "claims", path)):
        item = f"{path}[{i}]"
        if not isinstance(raw, Mapping):
            raise _type_error(item, raw, "object")
        name = _str(raw, "name", f"{item}.name")
        request = _str(raw, "request", f"{item}.request")
        if not name:
            raise meta.required(item)
        key = f"{name}/{request}" if request else name
        if key in seen:
            raise meta.duplicate(item, name)
        seen.add(key)
        if name not in claim_names:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += ": " + ", ".join(sorted(claim_names)) if claim_names else " which is empty"
            raise meta.not_found(item, name, detail)
        out.append(ClaimRef(name, request))
    return tuple(out)


def _quantities(resources: Mapping[str, Any], key: str, path: str) -> dict[str, tuple[int, str]]:
    """name -> (canonical value, text as given) for resources.requests or resources.limits."""
    out: dict[str, tuple[int, str]] = {}
    for name, raw in _mapping(resources, key, path).items():
        item = f"{path}[{name}]"
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise meta.invalid(item, raw, QUANTITY_MSG)
        try:
            value = quantity.canonical(str(name), raw)
        except quantity.QuantityError:
            raise meta.invalid(item, raw, QUANTITY_MSG) from None
        out[str(name)] = (value, str(raw))
    return out


def _check_resource(name: str, value: int, text: str, path: str, *, container: bool) -> None:
    if container:
        if "/" not in name:
            if name not in STANDARD_CONTAINER_RESOURCES and not is_hugepages(name):
                raise meta.invalid(path, name, "must be a standard resource for containers")
        elif not is_native(name) and not is_extended(name):
            raise meta.invalid(path, name, "doesn't follow extended resource name standard")
    if is_hugepages(name):
        try:
            size = quantity.canonical("memory", name[len(HUGEPAGES_PREFIX):])
        except quantity.QuantityError:
            size = 0
        if size <= 0:
            raise meta.invalid(path, name, "must be a valid hugepages resource name (hugepages-<size>)")
    if value < 0:
        raise meta.invalid(path, text, NEGATIVE_MSG)
    if is_extended(name) and not quantity.is_integer_quantity(text):
        raise meta.invalid(path, text, NOT_INTEGER_MSG)


def _parse_requirements(
    resources: Mapping[str, Any], path: str, *, container: bool
) -> tuple[dict[str, int], dict[str, int]]:
    req_path, lim_path = f"{path}.requests", f"{path}.limits"
    limits = _quantities(resources, "limits", lim_path)
    requests = _quantities(resources, "requests", req_path)
    if not container:
        for qty, qpath in ((limits, lim_path), (requests, req_path)):
            for name in qty:
                if name not in POD_LEVEL_RESOURCES:
                    raise meta.not_supported(f"{qpath}[{name}]", name, POD_LEVEL_RESOURCES)
    for name, (value, text) in limits.items():
        _check_resource(name, value, text, f"{lim_path}[{name}]", container=container)
    for name, (value, text) in requests.items():
        _check_resource(name, value, text, f"{req_path}[{name}]", container=container)
    if container:
        # API-server defaulting: a resource with only a limit gets the limit as its request.
        for name, entry in limits.items():
            requests.setdefault(name, entry)
    for name, (value, text) in requests.items():
        if name in limits:
            lim_value, lim_text = limits[name]
            if value != lim_value and not is_overcommit_allowed(name):
                raise meta.invalid(req_path, text, f"must be equal to {name} limit of {lim_text}")
            if value > lim_value:
                detail = f"must be less than or equal to {name} limit of {lim_text}"
                raise meta.invalid(req_path, text, detail)
        elif container and not is_overcommit_allowed(name):
            raise meta.required(lim_path, "Limit must be set for non overcommitable resources")
    if container:
        names = set(limits) | set(requests)
        if any(is_hugepages(n) for n in names) and not names & {"cpu", "memory"}:
            raise meta.forbidden(path, "HugePages require cpu or memory")
    return {n: v for n, (v, _) in requests.items()}, {n: v for n, (v, _) in limits.items()}


def _parse_pod_resources(
    spec: Mapping[str, Any], containers: Sequence[Container], init: Sequence[Container]
) -> tuple[dict[str, int], dict[str, int]]:
    raw = _mapping(spec, "resources", "spec.resources")
    if not raw:
        return {}, {}
    requests, limits = _parse_requirements(raw, "spec.resources", container=False)
    # defaultPodRequests: a pod-level limit without a request takes the containers' aggregate
    # request when any container sets one, else the limit itself.
    aggregate = aggregate_container_requests(containers, init)
    for name, limit in limits.items():
        if name not in requests:
            requests[name] = aggregate.get(name, limit)
    return requests, limits


# --- output --------------------------------------------------------------------------------


def rfc3339(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _container_status_json(cs: ContainerStatus, image: str) -> dict[str, Any]:
    state: dict[str, Any]
    if cs.state == "running":
        state = {"running": {"startedAt": rfc3339(cs.started_at)}}
    elif cs.state == "terminated":
        term: dict[str, Any] = {"exitCode": cs.exit_code if cs.exit_code is not None else 0}
        if cs.reason:
            term["reason"] = cs.reason
        if cs.started_at is not None:
            term["startedAt"] = rfc3339(cs.started_at)
        term["finishedAt"] = rfc3339(cs.finished_at)
        state = {"terminated": term}
    else:
        state = {"waiting": {"reason": cs.reason} if cs.reason else {}}
    out: dict[str, Any] = {
        "name": cs.name,
        "image": image,
        "imageID": "",
        "ready": cs.state == "running",
        "restartCount": 0,
        "started": cs.state == "running",
        "state": state,
    }
    if cs.allocated_resources_status:
        out["allocatedResourcesStatus"] = [
            {
                "name": rs.name,
                "resources": [{"resourceID": h.resource_id, "health": h.health} for h in rs.resources],
            }
            for rs in cs.allocated_resources_status
        ]
    return out


def status_to_json(pod: Pod, status: PodStatus) -> dict[str, Any]:
    images = {c.name: c.image for c in pod.all_containers()}
    out: dict[str, Any] = {"phase": status.phase}
    if status.reason:
        out["reason"] = status.reason
    if status.message:
        out["message"] = status.message
    if status.qos_class:
        out["qosClass"] = status.qos_class
    if status.start_time is not None:
        out["startTime"] = rfc3339(status.start_time)
    if status.conditions:
        out["conditions"] = []
        for cond in status.conditions:
            entry: dict[str, Any] = {"type": cond.type, "status": cond.status}
            entry["lastProbeTime"] = None
            entry["lastTransitionTime"] = rfc3339(cond.last_transition_time)
            if cond.reason:
                entry["reason"] = cond.reason
            if cond.message:
                entry["message"] = cond.message
            out["conditions"].append(entry)
    if status.init_container_statuses:
        out["initContainerStatuses"] = [
            _container_status_json(cs, images.get(cs.name, "")) for cs in status.init_container_statuses
        ]
    if status.container_statuses:
        out["containerStatuses"] = [
            _container_status_json(cs, images.get(cs.name, "")) for cs in status.container_statuses
        ]
    if status.allocated_resources_status:
        # Pod-level: DRA claims that no container references.
        out["allocatedResourcesStatus"] = [
            {
                "name": rs.name,
                "resources": [{"resourceID": h.resource_id, "health": h.health} for h in rs.resources],
            }
            for rs in status.allocated_resources_status
        ]
    return out


def pod_to_manifest(pod: Pod, status: PodStatus | None = None) -> dict[str, Any]:
    """The pod as the API server would show it: the given spec, full metadata, and status."""
    doc: dict[str, Any] = copy.deepcopy(dict(pod.manifest)) if pod.manifest else {}
    doc["apiVersion"] = "v1"
    doc["kind"] = "Pod"
    md: dict[str, Any] = dict(doc.get("metadata") or {})
    md.update(name=pod.name, namespace=pod.namespace, uid=pod.uid)
    md["creationTimestamp"] = rfc3339(pod.creation_timestamp)
    if pod.labels:
        md["labels"] = dict(pod.labels)
    else:
        md.pop("labels", None)
    if pod.annotations:
        md["annotations"] = dict(pod.annotations)
    else:
        md.pop("annotations", None)
    doc["metadata"] = md
    spec: dict[str, Any] = dict(doc.get("spec") or {})
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    spec.setdefault("restartPolicy", pod.restart_policy)
    spec.setdefault("priority", pod.priority)
    doc["spec"] = spec
    if status is not None:
        doc["status"] = status_to_json(pod, status)
    return doc
