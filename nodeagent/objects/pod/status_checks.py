"""What kube-apiserver checks of a pod status write that nodeagent's own writers could get wrong.

ValidatePodStatusUpdate's allocatedResourcesStatus rules (pkg/apis/core/validation, v1.37),
with upstream's field paths and texts, so the embedded API server answers the same 422 as
kube-apiserver and the node's own status writes are held to what a real API server accepts:
- containerStatuses[i] and initContainerStatuses[i]: each entry's name matches one of that
  container's resource requests, or as `claim:<claim>` / `claim:<claim>/<request>` one of its
  resource claims (or the pod's extendedResourceClaimStatus); resource health is Healthy,
  Unhealthy or Unknown; a message given is non-empty and at most 1024 bytes; resource ids are
  unique within an entry. A status whose container is not in the spec is not checked (#124915).
- ephemeralContainerStatuses[i]: no allocatedResourcesStatus at all.
Pure: plain dicts in, ValidationErrors out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import ManyErrors
from nodeagent.objects.pod import node_allocatable_status
from nodeagent.store import validation as meta
from nodeagent.util import quantity

HEALTH_VALUES = ("Healthy", "Unhealthy", "Unknown")
MESSAGE_MAX = 1024  # v1.ResourceHealthMessageMaxLength
CLAIM_NAME_TEXT = ("must match one of the container's resource claims as 'claim:<claimName>/<requestName>' "
                   "when container.resources.claims[*].request is set or 'claim:<claimName>' when it is empty")
REQUEST_NAME_TEXT = "must match one of the container's resource requests"


def resource_status_name(claim: str, request: str) -> str:
    """The allocatedResourcesStatus name of a container's claim reference (resourceStatusName)."""
    return f"claim:{claim}/{request}" if request else f"claim:{claim}"


def check_pod_status(obj: Mapping[str, Any]) -> None:
    """Raise the errors of `obj`'s status (one ValidationError, or ManyErrors in upstream's order)."""
    errors = pod_status_errors(obj)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ManyErrors(errors)


def pod_status_errors(obj: Mapping[str, Any]) -> list[ValidationError]:
    spec = _mapping(obj.get("spec"))
    status = _mapping(obj.get("status"))
    extended = _mapping(status.get("extendedResourceClaimStatus"))
    errors = _containers(status.get("containerStatuses"), "status.containerStatuses", spec.get("containers"), extended)
    errors += _containers(status.get("initContainerStatuses"), "status.initContainerStatuses",
                          spec.get("initContainers"), extended)
    for i, cs in enumerate(_list(status.get("ephemeralContainerStatuses"))):
        if _list(_mapping(cs).get("allocatedResourcesStatus")):
            errors.append(meta.forbidden(f"status.ephemeralContainerStatuses[{i}].allocatedResourcesStatus",
                                         "must not be specified in container status"))
    return errors + node_allocatable_status.errors(obj)


def _containers(statuses: Any, path: str, containers: Any, extended: Mapping[str, Any]) -> list[ValidationError]:
    by_name = {str(c.get("name")): c for c in _list(containers) if isinstance(c, Mapping)}
    errors: list[ValidationError] = []
    for i, cs in enumerate(_list(statuses)):
        cs = _mapping(cs)
        container = by_name.get(str(cs.get("name")))
        for j, entry in enumerate(_list(cs.get("allocatedResourcesStatus"))):
            entry = _mapping(entry)
            here = f"{path}[{i}].allocatedResourcesStatus[{j}]"
            name = str(entry.get("name") or "")
            if container is not None:
                text = _name_problem(name, container, extended)
                if text:
                    errors.append(meta.invalid(f"{here}.name", name, text))
            errors += _health(entry.get("resources"), f"{here}.resources")
    return errors


def _name_problem(name: str, container: Mapping[str, Any], extended: Mapping[str, Any]) -> str:
    resources = _mapping(container.get("resources"))
    if name.startswith("claim:"):
        for ref in _list(resources.get("claims")):
            ref = _mapping(ref)
            if resource_status_name(str(ref.get("name") or ""), str(ref.get("request") or "")) == name:
                return ""
        return "" if _extended_claim(name, container, extended) else CLAIM_NAME_TEXT
    # kube-apiserver's pod defaulting gives every resource with only a limit that limit as its request
    # (SetDefaults_Pod), and the validation runs on the defaulted pod; the stored pod here keeps the
    # manifest as written, so a limit counts as the request it would have been defaulted to.
    requested = set(_mapping(resources.get("requests"))) | set(_mapping(resources.get("limits")))
    return "" if name in requested else REQUEST_NAME_TEXT


def _extended_claim(name: str, container: Mapping[str, Any], extended: Mapping[str, Any]) -> bool:
    """matchesExtendedResourceClaimStatus: `claim:<the special claim>/<request>` of a request
    mapped to one of the container's (non-zero) extended resource requests."""
    claim, _, request = name.removeprefix("claim:").partition("/")
    if not extended or not request or claim != extended.get("resourceClaimName"):
        return False
    requests = _mapping(_mapping(container.get("resources")).get("requests"))
    for mapping in _list(extended.get("requestMappings")):
        mapping = _mapping(mapping)
        if mapping.get("containerName") != container.get("name") or mapping.get("requestName") != request:
            continue
        amount = requests.get(str(mapping.get("resourceName")))
        if amount is not None and _nonzero(amount):
            return True
    return False


def _nonzero(amount: object) -> bool:
    try:
        return quantity.parse(amount) != 0
    except quantity.QuantityError:
        return False


def admit_status(obj: dict[str, Any], old: Mapping[str, Any], *, node_allocatable: bool = False) -> dict[str, Any]:
    """The Pod kind's status hook in the object store: every status write is prepared as the pod
    status strategy does (node_allocatable_status.prepare, with the DRANodeAllocatableResources
    gate) and checked."""
    node_allocatable_status.prepare(obj, old, node_allocatable)
    check_pod_status(obj)
    return obj


def _health(resources: Any, path: str) -> list[ValidationError]:
    errors: list[ValidationError] = []
    seen: set[str] = set()
    for k, health in enumerate(_list(resources)):
        health = _mapping(health)
        here = f"{path}[{k}]"
        value = str(health.get("health") or "")
        if value not in HEALTH_VALUES:
            errors.append(meta.not_supported(f"{here}.health", value, HEALTH_VALUES))
        message = health.get("message")
        if message is not None:
            if not str(message):
                errors.append(meta.required(f"{here}.message", "must be non-empty if specified"))
            elif len(str(message).encode()) > MESSAGE_MAX:
                errors.append(ValidationError(f"{here}.message", f"Too long: may not be more than {MESSAGE_MAX} bytes"))
        rid = str(health.get("resourceID") or "")
        if rid in seen:
            errors.append(meta.duplicate(f"{here}.resourceID", rid))
        seen.add(rid)
    return errors


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if type(value) is dict or isinstance(value, Mapping) else {}  # dict: no ABC check


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else ()
