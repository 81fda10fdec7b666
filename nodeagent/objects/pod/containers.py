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

from nodeagent.objects.common import type_error
from nodeagent.objects.pod.fields import get_list, get_mapping, get_str, unique_label
from nodeagent.objects.pod.model import ClaimRef, Container, PodResourceClaim
from nodeagent.objects.pod.resources import parse_requirements
from nodeagent.store import validation as meta


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
    """One entry of spec.containers or spec.initContainers; its name is recorded in `names`."""
    if not isinstance(raw, Mapping):
        raise type_error(path, raw, "object")
    name = unique_label(raw, path, names)
    image = get_str(raw, "image", f"{path}.image")
    if not image.strip():
        raise meta.required(f"{path}.image")
    restart_policy = get_str(raw, "restartPolicy", f"{path}.restartPolicy")
    if restart_policy:
        if not init:
            raise meta.forbidden(f"{path}.restartPolicy", "may not be set for non-init containers")
        if restart_policy != "Always":
            raise meta.not_supported(f"{path}.restartPolicy", restart_policy, ["Always"])
    resources = get_mapping(raw, "resources", f"{path}.resources")
    requests, limits = parse_requirements(resources, f"{path}.resources", container=True)
    claims = _parse_container_claims(resources, f"{path}.resources.claims", claim_names)
    return Container(
        name=name, image=image, requests=requests, limits=limits, restart_policy=restart_policy, claims=claims
    )


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
