"""What the node's DRA manager adds for two 1.37 features, as pure functions over pods and claims.

- Extended resources backed by DRA (KEP-5004): the scheduler records the special claim it made
  for a pod in `pod.status.extendedResourceClaimStatus`; the kubelet prepares that claim with the
  pod's others and hands a container only the requests its `requestMappings` name, for extended
  resources the container really requests. The claim joins the pod record under a pod claim name
  no pod can use (`<extended-resources>`), and gets no allocatedResourcesStatus entries (the
  kubelet reports health only for `resources.claims`).
- Optional node operations (KEP-5945): per driver of a claim, the operations every allocated
  device of that driver skips (`skipNodeOperations` of the allocation results, "*" meaning all).

Why apart from model.py: these rules are read from upstream's manager and KEP text and change
with them; model.py stays the claim/pod model. Pure: no I/O, no gRPC.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.dra.model import PodRecord
from nodeagent.objects.pod.model import ClaimRef, Pod, ResourceStatus
from nodeagent.objects.pod.resources import is_extended

EXTENDED_POD_CLAIM = "<extended-resources>"
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"

SKIP_PREPARE = "NodePrepareResources"
SKIP_UNPREPARE = "NodeUnprepareResources"
SKIP_ALL = "*"
GATE_DISABLED = "DRAOptionalNodeOperations feature gate is disabled on kubelet"


@dataclass(frozen=True)
class ExtendedClaim:
    """pod.status.extendedResourceClaimStatus"""

    claim_name: str
    mappings: tuple[tuple[str, str, str], ...]  # (container, resource, request)


def extended_claim(pod: Pod) -> ExtendedClaim | None:
    """The special claim of `pod`, from the status the scheduler wrote with the binding."""
    status = pod.manifest.get("status")
    raw = status.get("extendedResourceClaimStatus") if isinstance(status, Mapping) else None
    if not isinstance(raw, Mapping) or not raw.get("resourceClaimName"):
        return None
    mappings = tuple(
        (str(m.get("containerName", "")), str(m.get("resourceName", "")), str(m.get("requestName", "")))
        for m in raw.get("requestMappings") or () if isinstance(m, Mapping)
    )
    return ExtendedClaim(str(raw["resourceClaimName"]), mappings)


def _dra_extended(name: str) -> bool:
    return is_extended(name) or name.startswith(DEVICE_CLASS_PREFIX)


def container_refs(pod: Pod, claim: ExtendedClaim) -> dict[str, tuple[ClaimRef, ...]]:
    """Per container, the special claim's requests it gets: a mapping names the container and an
    extended resource the container requests (non-zero)."""
    out: dict[str, tuple[ClaimRef, ...]] = {}
    for c in pod.all_containers():
        asked = {n for n, v in c.requests.items() if v and _dra_extended(n)}
        refs = tuple(dict.fromkeys(ClaimRef(EXTENDED_POD_CLAIM, req) for cn, res, req in claim.mappings
                                   if cn == c.name and res in asked))
        if refs:
            out[c.name] = refs
    return out


def with_refs(record: PodRecord, refs: Mapping[str, tuple[ClaimRef, ...]]) -> PodRecord:
    """The pod record with the special claim's requests added to the containers that asked."""
    if not refs:
        return record
    containers = dict(record.containers)
    for name, extra in refs.items():
        containers[name] = containers.get(name, ()) + extra
    return dataclasses.replace(record, containers=tuple(containers.items()))


def visible(statuses: Mapping[str, tuple[ResourceStatus, ...]]) -> dict[str, tuple[ResourceStatus, ...]]:
    """Container allocatedResourcesStatus without entries of the special claim."""
    out = {}
    for container, entries in statuses.items():
        kept = tuple(s for s in entries if not s.name.startswith(f"claim:{EXTENDED_POD_CLAIM}"))
        if kept:
            out[container] = kept
    return out


def skipped_operations(doc: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """driver -> the node operations every device of that driver in the claim's allocation skips
    (only drivers that skip something)."""
    per_driver: dict[str, frozenset[str] | None] = {}
    alloc = (doc.get("status") or {}).get("allocation") or {}
    for r in (alloc.get("devices") or {}).get("results") or ():
        if not isinstance(r, Mapping):
            continue
        raw = set(r.get("skipNodeOperations") or ())
        ops = frozenset({SKIP_PREPARE, SKIP_UNPREPARE} if SKIP_ALL in raw else raw & {SKIP_PREPARE, SKIP_UNPREPARE})
        driver = str(r.get("driver", ""))
        have = per_driver.get(driver)
        per_driver[driver] = ops if driver not in per_driver or have is None else have & ops
    return {d: ops for d, ops in per_driver.items() if ops}


def skips(skipped: Mapping[str, frozenset[str]], driver: str, operation: str) -> bool:
    return operation in skipped.get(driver, frozenset())

