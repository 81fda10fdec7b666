"""Node allocatable resources of DRA devices (KEP-5517, DRANodeAllocatableResources): what a pod's
claims take of the node's cpu, memory and hugepages, as the v1.37.2 scheduler counts it.

One responsibility: the arithmetic of pkg/scheduler/framework/plugins/dynamicresources
nodeallocatabledynamicresources.go, on plain dicts: per claim whose allocated devices carry
`nodeAllocatableResources`, the mapped quantity (consumedCapacity[capacityKey] x
capacityMultiplier, or deviceMultiplier per device) and the overheads (perPod, perContainer),
as the pod status entry the scheduler writes (`nodeAllocatableResourceClaimStatuses`); the pod's
total demand (its requests plus those entries, as resourcehelper.PodRequests adds them); the
DRA plugin's fit check of that demand (nodeFitsResources: cpu, memory, ephemeral-storage and
hugepages against allocatable minus what the node's pods request); the check that pod-level
resources cover the claims' share (validatePodLevelResourcesCoverDRA); and the sharing rule (a
claim with a mapped device serves one pod only).

Quantities keep apimachinery's formats: a sum takes the format of its first term, a product that
of the consumed amount, so the status reads as the real scheduler writes it. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from nodeagent.objects.pod import node_allocatable_status
from nodeagent.objects.pod.model import Pod
from nodeagent.pods import resources
from nodeagent.util import quantity

FIELD = node_allocatable_status.FIELD
POD_LEVEL = ("cpu", "memory")
FIT_RESOURCES = ("cpu", "memory", "ephemeral-storage")
SHARED_MESSAGE = "node allocatable resource claim {} has a mapped device and cannot be shared across pods"

class Missing:
    """The lookup found no such device in the node's slices (getDeviceFromSlices' error)."""


MISSING = Missing()
DeviceLookup = Callable[[str, str, str], "Mapping[str, Any] | Missing | None"]


class FootprintError(Exception):
    """Upstream's Filter returns an error status: the scheduling attempt stops."""


class _Sum:
    """A resource.Quantity being summed: the value and the format of its first term."""

    def __init__(self) -> None:
        self.value = Fraction(0)
        self.fmt = ""

    def add(self, value: Fraction, fmt: str) -> None:
        if not self.fmt and self.value == 0:
            self.fmt = fmt
        self.value += value

    def text(self) -> str:
        return quantity_text(self.value, self.fmt or quantity.DECIMAL_SI)


def quantity_text(value: Fraction, fmt: str) -> str:
    """Quantity.String() of `value` in `fmt`: whole numbers as quantity.quantity_string does;
    fractions in DecimalSI with the m/u/n suffix that keeps them whole (rounded up to nano, as
    apimachinery rounds)."""
    if value.denominator == 1:
        return quantity.quantity_string(int(value), fmt)
    scale = 3
    while scale < 9 and (value * 10**scale).denominator != 1:
        scale += 3
    mantissa = math.ceil(value * 10**scale)
    while scale > 0 and mantissa % 1000 == 0:
        mantissa //= 1000
        scale -= 3
    if scale == 0:
        return quantity.quantity_string(mantissa, quantity.DECIMAL_SI)
    return f"{mantissa}{_SUFFIX[scale]}"


_SUFFIX = {3: "m", 6: "u", 9: "n"}


def _parse(text: Any) -> tuple[Fraction, str]:
    return quantity.parse(text), quantity.format_of(text)


