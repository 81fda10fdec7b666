"""The admin API's rules for this node: descriptions, the node's own view, device health.

Objects are read and written through the Kubernetes API; this backend answers what only the
node knows. `describe pod` adds what each container holds from device plugins (device ids and
the plugin's Allocate answer) and the pod's prepared DRA claims; `describe node` adds the
device plugins' devices by health; other kinds are described from the store. `apply` stays as
the daemon's own way in for the example manifests it applies at start (wiring/examples.py): a
multi-document manifest is parsed and validated completely before any object is applied, so a
bad document in a batch changes nothing; errors name the document and the field path as the
API server does (`The Pod "x" is invalid: ...`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import yaml

from nodeagent.admin.describe import (
    describe_device_allocations,
    describe_object,
    device_plugin_lines,
    insert_before_events,
)
from nodeagent.apiserver import conversion
from nodeagent.config.declared_features import declared_features, gate_on
from nodeagent.devices.model import ResourceAllocation, ResourceSummary
from nodeagent.errors import FailedPrecondition, ValidationError
from nodeagent.host.model import SystemInfo
from nodeagent.nodesync.loop import NodeSync
from nodeagent.objects import yaml_budget
from nodeagent.objects.pod.manifest import pod_from_manifest, rfc3339
from nodeagent.objects.pod.model import Pod
from nodeagent.objects.pod.status_resources import host_ips
from nodeagent.objects.resource.validation import GATE_CONTROL_PLANE_CONTROLLER
from nodeagent.objects.resource.validation import validate as validate_resource
from nodeagent.pods.describe import describe_pod, tabwrite
from nodeagent.pods.events import Event, EventRecorder
from nodeagent.pods.manager import UPDATE_FORBIDDEN, PodManager
from nodeagent.pods.ports import NodeResources
from nodeagent.store import KindInfo, ObjectStore, builtin_kinds, clone
from nodeagent.util import quantity
from nodeagent.util.clock import Clock


@dataclass(frozen=True)
class Applied:
    """One object of an applied manifest, for the daemon's log."""

    kind: str
    namespace: str
    name: str
    action: str  # created | configured | unchanged


class Devices(Protocol):
    """What the admin API needs from the device manager: one operation and two views."""

    async def set_device_health(self, resource: str, device_id: str, health: str) -> None: ...

    def pod_allocations(self, pod_uid: str) -> Mapping[str, Mapping[str, ResourceAllocation]]: ...

    def snapshot(self) -> Sequence[ResourceSummary]: ...


