"""The DRA manager's pure model: claims as the node sees them, what each pod got, and what follows.

ResourceClaim dicts from the object store are read once into `ClaimView`; the claim cache keeps
one `ClaimEntry` per claim uid (devices per driver, pods using it); a `PodRecord` keeps what one
pod was given so its health and pod-resources answers survive the claim being unprepared (a
failed pod still shows the health of what it had). From these, pure functions derive the
allocatedResourcesStatus entries (`claim:<pod claim>/<request>` or `claim:<pod claim>`, resource id
the device's first CDI id, else `<driver>/<pool>/<device>`) and the pod-resources DynamicResourceInfo. No I/O, no gRPC.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodeagent.dra.ports import ClaimRef as WireClaimRef
from nodeagent.dra.ports import PreparedDevice
from nodeagent.objects.pod.model import ClaimRef, Pod, ResourceHealth, ResourceStatus
from nodeagent.podresources.providers import ClaimDevice, DynamicResourceInfo

DeviceKey = tuple[str, str, str]
"""(driver, pool, device)"""

HealthLookup = Callable[[DeviceKey], str]
MessageLookup = Callable[[DeviceKey], str]


def base_request(request: str) -> str:
    """`gpu/large` (a firstAvailable subrequest) belongs to the pod's request `gpu`."""
    return request.split("/", 1)[0]


def resource_id(key: DeviceKey) -> str:
    return "/".join(key)


@dataclass(frozen=True)
class AllocationResult:
    """One entry of status.allocation.devices.results."""

    request: str
    driver: str
    pool: str
    device: str

    @property
    def key(self) -> DeviceKey:
        return (self.driver, self.pool, self.device)


@dataclass(frozen=True)
class ClaimView:
    """The parts of a ResourceClaim the node needs."""

    namespace: str
    name: str
    uid: str
    allocated: bool
    reserved_for: frozenset[str]  # pod uids
    results: tuple[AllocationResult, ...] = ()
    controller_uid: str = ""  # the uid of the ownerReference with controller: true ("" if none)

    @property
    def drivers(self) -> tuple[str, ...]:
        return tuple(sorted({r.driver for r in self.results}))


def parse_claim(namespace: str, name: str, doc: Mapping[str, Any]) -> ClaimView:
    """Read a resource.k8s.io/v1 ResourceClaim dict; tolerant of missing parts (they mean "not yet")."""
    metadata = doc.get("metadata") or {}
    status = doc.get("status") or {}
    allocation = status.get("allocation")
    results: list[AllocationResult] = []
    if isinstance(allocation, Mapping):
        for r in (allocation.get("devices") or {}).get("results") or ():
            if isinstance(r, Mapping):
                results.append(AllocationResult(str(r.get("request", "")), str(r.get("driver", "")),
                                                str(r.get("pool", "")), str(r.get("device", ""))))
    reserved = frozenset(
        str(c.get("uid", "")) for c in status.get("reservedFor") or ()
        if isinstance(c, Mapping) and c.get("resource", "pods") == "pods"
    )
    controller = next((str(o.get("uid", "")) for o in metadata.get("ownerReferences") or ()
                       if isinstance(o, Mapping) and o.get("controller") is True), "")
    return ClaimView(namespace, name, str(metadata.get("uid", "")), isinstance(allocation, Mapping),
                     reserved, tuple(results), controller)


def claim_not_created(pod_namespace: str, pod_name: str) -> str:
    """resourceclaim.Name's error for a claim from a template not in the pod's resourceClaimStatuses yet."""
    return f'pod "{pod_namespace}/{pod_name}": ResourceClaim not created yet'


def claim_not_found(name: str) -> str:
    """The kubelet's GET of a claim that does not exist (PrepareResources' "fetch ResourceClaim")."""
    return f'fetch ResourceClaim {name}: resourceclaims.resource.k8s.io "{name}" not found'


def claim_problem(claim: ClaimView, pod_namespace: str, pod_name: str, pod_uid: str, *,
                  must_own: bool = False) -> str:
    """Why the pod may not use the claim ("" when it may), with the kubelet's texts and in its order
    (PrepareResources: resourceclaim.IsForPod for a claim from a template, IsReservedForPod,
    newClaimInfoFromClaim)."""
    if must_own:
        if claim.namespace != pod_namespace:
            return (f"ResourceClaim {claim.namespace}/{claim.name} is not in the same namespace as Pod "
                    f"{pod_namespace}/{pod_name}")
        if claim.controller_uid != pod_uid:
            return (f"ResourceClaim {claim.namespace}/{claim.name} was not created for Pod "
                    f"{pod_namespace}/{pod_name} (Pod is not owner)")
    if pod_uid not in claim.reserved_for:
        return f"pod {pod_name} ({pod_uid}) is not allowed to use ResourceClaim {claim.name} ({claim.uid})"
    if not claim.allocated:
        return f"ResourceClaim {claim.name}: not allocated"
    return ""


@dataclass(frozen=True)
class ClaimEntry:
    """The claim cache: one prepared (or being prepared) claim on this node."""

    uid: str
    namespace: str
    name: str
    results: tuple[AllocationResult, ...]
    drivers: tuple[str, ...]  # every driver that must prepare it
    prepared: Mapping[str, tuple[PreparedDevice, ...]] = field(default_factory=dict)  # driver -> devices
    pods: frozenset[str] = frozenset()
    # Drivers whose NodeUnprepareResources succeeded after the last pod left (pods empty);
    # the entry is dropped once every driver is released.
    released: frozenset[str] = frozenset()
    # driver -> node operations all its devices skip (skipNodeOperations, DRAOptionalNodeOperations)
    skipped: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return all(d in self.prepared for d in self.drivers)

    @property
    def ref(self) -> WireClaimRef:
        return WireClaimRef(self.namespace, self.uid, self.name)


