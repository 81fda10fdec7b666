"""A Pod's containers, init containers and resource claims, parsed and validated into the model.

Why together: a container's `resources.claims` may only name entries of the pod's
`spec.resourceClaims`, and container names are unique across init and regular containers,
so the claim list and the containers are checked as one unit. Each container's requests
and limits go through resources.parse_requirements. Errors carry the API server's field
paths (e.g. `spec.initContainers[1].restartPolicy`). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.objects.common import Errors, type_error
from nodeagent.objects.pod.fields import get_list, get_mapping, get_str, unique_label
from nodeagent.objects.pod.model import ClaimRef, Container, PodResourceClaim
from nodeagent.objects.pod.resources import parse_requirements
from nodeagent.store import validation as meta

CONTAINER_RESTART_POLICIES = ("Always", "Never", "OnFailure")
"""supportedContainerRestartPolicies (a container's own restartPolicy under ContainerRestartRules)."""


def parse_pod_claims(spec: Mapping[str, Any]) -> tuple[PodResourceClaim, ...]:
    """spec.resourceClaims: unique names, each naming exactly one claim or claim template."""
    out: list[PodResourceClaim] = []
    seen: set[str] = set()
    for i, raw in enumerate(get_list(spec, "resourceClaims", "spec.resourceClaims")):
        path = f"spec.resourceClaims[{i}]"
        if not isinstance(raw, Mapping):
            raise type_error(path, raw, "object")
        name = unique_label(raw, path, seen)
        claim_name = get_str(raw, "resourceClaimName", f"{path}.resourceClaimName")
        template = get_str(raw, "resourceClaimTemplateName", f"{path}.resourceClaimTemplateName")
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


def parse_container(
    raw: object, path: str, *, init: bool, names: set[str], claim_names: set[str]
) -> Container:
    """One entry of spec.containers or spec.initContainers; its name is recorded in `names`.
    Every independent check runs and all that fail are raised together (ManyErrors), in
    validateContainerCommon's order: name, image, resources; then for an init container its restart
    policy and the name's uniqueness, for a regular one the reverse. The caller parses the regular
    containers first."""
    if not isinstance(raw, Mapping):
        raise type_error(path, raw, "object")
    errs = Errors()
    name = errs.check(get_str, raw, "name", f"{path}.name")
    if name is not None:
        if not name:
            errs.append(meta.required(f"{path}.name"))
        else:
            errs.check(meta.check_dns_label, f"{path}.name", name)
    image = errs.check(get_str, raw, "image", f"{path}.image")
    if image is not None and not image.strip():
        errs.append(meta.required(f"{path}.image"))
    parsed = errs.check(_resources, raw, f"{path}.resources", claim_names)
    # ContainerRestartRules (beta, on in v1.37): any container may name Always, Never or OnFailure
    restart_policy = errs.check(get_str, raw, "restartPolicy", f"{path}.restartPolicy")
    if init and restart_policy and restart_policy not in CONTAINER_RESTART_POLICIES:
        errs.append(meta.not_supported(f"{path}.restartPolicy", restart_policy, CONTAINER_RESTART_POLICIES))
    if name is not None:
        # init containers are checked against the regular ones (parsed first), as upstream's
        # validateInitContainers; an empty name is recorded only among regular containers
        if name in names:
            errs.append(meta.duplicate(f"{path}.name", name))
        elif name or not init:
            names.add(name)
    if restart_policy and not init and restart_policy not in CONTAINER_RESTART_POLICIES:
        errs.append(meta.not_supported(f"{path}.restartPolicy", restart_policy, CONTAINER_RESTART_POLICIES))
    errs.raise_all()
    assert name is not None and image is not None and parsed is not None
    requests, limits, claims = parsed
    # a regular container's own restart policy is accepted as upstream's, but the simulated node
    # restarts containers by the pod's policy alone (an intended difference: no per-container rules)
    return Container(
        name=name, image=image, requests=requests, limits=limits, restart_policy=(restart_policy or "") if init else "",
        claims=claims,
    )


def _resources(raw: Mapping[str, Any], path: str, claim_names: set[str]) -> tuple[Any, Any, tuple[ClaimRef, ...]]:
    """A container's requests, limits and claims (each part's errors, all of them)."""
    resources = get_mapping(raw, "resources", path)
    errs = Errors()
    parsed = errs.check(lambda: parse_requirements(resources, path, container=True))
    claims = errs.check(_parse_container_claims, resources, f"{path}.claims", claim_names)
    errs.raise_all()
    assert parsed is not None and claims is not None
    return parsed[0], parsed[1], claims


def _parse_container_claims(
    resources: Mapping[str, Any], path: str, claim_names: set[str]
) -> tuple[ClaimRef, ...]:
    out: list[ClaimRef] = []
    seen: set[str] = set()
    for i, raw in enumerate(get_list(resources, "claims", path)):
        item = f"{path}[{i}]"
        if not isinstance(raw, Mapping):
            raise type_error(item, raw, "object")
        name = get_str(raw, "name", f"{item}.name")
        request = get_str(raw, "request", f"{item}.request")
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
