"""The admin API's rules for this node: manifests in, Kubernetes-shaped JSON out.

Kinds known so far: Pod (create, update, get, describe, delete) and Node (get,
describe). `describe pod` adds what each container holds from device plugins (device
ids and the plugin's Allocate answer); `describe node` adds the device plugins'
devices by health. A multi-document manifest is parsed and validated completely before any
object is applied, so a bad document in a batch changes nothing; errors name the
document and the field path as the API server does (`The Pod "x" is invalid: ...`).
"""

from __future__ import annotations

import json
import platform
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import yaml

from nodeagent import __version__, quantity
from nodeagent.admin.ports import Applied, EventRecord
from nodeagent.clock import Clock
from nodeagent.devices.model import ResourceAllocation, ResourceSummary
from nodeagent.errors import NotFound, ValidationError
from nodeagent.objects.pod import Pod
from nodeagent.objects.pod_manifest import pod_from_manifest, pod_to_manifest, rfc3339
from nodeagent.pods.describe import describe_pod, tabwrite
from nodeagent.pods.events import Event, EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.pods.ports import NodeResources

POD_NAMES = frozenset({"pod", "pods", "po"})
NODE_NAMES = frozenset({"node", "nodes", "no"})
EVENT_NAMES = frozenset({"event", "events", "ev"})


class Devices(Protocol):
    """What the admin API needs from the device manager: one operation and two views."""

    async def set_device_health(self, resource: str, device_id: str, health: str) -> None: ...

    def pod_allocations(self, pod_uid: str) -> Mapping[str, Mapping[str, ResourceAllocation]]: ...

    def snapshot(self) -> Sequence[ResourceSummary]: ...


def _kind(kind: str) -> str:
    k = kind.lower()
    if k in POD_NAMES:
        return "Pod"
    if k in NODE_NAMES:
        return "Node"
    if k in EVENT_NAMES:
        return "Event"
    raise ValidationError("kind", f'the server doesn\'t have a resource type "{kind}"')