@dataclass(frozen=True)
class PodClaim:
    """One of the pod's claims, as the pod got it."""

    pod_claim_name: str
    uid: str
    namespace: str
    name: str
    results: tuple[AllocationResult, ...]
    devices: Mapping[str, tuple[PreparedDevice, ...]]  # driver -> prepared devices


@dataclass(frozen=True)
class PodRecord:
    """What one pod was given; `prepared` False once its claims were released."""

    uid: str
    namespace: str
    name: str
    prepared: bool
    claims: tuple[PodClaim, ...]
    containers: tuple[tuple[str, tuple[ClaimRef, ...]], ...]  # only containers that reference claims

    def device_keys(self) -> set[DeviceKey]:
        return {r.key for c in self.claims for r in c.results}


def pod_record(pod: Pod, claims: Iterable[tuple[str, ClaimEntry]], *, prepared: bool = True) -> PodRecord:
    pod_claims = tuple(
        PodClaim(pcn, e.uid, e.namespace, e.name, e.results, dict(e.prepared)) for pcn, e in claims
    )
    containers = tuple((c.name, c.claims) for c in pod.all_containers() if c.claims)
    return PodRecord(pod.uid, pod.namespace, pod.name, prepared, pod_claims, containers)


def _no_message(key: DeviceKey) -> str:
    return ""


def _claim_statuses(claim: PodClaim, request: str, health: HealthLookup,
                    message: MessageLookup = _no_message) -> list[ResourceStatus]:
    """The entry of one claim reference, as the kubelet's DRA manager builds it: named
    `claim:<claim>/<request>` when the reference names a request (the devices of that request),
    else `claim:<claim>` (every device of the claim); each resource id once."""
    ids: dict[str, ResourceHealth] = {}
    for r in claim.results:
        if not request or base_request(r.request) == base_request(request) or r.request == request:
            rid = health_resource_id(claim, r)
            if rid not in ids:
                ids[rid] = ResourceHealth(rid, health(r.key), message(r.key))
    name = f"claim:{claim.pod_claim_name}/{request}" if request else f"claim:{claim.pod_claim_name}"
    return [ResourceStatus(name, tuple(ids.values()))]


def health_resource_id(claim: PodClaim, result: AllocationResult) -> str:
    """The resourceID the kubelet reports a device's health under (buildResourceHealth): the
    first CDI device id its driver's NodePrepareResources gave for it, else driver/pool/device."""
    for device in claim.devices.get(result.driver, ()):
        if device.pool_name == result.pool and device.device_name == result.device and device.cdi_device_ids:
            return device.cdi_device_ids[0]
    return resource_id(result.key)


def health_resource_ids(record: PodRecord, keys: Iterable[DeviceKey]) -> set[str]:
    """The resourceIDs of the record's entries that report one of these devices."""
    wanted = set(keys)
    return {health_resource_id(c, r) for c in record.claims for r in c.results if r.key in wanted}


def container_statuses(record: PodRecord, health: HealthLookup, message: MessageLookup = _no_message
                       ) -> dict[str, tuple[ResourceStatus, ...]]:
    """allocatedResourcesStatus entries per container that references claims."""
    by_name = {c.pod_claim_name: c for c in record.claims}
    out: dict[str, tuple[ResourceStatus, ...]] = {}
    for container, refs in record.containers:
        statuses: dict[str, ResourceStatus] = {}
        for ref in refs:
            claim = by_name.get(ref.name)
            if claim is None:
                continue
            for rs in _claim_statuses(claim, ref.request, health, message):
                statuses[rs.name] = rs
        if statuses:
            out[container] = tuple(statuses.values())
    return out


def pod_statuses(record: PodRecord, health: HealthLookup, message: MessageLookup = _no_message
                 ) -> tuple[ResourceStatus, ...]:
    """Pod-level entries: the claims no container references."""
    referenced = {ref.name for _, refs in record.containers for ref in refs}
    out: list[ResourceStatus] = []
    for claim in record.claims:
        if claim.pod_claim_name not in referenced:
            out.extend(_claim_statuses(claim, "", health, message))
    return tuple(out)


def _matches(device: PreparedDevice, request: str) -> bool:
    if not request or not device.request_names:
        return True
    return any(rn == request or base_request(rn) == request for rn in device.request_names)


def container_resources(record: PodRecord, container: str) -> list[DynamicResourceInfo]:
    """pod-resources dynamic_resources for one container: one entry per claim it references."""
    by_name = {c.pod_claim_name: c for c in record.claims}
    refs = dict(record.containers).get(container, ())
    wanted: dict[str, list[str]] = {}  # pod claim name -> requests ("" = whole claim)
    for ref in refs:
        wanted.setdefault(ref.name, []).append(ref.request)
    out = []
    for pcn, requests in wanted.items():
        claim = by_name.get(pcn)
        if claim is None:
            continue
        devices: dict[tuple[str, str, str], ClaimDevice] = {}
        for driver, prepared in sorted(claim.devices.items()):
            for d in prepared:
                if any(_matches(d, req) for req in requests):
                    devices.setdefault((driver, d.pool_name, d.device_name), ClaimDevice(
                        driver, d.pool_name, d.device_name, tuple(d.cdi_device_ids), d.share_id))
        out.append(DynamicResourceInfo(claim.name, claim.namespace, tuple(devices.values())))
    return out