def has_mapped_device(results: Iterable[Mapping[str, Any]], lookup: DeviceLookup) -> bool:
    """claimHasNodeAllocatableMappedDevice: some allocated device maps a resource directly."""
    for r in results:
        device = lookup(str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        if isinstance(device, Mapping) and any(isinstance(v, Mapping) and v.get("mapping") is not None
                                               for v in device.values()):
            return True
    return False


def claim_status(namespace: str, name: str, results: Sequence[Mapping[str, Any]],
                 lookup: DeviceLookup) -> dict[str, Any] | None:
    """The status entry of one claim (without its containers), None when none of its devices
    carries nodeAllocatableResources. Raises FootprintError where upstream's Filter errors."""
    found = [lookup(str(r.get("driver")), str(r.get("pool")), str(r.get("device"))) for r in results]
    if not any(isinstance(d, Mapping) and d for d in found):
        return None
    mapped: dict[str, _Sum] = {}
    per_pod: dict[str, _Sum] = {}
    per_container: dict[str, _Sum] = {}
    for r, device in zip(results, found, strict=True):
        if isinstance(device, Missing):
            raise FootprintError(f"claim {namespace}/{name}, device {r.get('device')}, driver {r.get('driver')}: "
                                 f"device {r.get('device')} not found in pool {r.get('pool')} for driver "
                                 f"{r.get('driver')}")
        for resource, entry in (device or {}).items():
            mapping = entry.get("mapping")
            if isinstance(mapping, Mapping):
                _add_mapping(resource, mapping, r, namespace, name, mapped)
            overhead = entry.get("overhead")
            if isinstance(overhead, Mapping):
                for key, sums in (("perPod", per_pod), ("perContainer", per_container)):
                    if overhead.get(key) is not None:
                        sums.setdefault(resource, _Sum()).add(*_parse(overhead[key]))
    if not mapped and not per_pod and not per_container:
        return None
    overhead_out = []
    for resource in sorted(set(per_pod) | set(per_container)):
        item: dict[str, Any] = {"name": resource}
        if resource in per_pod:
            item["perPod"] = per_pod[resource].text()
        if resource in per_container:
            item["perContainer"] = per_container[resource].text()
        overhead_out.append(item)
    out: dict[str, Any] = {"resourceClaimName": name}
    if mapped:
        out["mapping"] = [{"name": k, "quantity": mapped[k].text()} for k in sorted(mapped)]
    if overhead_out:
        out["overhead"] = overhead_out
    return out


def _add_mapping(resource: str, mapping: Mapping[str, Any], result: Mapping[str, Any], namespace: str,
                 name: str, totals: dict[str, _Sum]) -> None:
    """addDeviceMapping."""
    key = mapping.get("capacityKey")
    if key:
        consumed = result.get("consumedCapacity")
        if consumed is None:
            raise FootprintError(
                f"claim {namespace}/{name}, device {result.get('device')}: ConsumedCapacity is nil, but Capacity "
                f"key '{key}' is set in NodeAllocatableResources for resource {resource}")
        if key in consumed:
            value, fmt = _parse(consumed[key])
            multiplier = mapping.get("capacityMultiplier")
            if multiplier is not None and quantity.parse(multiplier) != 1:
                value *= quantity.parse(multiplier)
            totals.setdefault(resource, _Sum()).add(value, fmt)
        return
    if mapping.get("deviceMultiplier") is not None:
        totals.setdefault(resource, _Sum()).add(*_parse(mapping["deviceMultiplier"]))


def containers_by_claim(pod: Mapping[str, Any]) -> dict[str, list[str]]:
    """Pod claim name -> the containers referencing it (init containers first, one entry per
    reference, as buildNodeAllocatableDRAInfo lists them)."""
    spec = pod.get("spec") or {}
    out: dict[str, list[str]] = {}
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or ():
            for ref in ((c.get("resources") or {}).get("claims") or ()):
                if isinstance(ref, Mapping) and ref.get("name"):
                    out.setdefault(str(ref["name"]), []).append(str(c.get("name")))
    return out


def with_containers(entry: Mapping[str, Any], containers: Sequence[str]) -> dict[str, Any]:
    """The entry as written (upstream's field order: name, containers, mapping, overhead)."""
    out: dict[str, Any] = {"resourceClaimName": entry["resourceClaimName"]}
    if containers:
        out["containers"] = list(containers)
    for key in ("mapping", "overhead"):
        if entry.get(key):
            out[key] = entry[key]
    return out


def pod_level_resources(pod: Mapping[str, Any]) -> frozenset[str]:
    """Resources whose pod-level request replaces the containers' sum (and so the DRA part)."""
    requests = ((pod.get("spec") or {}).get("resources") or {}).get("requests") or {}
    return frozenset(r for r in requests if r in POD_LEVEL or str(r).startswith("hugepages-"))


def demand(requests: Mapping[str, int], statuses: Sequence[Mapping[str, Any]],
           pod_level: frozenset[str]) -> dict[str, int]:
    """resourcehelper.PodRequests with UseDRANodeAllocatableResourceClaimStatus: the entries'
    resources added to the containers' sum (a pod-level request still wins)."""
    extra = node_allocatable_status.claim_resources({FIELD: list(statuses)})
    out = dict(requests)
    for name, value in extra.items():
        if name not in pod_level:
            out[name] = out.get(name, 0) + value
    return out


def misfit(total: Mapping[str, int], allocatable: Mapping[str, int], requested: Mapping[str, int]) -> str | None:
    """nodeFitsResources: "Insufficient cpu, Insufficient memory" for the resources (cpu, memory,
    ephemeral-storage, hugepages) the demand exceeds what is left, else None."""
    names = [*FIT_RESOURCES, *sorted(n for n in total if n.startswith("hugepages-"))]
    missing = [f"Insufficient {n}" for n in names
               if total.get(n, 0) > 0 and total[n] > allocatable.get(n, 0) - requested.get(n, 0)]
    return ", ".join(missing) if missing else None


def _supported_pod_level(name: str) -> bool:
    return name in POD_LEVEL or name.startswith("hugepages-")


def container_allocations(statuses: Sequence[Mapping[str, Any]], container: str) -> dict[str, int]:
    """resourcehelper.GetContainerDRAAllocations: what the entries referencing `container` give it
    (each mapping in full, each overhead's perPod plus one perContainer)."""
    mine = [{**s, "containers": ["x"]} for s in statuses if container in (s.get("containers") or ())]
    return node_allocatable_status.claim_resources({FIELD: mine})


def pod_level_cover(pod: Pod, statuses: Sequence[Mapping[str, Any]]) -> str | None:
    """validatePodLevelResourcesCoverDRA: pod-level requests cover the containers' requests plus
    the entries, pod-level hugepages limits the containers' limits plus the entries, and each
    pod-level limit every app container's limit plus what its claims give it. The message, or None."""
    if not statuses or not (pod.pod_requests or pod.pod_limits):
        return None
    containers_only = dataclasses.replace(pod, pod_requests={}, pod_limits={}, manifest={})
    extra = node_allocatable_status.claim_resources({FIELD: list(statuses)})
    if pod.pod_requests:
        total = resources.pod_requests(containers_only)
        for name, value in extra.items():
            total[name] = total.get(name, 0) + value
        for name, budget in sorted(pod.pod_requests.items()):
            if _supported_pod_level(name) and name in total and total[name] > budget:
                return (f"pod level request for {name} is insufficient to cover the aggregated container and "
                        "node-allocatable DRA requests")
    if pod.pod_limits:
        limits = resources.pod_limits(containers_only)
        for name, value in extra.items():
            if name in limits or name.startswith("hugepages-"):
                limits[name] = limits.get(name, 0) + value
        for name in sorted(limits):
            if name.startswith("hugepages-") and name in pod.pod_limits and limits[name] > pod.pod_limits[name]:
                return (f"pod level limit for {name} is insufficient to cover the aggregated container and "
                        "node-allocatable DRA limits")
        for c in pod.containers:
            given = container_allocations(statuses, c.name)
            for name, limit in sorted(c.limits.items()):
                if name.startswith("hugepages-") or name not in pod.pod_limits:
                    continue
                if limit + given.get(name, 0) > pod.pod_limits[name]:
                    return (f"pod level limit for {name} is insufficient to cover the limit and DRA overhead "
                            f"for container {c.name}")
    return None
