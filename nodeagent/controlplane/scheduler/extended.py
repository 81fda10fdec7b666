"""Extended resources backed by DRA (KEP-5004): which DeviceClass serves a pod's extended resource
request, the device requests of the special claim the scheduler makes for the pod, and which
container request maps to which claim request.

Why a module of its own: the scheduler's node pass, its binder and the tests all need the same
answers, and they follow upstream's dynamicresources plugin rules exactly (request names
`container-<index>-request-<resource index>`, short-lived init containers reusing what the
long-lived containers after them asked for, the largest short-lived request kept). A resource is
backed by DRA on a node when a class names it (`spec.extendedResourceName`, or implicitly
`deviceclass.resource.kubernetes.io/<class>`) and the node advertises none of it (no device
plugin serves it there). Pure: no I/O, no store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nodeagent.controlplane import allocator as model
from nodeagent.objects.pod.model import Pod
from nodeagent.objects.pod.resources import is_extended

DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
IN_MEMORY_NAME = "<extended-resources>"
GENERATE_NAME_SUFFIX = "-extended-resources-"


def is_dra_extended(name: str) -> bool:
    """schedutil.IsDRAExtendedResourceName: an extended resource, or an implicit class resource."""
    return is_extended(name) or name.startswith(DEVICE_CLASS_PREFIX)


@dataclass(frozen=True)
class ClassInfo:
    """What the mapping needs of one DeviceClass."""

    name: str
    extended_resource_name: str = ""
    created: str = ""  # metadata.creationTimestamp (RFC 3339, sorts as time)


def class_mapping(classes: Iterable[ClassInfo]) -> dict[str, str]:
    """Extended resource name -> DeviceClass name. Every class maps its implicit name; an explicit
    extendedResourceName shared by several classes goes to the one created last, ties to the
    lexicographically first name (the DeviceClassSpec rule)."""
    out: dict[str, str] = {}
    explicit: dict[str, ClassInfo] = {}
    for c in classes:
        out.setdefault(DEVICE_CLASS_PREFIX + c.name, c.name)
        if c.extended_resource_name:
            best = explicit.get(c.extended_resource_name)
            if best is None or (c.created, _reverse(c.name)) > (best.created, _reverse(best.name)):
                explicit[c.extended_resource_name] = c
    out.update({name: c.name for name, c in explicit.items()})
    return out


def _reverse(name: str) -> tuple[int, ...]:
    """A key under which a lexicographically smaller name compares greater."""
    return (*(-ord(ch) for ch in name), 0)


@dataclass(frozen=True)
class ContainerAsk:
    """One container (init containers first, as upstream indexes them) that asks for an extended resource."""

    index: int
    name: str
    short_lived: bool  # an init container that is not a sidecar
    requests: tuple[tuple[str, int], ...]  # every request of the container, sorted by name


def container_asks(pod: Pod) -> tuple[ContainerAsk, ...]:
    out = []
    for i, c in enumerate(pod.all_containers()):
        if any(is_dra_extended(n) and v for n, v in c.requests.items()):
            short = i < len(pod.init_containers) and not c.is_sidecar
            out.append(ContainerAsk(i, c.name, short, tuple(sorted(c.requests.items()))))
    return tuple(out)


@dataclass(frozen=True)
class DeviceAsk:
    """One device request of the special claim."""

    name: str
    device_class_name: str
    count: int


@dataclass(frozen=True)
class RequestMapping:
    """pod.status.extendedResourceClaimStatus.requestMappings[]"""

    container_name: str
    resource_name: str
    request_name: str

    def json(self) -> dict[str, str]:
        return {"containerName": self.container_name, "resourceName": self.resource_name,
                "requestName": self.request_name}


@dataclass(frozen=True)
class ExtendedPlan:
    """A pod's extended resource requests that some DeviceClass can serve."""

    resources: Mapping[str, str]  # resource name (requested, non-zero) -> DeviceClass name
    asks: tuple[ContainerAsk, ...]

    @property
    def key(self) -> tuple[object, ...]:
        return (tuple(sorted(self.resources.items())), self.asks)

    def backed_on(self, allocatable: Mapping[str, int]) -> frozenset[str]:
        """The resources a node must provide through DRA: mapped to a class, none advertised."""
        return frozenset(r for r in self.resources if not allocatable.get(r, 0))

    def requests_and_mappings(self, backed: Iterable[str]) -> tuple[tuple[DeviceAsk, ...], tuple[RequestMapping, ...]]:
        """createRequestsAndMappings for the resources served by DRA on the chosen node."""
        asks: list[DeviceAsk] = []
        mappings: list[RequestMapping] = []
        for resource in sorted(backed):
            cls = self.resources[resource]
            long_lived: dict[int, DeviceAsk] = {}
            long_maps: list[RequestMapping] = []
            for a in self.asks:
                if not a.short_lived:
                    req, maps = _ask(a, resource, cls, ())
                    if req is not None:
                        long_lived[a.index] = req
                    long_maps.extend(maps)
            short_max: DeviceAsk | None = None
            short_names: set[str] = set()
            short_maps: list[RequestMapping] = []
            for a in self.asks:
                if a.short_lived:
                    later = [long_lived[i] for i in sorted(long_lived) if i >= a.index]
                    req, maps = _ask(a, resource, cls, later)
                    if req is not None:
                        short_names.add(req.name)
                        if short_max is None or short_max.count < req.count:
                            short_max = req
                    short_maps.extend(maps)
            if short_max is not None:
                if len(short_names) > 1:
                    short_maps = [
                        RequestMapping(m.container_name, m.resource_name, short_max.name)
                        if m.request_name in short_names else m for m in short_maps
                    ]
                asks.append(short_max)
            asks.extend(long_lived[i] for i in sorted(long_lived))
            mappings.extend(long_maps)
            mappings.extend(short_maps)
        asks.sort(key=lambda r: r.name)
        return tuple(asks), tuple(mappings)

    def claim_model(self, namespace: str, backed: Iterable[str]) -> model.Claim:
        asks, _ = self.requests_and_mappings(backed)
        return model.Claim(namespace, IN_MEMORY_NAME, "", tuple(
            model.Request(a.name, a.device_class_name, (), model.EXACT_COUNT, a.count) for a in asks))