def parse_manifest(text: str) -> list[Mapping[str, Any]]:
    """YAML (multi-document) or JSON text -> documents; a v1 List is flattened."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise ValidationError("", f"error parsing manifest: {err}") from None
    out: list[Mapping[str, Any]] = []
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise ValidationError(f"document {i}", "expected an object")
        if doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            out.extend(d for d in doc["items"] if isinstance(d, dict))
        else:
            out.append(doc)
    return out


class NodeBackend:
    """AdminBackend for one node: pods through the pod manager, the node from the managers."""

    def __init__(
        self,
        *,
        node_name: str,
        labels: Mapping[str, str],
        pods: PodManager,
        recorder: EventRecorder,
        resources: Callable[[], NodeResources],
        conditions: Callable[[], Sequence[str]],
        devices: Devices,
        clock: Clock,
    ) -> None:
        self._node_name = node_name
        self._labels = dict(labels)
        self._pods = pods
        self._recorder = recorder
        self._resources = resources
        self._conditions = conditions
        self._devices = devices
        self._clock = clock
        self._started = clock.now()

    async def apply(self, manifest: str, default_namespace: str) -> Sequence[Applied]:
        parsed: list[Pod] = []
        for i, doc in enumerate(parse_manifest(manifest)):
            kind = doc.get("kind")
            api = doc.get("apiVersion")
            if kind != "Pod" or api != "v1":
                raise ValidationError(
                    f"document {i}", f'no matches for kind "{kind}" in version "{api}" (this node accepts v1 Pod)'
                )
            meta = doc.get("metadata")
            name = meta.get("name", "") if isinstance(meta, dict) else ""
            try:
                parsed.append(pod_from_manifest(doc, default_namespace=default_namespace, clock=self._clock))
            except ValidationError as err:
                raise ValidationError("", f'The Pod "{name}" is invalid: {err}') from None
        applied = []
        for pod in parsed:
            stored, action = await self._pods.apply(pod)
            applied.append(Applied("Pod", stored.namespace, stored.name, action))
        return applied

    def get(self, kind: str, namespace: str, name: str, all_namespaces: bool) -> Sequence[Mapping[str, Any]]:
        k = _kind(kind)
        if k == "Node":
            if name and name != self._node_name:
                raise NotFound(f'nodes "{name}" not found')
            return [self.node()]
        if k == "Event":
            return [self._event_json(e) for e in self._recorder.events()
                    if all_namespaces or e.involved.namespace in ("", namespace)]
        if name:
            view = self._pods.get(namespace, name)
            return [pod_to_manifest(view.pod, view.status)]
        views = self._pods.list(None if all_namespaces else namespace)
        return [pod_to_manifest(v.pod, v.status) for v in views]

    async def delete(self, kind: str, namespace: str, name: str) -> None:
        if _kind(kind) != "Pod":
            raise ValidationError("kind", f"deleting {kind} is not supported on a node")
        await self._pods.delete(namespace, name)

    def describe(self, kind: str, namespace: str, name: str) -> str:
        k = _kind(kind)
        if k == "Node":
            if name and name != self._node_name:
                raise NotFound(f'nodes "{name}" not found')
            return self._describe_node()
        if k != "Pod":
            raise ValidationError("kind", f"describe {kind} is not supported")
        view = self._pods.get(namespace, name)
        text = describe_pod(view.pod, view.status, self._recorder.for_pod(view.pod), now=self._clock.now())
        return _insert_before_events(text, describe_device_allocations(self._devices.pod_allocations(view.pod.uid)))

    def node(self) -> Mapping[str, Any]:
        res = self._resources()
        pressure = set(self._conditions())
        now = rfc3339(self._clock.now())
        conditions = [
            {
                "type": t,
                "status": "True" if t in pressure else "False",
                "reason": f"KubeletHas{'Insufficient' if t in pressure else 'Sufficient'}{label}",
                "lastHeartbeatTime": now,
            }
            for t, label in (("MemoryPressure", "Memory"), ("DiskPressure", "Disk"), ("PIDPressure", "PID"))
        ]
        conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady",
                           "message": "nodeagent is posting ready status", "lastHeartbeatTime": now})
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self._node_name,
                "labels": {"kubernetes.io/hostname": self._node_name, "kubernetes.io/os": "linux", **self._labels},
                "creationTimestamp": rfc3339(self._started),
            },
            "spec": {},
            "status": {
                "capacity": _formatted(res.capacity),
                "allocatable": _formatted(res.allocatable),
                "conditions": conditions,
                "nodeInfo": {
                    "kubeletVersion": f"nodeagent-{__version__}",
                    "operatingSystem": "linux",
                    "architecture": platform.machine(),
                    "kernelVersion": platform.release(),
                },
            },
        }

    async def set_device_health(self, resource: str, device: str, health: str) -> None:
        if health not in ("Healthy", "Unhealthy"):
            raise ValidationError("health", f'must be "Healthy" or "Unhealthy", got "{health}"')
        await self._devices.set_device_health(resource, device, health)

    def events(self, namespace: str, involved: str) -> Sequence[EventRecord]:
        out = []
        for e in self._recorder.events():
            if namespace and e.involved.namespace not in ("", namespace):
                continue
            if involved and involved not in (f"{e.involved.kind}/{e.involved.name}".lower(), e.involved.name):
                continue
            out.append(EventRecord(e.type, e.reason, e.message, e.involved.kind, e.involved.namespace,
                                   e.involved.name, e.last_timestamp, e.count))
        return out

    def _event_json(self, e: Event) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{e.involved.name}.{int(e.first_timestamp * 1e6):x}",
                         "namespace": e.involved.namespace or "default",
                         "creationTimestamp": rfc3339(e.first_timestamp)},
            "involvedObject": {"kind": e.involved.kind, "name": e.involved.name,
                               "namespace": e.involved.namespace, "uid": e.involved.uid},
            "type": e.type, "reason": e.reason, "message": e.message, "count": e.count,
            "firstTimestamp": rfc3339(e.first_timestamp), "lastTimestamp": rfc3339(e.last_timestamp),
            "source": {"component": e.source, "host": e.host},
        }

    def _describe_node(self) -> str:
        node = self.node()
        status = node["status"]
        requested: dict[str, int] = {}
        active = self._pods.active_pods()
        for pod in active:
            for c in pod.containers:
                for r, v in c.requests.items():
                    requested[r] = requested.get(r, 0) + v
        lines = [f"Name:\t{self._node_name}", "Labels:\t" + json.dumps(node["metadata"]["labels"]),
                 "Conditions:", "  Type\tStatus\tReason"]
        lines += [f"  {c['type']}\t{c['status']}\t{c['reason']}" for c in status["conditions"]]
        lines.append("Capacity:")
        lines += [f"  {r}:\t{v}" for r, v in sorted(status["capacity"].items())]
        lines.append("Allocatable:")
        lines += [f"  {r}:\t{v}" for r, v in sorted(status["allocatable"].items())]
        lines += _device_plugin_lines(self._devices.snapshot())
        lines.append(f"Non-terminated Pods:\t({len(active)} in total)")
        lines.append("Allocated resources:")
        lines.append("  Resource\tRequests")
        lines += [f"  {r}\t{quantity.format_canonical(r, v)}" for r, v in sorted(requested.items())]
        return tabwrite(lines)


def describe_device_allocations(allocations: Mapping[str, Mapping[str, ResourceAllocation]]) -> str:
    """The "Device Allocations:" block of `describe pod`: per container and resource, the device
    ids and what the plugin's Allocate returned (envs, mounts, device specs, annotations, CDI
    devices). Empty text when the pod holds no device."""
    if not any(allocations.values()):
        return ""
    lines = ["Device Allocations:"]
    for container in sorted(allocations):
        per_resource = allocations[container]
        if not per_resource:
            continue
        lines.append(f"  {container}:")
        for resource in sorted(per_resource):
            alloc = per_resource[resource]
            resp = alloc.response
            p = "      "
            lines.append(f"    {resource}:")
            lines.append(f"{p}Devices:\t{', '.join(alloc.device_ids)}")
            numa = [f"{i}={','.join(str(n) for n in alloc.numa[i])}" for i in alloc.device_ids if alloc.numa.get(i)]
            if numa:
                lines.append(f"{p}NUMA Nodes:\t{' '.join(numa)}")
            lines += _block(f"{p}Environment", [f"{k}:\t{resp.envs[k]}" for k in sorted(resp.envs)])
            lines += _block(f"{p}Mounts", [
                f"{m.container_path} from {m.host_path} ({'ro' if m.read_only else 'rw'})" for m in resp.mounts
            ])
            lines += _block(f"{p}Device Specs", [
                f"{d.container_path} -> {d.host_path}" + (f" ({d.permissions})" if d.permissions else "")
                for d in resp.devices
            ])
            lines += _block(f"{p}Annotations", [f"{k}:\t{resp.annotations[k]}" for k in sorted(resp.annotations)])
            lines += _block(f"{p}CDI Devices", list(resp.cdi_devices))
    return tabwrite(lines)


def _block(title: str, items: list[str]) -> list[str]:
    if not items:
        return [f"{title}:\t<none>"]
    indent = " " * (len(title) - len(title.lstrip()) + 2)
    return [f"{title}:", *(indent + item for item in items)]


def _insert_before_events(text: str, block: str) -> str:
    if not block:
        return text
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("Events:"):
            return "".join(lines[:i]) + block + "".join(lines[i:])
    return text + block


def _device_plugin_lines(summaries: Sequence[ResourceSummary]) -> list[str]:
    if not summaries:
        return []
    lines = ["Device Plugins:", "  Resource\tRegistered\tHealthy\tUnhealthy\tAllocated\tEndpoint"]
    lines += [
        f"  {s.resource}\t{'True' if s.registered else 'False'}\t{s.healthy}\t{s.unhealthy}\t{s.allocated}\t"
        f"{s.endpoint or '<none>'}"
        for s in summaries
    ]
    return lines


def _formatted(values: Mapping[str, int]) -> dict[str, str]:
    out = {}
    for r, v in sorted(values.items()):
        if r == "cpu" or r.startswith(("memory", "hugepages-", "ephemeral-storage")):
            out[r] = quantity.format_canonical(r, v)
        else:
            out[r] = str(v)
    return out