def parse_manifest(text: str) -> list[Mapping[str, Any]]:
    """YAML (multi-document) or JSON text -> documents; a v1 List is flattened."""
    try:
        docs = [d for d in yaml_budget.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:  # YAMLBudgetError included: alias and depth bounds, as the API server's
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
    """AdminBackend: descriptions from the object store with this node's view of its pods merged in."""

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
        store: ObjectStore | None = None,
        sync: NodeSync | None = None,
        claims_describe: Callable[[Pod], list[str]] | None = None,
        pod_facts: Callable[[Pod], list[str]] | None = None,
        gates: Mapping[str, bool] | None = None,
        addresses: Sequence[Mapping[str, str]] = (),
        system: SystemInfo | None = None,
        kubelet_version: str = "",
        controller_attach_detach: bool = True,
    ) -> None:
        self._node_name = node_name
        # nodeInfo's machine identity (HostFacts.system) and version: the emulated release's, as a
        # kubelet of that release writes it (config.versions.release_version), since clients parse it
        self._system = system or SystemInfo()
        self._kubelet_version = kubelet_version
        # enableControllerAttachDetach: the kubelet then annotates its Node so the attach/detach
        # controller (not the kubelet) attaches its volumes
        self._controller_attach_detach = controller_attach_detach
        # Node.status.addresses (host/address.py: InternalIP then Hostname); () = the Hostname alone
        self._addresses = [dict(a) for a in addresses] or [{"type": "Hostname", "address": node_name}]
        self._node_ips = host_ips(self._addresses)
        self._labels = dict(labels)
        self._pods = pods
        self._recorder = recorder
        self._resources = resources
        self._conditions = conditions
        self._devices = devices
        self._clock = clock
        self._started = clock.now()
        # capacity and allocatable as last formatted (node() runs on every node sync pass, twice a
        # second on each of a thousand virtual nodes, and they rarely change)
        self._formats: dict[str, tuple[dict[str, int], dict[str, str]]] = {}
        self._store = store
        self._sync = sync
        self._claims_describe = claims_describe  # the DRA manager's prepared claims, CDI ids, health
        self._pod_facts = pod_facts  # the container manager's cgroup path and exclusive CPUs
        self._gates = dict(gates or {})
        minor = _release_minor(kubelet_version)
        # Node.status.declaredFeatures and nodeInfo.runningInUserNamespace: what a kubelet of the
        # emulated release writes under these gates (fixed while the daemon runs, as the kubelet's)
        self._declared_features = declared_features(minor, self._gates)
        self._in_user_namespace = gate_on(IN_USER_NAMESPACE_GATE, minor, self._gates)
        # The kubelet endpoint's bound port (status.daemonEndpoints.kubeletEndpoint.Port); None: no endpoint
        self.kubelet_port: Callable[[], int] | None = None

    def attach(self, store: ObjectStore | None, sync: NodeSync) -> None:
        """The store (None for a node that joined a cluster) and the node sync are built after the
        backend's node view; join them here."""
        self._store, self._sync = store, sync

    @property
    def store(self) -> ObjectStore:
        if self._store is None:
            if self._sync is not None:
                raise FailedPrecondition(f"this node has no object store: it joined the cluster at "
                                         f"{self._sync.api.description}; use kubectl with that cluster")
            raise FailedPrecondition("the object store is not running yet")
        return self._store

    def _info(self, kind: str) -> KindInfo:
        # a node that joined a cluster has no store, but knows the built-in kinds' names all the same
        kinds = self._store.kinds if self._store is not None else builtin_kinds()
        info = kinds.lookup(kind)
        if info is None:
            raise ValidationError("kind", f'the server doesn\'t have a resource type "{kind}"')
        return info

    async def apply(self, manifest: str, default_namespace: str) -> Sequence[Applied]:
        docs = parse_manifest(manifest)
        prepared: list[dict[str, Any]] = []
        for i, doc in enumerate(docs):
            kind, api = doc.get("kind"), doc.get("apiVersion")
            if kind in conversion.CLASSIC_KINDS and api == conversion.RESOURCE_V1ALPHA3 \
                    and self._gates.get(GATE_CONTROL_PLANE_CONTROLLER):
                # classic DRA's claims as 1.31 wrote them, served (and stored) as the API server does
                doc = conversion.to_storage(doc)
                api = doc["apiVersion"]
            info = self.store.kinds.get(str(kind)) if kind in self.store.kinds else None
            if info is None or api not in info.api_versions:
                raise ValidationError(
                    f"document {i}", f'no matches for kind "{kind}" in version "{api}"'
                )
            obj = clone(doc)
            meta = obj.setdefault("metadata", {})
            if info.namespaced and not meta.get("namespace"):
                meta["namespace"] = default_namespace
            if kind == "Pod":
                obj = self._prepare_pod(obj, default_namespace)
            elif kind == "ResourceClaim":
                self._check_claim_quota(obj, prepared)
            prepared.append(obj)
        applied: list[Applied] = []
        unscheduled: list[tuple[str, str]] = []
        with self.store.transaction() as tx:
            for obj in prepared:
                result = tx.apply(obj)
                meta = result.object["metadata"]
                applied.append(Applied(str(result.object["kind"]), meta.get("namespace", ""), meta["name"],
                                       result.action))
                if result.object["kind"] == "Pod" and not (result.object.get("spec") or {}).get("nodeName"):
                    unscheduled.append((meta.get("namespace", ""), meta["name"]))
        await self._await_scheduling(unscheduled)
        if self._sync is not None:
            await self._sync.flush()
        return applied

    async def _await_scheduling(self, pods: Sequence[tuple[str, str]], timeout: float = 5.0) -> None:
        """Give the scheduler a moment, so `apply` answers after new pods are bound (and the
        node has run them) or found unschedulable; a pod still undecided after `timeout` (e.g.
        waiting for a classic DRA driver) is left to the control plane."""
        deadline = self._clock.monotonic() + timeout
        for namespace, name in pods:
            while self._clock.monotonic() < deadline:
                obj = self.store.peek("Pod", namespace, name)
                if obj is None or (obj.get("spec") or {}).get("nodeName") or _unschedulable(obj):
                    break
                if self._sync is not None:
                    await self._sync.flush()  # without a scheduler the node binds it here
                await asyncio.sleep(0.01)

    def _check_claim_quota(self, obj: Mapping[str, Any], batch: Sequence[Mapping[str, Any]]) -> None:
        """ResourceQuota for claims users create themselves (the claim controller checks the ones
        it generates): every subrequest of a firstAvailable list is charged, as KEP-4816 asks."""
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        quotas = self.store.scan("ResourceQuota", namespace)
        if not quotas or self.store.peek("ResourceClaim", namespace, name) is not None:
            return
        # imported with the first quota to check: the quota check and the claim views it reads are no part
        # of a restart to ready (issue 25)
        from nodeagent.controlplane import quota

        normalised = validate_resource("ResourceClaim", obj, gates=self._gates)
        earlier = [o for o in batch if o.get("kind") == "ResourceClaim"
                   and ((o.get("metadata") or {}).get("namespace") or "default") == namespace]
        used = quota.usage_of([*self.store.scan("ResourceClaim", namespace),
                               *(validate_resource("ResourceClaim", o, gates=self._gates) for o in earlier)])
        refused = quota.check(quota.claim_charge(normalised), used, quotas)
        if refused:
            raise ValidationError("", f'resourceclaims.resource.k8s.io "{name}" is forbidden: {refused}')

    def _prepare_pod(self, obj: dict[str, Any], default_namespace: str) -> dict[str, Any]:
        """Validate with the pod parser's field paths; pods are immutable but for labels/annotations/images."""
        meta = obj["metadata"]
        name = meta.get("name") or meta.get("generateName", "")
        try:
            pod_from_manifest(obj, default_namespace=default_namespace, clock=self._clock)
        except ValidationError as err:
            raise ValidationError("", f'The Pod "{name}" is invalid: {err}') from None
        current = self.store.peek("Pod", meta.get("namespace", default_namespace), meta.get("name", ""))
        if current is None:
            return obj
        old_spec = dict(current.get("spec") or {})
        new_spec = dict(obj.get("spec") or {})
        if old_spec.get("nodeName") and not new_spec.get("nodeName"):
            new_spec["nodeName"] = old_spec["nodeName"]  # bound by the scheduler: keep the binding
            obj["spec"] = new_spec
        if _without_images(old_spec) != _without_images(new_spec):
            raise ValidationError("", f'The Pod "{name}" is invalid: spec: Forbidden: {UPDATE_FORBIDDEN}')
        return obj

    def describe(self, kind: str, namespace: str, name: str) -> str:
        """This node itself and its own pods are described from what the node holds, so a node
        process (one that joined a cluster: no object store) describes them too; anything else
        comes from the store (on such a node: FailedPrecondition, use kubectl with the cluster)."""
        info = self._info(kind)
        if info.kind == "Node" and name in ("", self._node_name):
            return self._describe_node()
        if info.kind == "Pod":
            local = self._pods.get_pod(namespace, name)
            if local is not None:
                view = self._pods.get(namespace, name)
                text = describe_pod(view.pod, view.status, self._recorder.for_pod(view.pod), now=self._clock.now())
                text = insert_before_events(
                    text, describe_device_allocations(self._devices.pod_allocations(view.pod.uid))
                )
                for title, lines in (
                    ("Node-local:", self._pod_facts(view.pod) if self._pod_facts is not None else []),
                    ("Resource Claims:", self._claims_describe(view.pod) if self._claims_describe is not None else []),
                ):
                    if lines:
                        block = "".join(f"{line}\n" for line in [title, *("  " + c for c in lines)])
                        text = insert_before_events(text, block)
                return text
        obj = self.store.get(info.kind, namespace if info.namespaced else "", name)
        return describe_object(obj, self._stored_events(info.kind, obj), now=self._clock.now())

    def _stored_events(self, kind: str, obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        meta = obj.get("metadata") or {}
        out: list[Mapping[str, Any]] = []
        for stored in self.store.scan("Event", None):
            inv = stored.get("involvedObject") or {}
            if inv.get("kind") == kind and inv.get("name") == meta.get("name") \
                    and (inv.get("namespace") or "") == (meta.get("namespace") or ""):
                out.append(stored)
        if not self._recorder.posted:
            for e in self._recorder.for_object(kind, str(meta.get("namespace") or ""), str(meta.get("name") or "")):
                out.append(self._event_json(e))
        return out

    def node_inputs(self) -> object:
        """What node() is computed from besides constants (resources, conditions): equal inputs,
        equal Node object (the node sync's idle ticks compare these instead of building it)."""
        port = self.kubelet_port() if self.kubelet_port is not None else 0
        return (self._resources(), tuple(self._conditions()), port)

    def node(self) -> Mapping[str, Any]:
        res = self._resources()
        pressure = set(self._conditions())
        now = rfc3339(self._started)  # transition time; no heartbeat, so status changes only when it means it
        conditions = [
            {
                "type": t,
                "status": "True" if t in pressure else "False",
                "reason": on[0] if t in pressure else off[0],
                "message": on[1] if t in pressure else off[1],
                "lastTransitionTime": now,
            }
            for t, on, off in _PRESSURE_CONDITIONS
        ]
        conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady",
                           "message": "kubelet is posting ready status", "lastTransitionTime": now})
        arch = self._system.architecture
        # initialNode's labels: hostname, os and arch (stable and beta); the profile's labels after them
        labels = {"kubernetes.io/hostname": self._node_name, "kubernetes.io/os": "linux",
                  "beta.kubernetes.io/os": "linux"}
        if arch:
            labels |= {"kubernetes.io/arch": arch, "beta.kubernetes.io/arch": arch}
        meta: dict[str, Any] = {"name": self._node_name, "labels": {**labels, **self._labels},
                                "creationTimestamp": rfc3339(self._started)}
        if self._controller_attach_detach:
            meta["annotations"] = {CONTROLLER_MANAGED_ATTACH: "true"}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": meta,
            "spec": {},
            "status": {
                "capacity": self._formatted("capacity", res.capacity),
                "allocatable": self._formatted("allocatable", res.allocatable),
                "conditions": conditions,
                "addresses": [dict(a) for a in self._addresses],
                **self._daemon_endpoints(),
                "nodeInfo": {
                    "machineID": self._system.machine_id,
                    "systemUUID": self._system.system_uuid,
                    "bootID": self._system.boot_id,
                    "kernelVersion": self._system.kernel_version,
                    "osImage": self._system.os_image,
                    # kubeProxyVersion: "" (DisableNodeKubeProxyVersion, locked on since 1.36), so omitted
                    "kubeletVersion": self._kubelet_version,
                    "operatingSystem": "linux",
                    "architecture": arch,
                    **({"runningInUserNamespace": self._system.running_in_user_namespace}
                       if self._in_user_namespace else {}),
                },
                **({"declaredFeatures": list(self._declared_features)} if self._declared_features else {}),
            },
        }

    def node_ips(self) -> tuple[str, ...]:
        """The node's host IPs (GetNodeHostIPs of its addresses): its pods' hostIP/hostIPs."""
        return self._node_ips

    def _daemon_endpoints(self) -> dict[str, Any]:
        port = self.kubelet_port() if self.kubelet_port is not None else 0
        return {"daemonEndpoints": {"kubeletEndpoint": {"Port": port}}} if port else {}

    def _formatted(self, which: str, values: Mapping[str, int]) -> dict[str, str]:
        """_formatted(values), reusing the last answer for `which` when the values are the same."""
        last = self._formats.get(which)
        if last is None or last[0] != values:
            last = self._formats[which] = (dict(values), _formatted(values))
        return dict(last[1])  # the caller's own copy

    async def set_device_health(self, resource: str, device: str, health: str) -> None:
        if health not in ("Healthy", "Unhealthy"):
            raise ValidationError("health", f'must be "Healthy" or "Unhealthy", got "{health}"')
        await self._devices.set_device_health(resource, device, health)

    def _event_json(self, e: Event) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{e.involved.name}.{int(e.first_timestamp * 1e6):x}",
                         "namespace": e.involved.namespace or "default",
                         "creationTimestamp": rfc3339(e.first_timestamp)},
            "involvedObject": {"kind": e.involved.kind, "name": e.involved.name,
                               "namespace": e.involved.namespace, "uid": e.involved.uid,
                               **({"fieldPath": e.involved.field_path} if e.involved.field_path else {})},
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
        lines += device_plugin_lines(self._devices.snapshot())
        lines.append(f"Non-terminated Pods:\t({len(active)} in total)")
        lines.append("Allocated resources:")
        lines.append("  Resource\tRequests")
        lines += [f"  {r}\t{quantity.format_canonical(r, v)}" for r, v in sorted(requested.items())]
        return tabwrite(lines)