def _ask(
    ask: ContainerAsk, resource: str, cls: str, reusable: Sequence[DeviceAsk]
) -> tuple[DeviceAsk | None, list[RequestMapping]]:
    """createResourceRequestAndMappings: a request for what `reusable` does not cover already."""
    requests = dict(ask.requests)
    want = requests.get(resource, 0)
    if not want:
        return None, []
    maps: list[RequestMapping] = []
    covered = 0
    for r in reusable:
        covered += r.count
        maps.append(RequestMapping(ask.name, resource, r.name))
        if covered >= want:
            return None, maps
    index = [name for name, _ in ask.requests].index(resource)
    req = DeviceAsk(f"container-{ask.index}-request-{index}", cls, want - covered)
    maps.append(RequestMapping(ask.name, resource, req.name))
    return req, maps


def plan_for(asks: Sequence[ContainerAsk], mapping: Mapping[str, str]) -> ExtendedPlan | None:
    """The pod's DRA-servable extended resources, or None when it has none."""
    resources: dict[str, str] = {}
    for a in asks:
        for name, value in a.requests:
            if value and is_dra_extended(name) and name in mapping:
                resources[name] = mapping[name]
    return ExtendedPlan(resources, tuple(asks)) if resources else None


def claim_document(pod: Mapping[str, object], asks: Sequence[DeviceAsk]) -> dict[str, object]:
    """The special ResourceClaim for `pod` (a v1 Pod dict), before allocation."""
    md = pod["metadata"]
    assert isinstance(md, Mapping)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "generateName": f"{md['name']}{GENERATE_NAME_SUFFIX}",
            "namespace": md.get("namespace") or "default",
            "annotations": {CLAIM_ANNOTATION: "true"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": md["name"], "uid": md["uid"],
                                 "controller": True}],
        },
        "spec": {"devices": {"requests": [
            {"name": a.name, "exactly": {"deviceClassName": a.device_class_name, "allocationMode": model.EXACT_COUNT,
                                         "count": a.count}}
            for a in asks
        ]}},
    }


def is_extended_claim_of(claim: Mapping[str, object], pod_uid: str) -> bool:
    """The claim the scheduler made for this pod's extended resources."""
    md = claim.get("metadata")
    if not isinstance(md, Mapping) or (md.get("annotations") or {}).get(CLAIM_ANNOTATION) != "true":
        return False
    return any(r.get("controller") and r.get("uid") == pod_uid for r in md.get("ownerReferences") or ())
