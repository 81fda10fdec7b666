"""The resources a pod's status reports (InPlacePodVerticalScaling, GA): what the kubelet writes
in status.resources / status.allocatedResources and in each container status's resources /
allocatedResources, derived from the pod's spec.

Why derived here, at output: nothing of it is node state. The kubelet's convertToAPIContainerStatuses
gives each container the resources of its spec (claims included; allocatedResources: its requests),
and generateAPIPodStatus the pod's effective requests and limits (getEffectiveAllocatedResources,
resourcehelper.PodRequests/PodLimits). A running container's or pod's values are then read back from
its cgroups; no cgroup is actuated here, so the allocated values stand (the cgroups would hold
exactly them, except where the kubelet itself rounds: see the kubelet tier's register). Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.objects.pod.model import Pod
from nodeagent.util import quantity

_REQUIREMENTS = ("limits", "requests", "claims")
GATE_CONTAINER_RESOURCES = "InPlacePodVerticalScaling"  # convertToAPIContainerStatuses' resources
GATE_POD_RESOURCES = "InPlacePodLevelResourcesVerticalScaling"  # generateAPIPodStatus' pod-level ones


def _spec(pod: Pod) -> Mapping[str, Any]:
    spec = pod.manifest.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _container_docs(pod: Pod) -> Iterable[Mapping[str, Any]]:
    """The manifest's containers, app containers first (resourcehelper's order), then init ones."""
    spec = _spec(pod)
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            if isinstance(c, Mapping):
                yield c


def container_resources(pod: Pod, name: str) -> dict[str, Any]:
    """The container's spec resources (limits, requests, claims) as its status reports them."""
    return _status_resources(_resources_by_name(pod).get(name))


def _resources_by_name(pod: Pod) -> dict[str, Any]:
    """Each container's `resources` by its name (the first container of a name, in _container_docs'
    order), found in one pass: a status of 10,000 containers looked each one up in a scan of them
    all, seconds of the event loop (issue 25)."""
    out: dict[str, Any] = {}
    for c in _container_docs(pod):
        name = c.get("name")
        if isinstance(name, str):
            out.setdefault(name, c.get("resources"))
    return out


def _status_resources(res: Any) -> dict[str, Any]:
    if isinstance(res, Mapping):
        return {k: copy.deepcopy(res[k]) for k in _REQUIREMENTS if res.get(k)}
    return {}


def _texts(pod: Pod, pick: str) -> dict[str, str]:
    """The first quantity text each resource is given in (pod-level spec.resources first): the sum
    keeps the Format of the quantity it started from, as resource.Quantity.Add does."""
    out: dict[str, str] = {}
    sources = [_spec(pod).get("resources"), *(c.get("resources") for c in _container_docs(pod))]
    for res in sources:
        values = res.get(pick) if isinstance(res, Mapping) else None
        if isinstance(values, Mapping):
            for name, text in values.items():
                out.setdefault(str(name), str(text))
    return out


def format_list(values: Mapping[str, int], texts: Mapping[str, str]) -> dict[str, str]:
    """Canonical amounts written back as Quantity.String() in the Format they came with (cpu in
    millicores: '100m', '1')."""
    out: dict[str, str] = {}
    for name, value in sorted(values.items()):
        if name == quantity.CPU:
            out[name] = quantity.format_canonical(name, value)
        else:
            out[name] = quantity.quantity_string(value, quantity.format_of(texts.get(name, "")))
    return out


def pod_resources(pod: Pod, requests: Mapping[str, int], limits: Mapping[str, int]) -> dict[str, Any]:
    """status.resources of a pod: spec.resources with its requests and limits replaced by the pod's
    effective ones (`requests`, `limits`: PodRequests and PodLimits in canonical units)."""
    base = _spec(pod).get("resources")
    out: dict[str, Any] = {k: copy.deepcopy(v) for k, v in base.items() if k == "claims"} \
        if isinstance(base, Mapping) else {}
    if limits:
        out["limits"] = format_list(limits, _texts(pod, "limits"))
    if requests:
        out["requests"] = format_list(requests, _texts(pod, "requests"))
    return out


def pod_allocated(pod: Pod, requests: Mapping[str, int]) -> dict[str, str]:
    """status.allocatedResources of a pod: its effective requests."""
    return format_list(requests, _texts(pod, "requests"))


def host_ips(addresses: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """nodeutil.GetNodeHostIPs: the node's first InternalIP (else ExternalIP), and the first of the
    other IP family after it when the node has one (dual-stack)."""
    ips = [str(a.get("address", "")) for kind in ("InternalIP", "ExternalIP")
           for a in addresses if a.get("type") == kind and a.get("address")]
    if not ips:
        return ()
    first = ips[0]
    other = next((ip for ip in ips[1:] if (":" in ip) != (":" in first)), None)
    return (first,) if other is None else (first, other)


def add_generated(doc: dict[str, Any], pod: Pod, *, requests: Mapping[str, int], limits: Mapping[str, int],
                  node_ips: tuple[str, ...], container_resources: bool = True,
                  pod_level: bool = True) -> dict[str, Any]:
    """What generateAPIPodStatus adds to a status (`doc`, status_to_json's) beyond the pod's own
    state: hostIP/hostIPs (the node's, getHostIPsAnyWay), the pod's and each container's resources
    and allocatedResources. `requests`/`limits`: the pod's effective ones (PodRequests/PodLimits).
    A status with no condition never went through generateAPIPodStatus (a pod rejected at
    admission: rejectPod's status alone) and gets none of it.

    As the kubelet of the node's release writes them: each container's under InPlacePodVerticalScaling
    (`container_resources`; on by default from 1.33), the pod's under
    InPlacePodLevelResourcesVerticalScaling (`pod_level`; from 1.35, on by default from 1.36)."""
    if not doc.get("conditions"):
        return doc
    if node_ips:
        doc["hostIP"] = node_ips[0]
        doc["hostIPs"] = [{"ip": ip} for ip in node_ips]
    if pod_level:
        doc["resources"] = pod_resources(pod, requests, limits)
        allocated = pod_allocated(pod, requests)
        if allocated:
            doc["allocatedResources"] = allocated
    if not container_resources:
        return doc
    by_name = _resources_by_name(pod)
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in doc.get(key) or ():
            if not _created(cs):
                continue  # only a container the runtime has gets them (convertToAPIContainerStatuses)
            res = _status_resources(by_name.get(str(cs.get("name"))))
            cs["resources"] = res
            if res.get("requests"):
                # the container's own requests (no DRA share: claims may be shared unevenly)
                cs["allocatedResources"] = copy.deepcopy(res["requests"])
    return doc


def _created(cs: Mapping[str, Any]) -> bool:
    """A container status of a container that was created: not waiting, and not the
    ContainerStatusUnknown a never-started container of a killed pod ends with."""
    state = cs.get("state") or {}
    if "waiting" in state:
        return False
    return (state.get("terminated") or {}).get("reason") != "ContainerStatusUnknown"