CONTROLLER_MANAGED_ATTACH = "volumes.kubernetes.io/controller-managed-attach-detach"
# The pressure conditions with the kubelet's (reason, message) when under pressure and when not
# (nodestatus.MemoryPressureCondition, DiskPressureCondition, PIDPressureCondition).
_PRESSURE_CONDITIONS = (
    ("MemoryPressure", ("KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
     ("KubeletHasSufficientMemory", "kubelet has sufficient memory available")),
    ("DiskPressure", ("KubeletHasDiskPressure", "kubelet has disk pressure"),
     ("KubeletHasNoDiskPressure", "kubelet has no disk pressure")),
    ("PIDPressure", ("KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
     ("KubeletHasSufficientPID", "kubelet has sufficient PID available")),
)


def _unschedulable(obj: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def _without_images(spec: Mapping[str, Any]) -> Any:
    """A pod spec without what may change on update (container images)."""
    out = dict(spec)
    for key in ("containers", "initContainers"):
        out[key] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get(key) or [] if isinstance(c, dict)]
    return out


def _formatted(values: Mapping[str, int]) -> dict[str, str]:
    """Node capacity/allocatable texts as the kubelet's Quantities print them, each in the
    Format the kubelet builds it with (cadvisor.CapacityFromMachineInfo and
    EphemeralStorageCapacityFromFsInfo; allocatable is capacity.Sub(reservation), which keeps
    capacity's Format): cpu a DecimalSI milli-quantity, memory and hugepages BinarySI,
    ephemeral-storage, pods and device-plugin resources DecimalSI (so ephemeral-storage is
    bytes, or a k/M/G... suffix when a power of 1000 divides it, never Ki)."""
    return {r: node_quantity(r, v) for r, v in sorted(values.items())}


def node_quantity(resource: str, value: int) -> str:
    """One Node capacity or allocatable value (canonical units: millicpu, bytes, counts) as text."""
    if resource == "cpu":
        if value % 1000 == 0:
            return quantity.quantity_string(value // 1000, quantity.DECIMAL_SI)
        return quantity.format_canonical(resource, value)  # "7500m": the DecimalSI milli form
    if resource == "memory" or resource.startswith("hugepages-"):
        return quantity.quantity_string(value, quantity.BINARY_SI)
    return quantity.quantity_string(value, quantity.DECIMAL_SI)


IN_USER_NAMESPACE_GATE = "KubeletInUserNamespace"
"""The gate under which the kubelet writes nodeInfo.runningInUserNamespace (beta, on in 1.37)."""


def _release_minor(version: str) -> int:
    """37 of "v1.37.2"; the newest release nodeagent emulates when the version says nothing."""
    parts = version.lstrip("v").split(".")
    try:
        return int(parts[1])
    except (IndexError, ValueError):
        return 37
