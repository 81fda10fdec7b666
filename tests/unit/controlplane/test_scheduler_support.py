"""Builders shared by the scheduler, claim controller and virtual node tests (and bench/scheduler.py).

Objects are plain store dicts in the resource.k8s.io/v1 and core/v1 shapes; `Cluster` wraps an
in-memory store with the claim controller and the scheduler driven synchronously until nothing
is left to do, so unit tests need no event loop timing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from nodeagent.controlplane.controllers.claims import ClaimController
from nodeagent.controlplane.controllers.nodelifecycle import NodeLifecycleController
from nodeagent.controlplane.metrics import ControlPlaneMetrics
from nodeagent.controlplane.scheduler import ClassicPort, Scheduler, SchedulerOptions
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import Clock, FakeClock

GPU = "gpu.example.com"
NIC = "nic.example.com"
PCIE = "dra.k8s.io/pcieRoot"
MEM = 'device.capacity["gpu.example.com"].memory'
GATES = {"DRAPrioritizedList": True, "DRAControlPlaneController": True}


def make_store(path: str = ":memory:", clock: Clock | None = None, gates: Mapping[str, bool] = GATES) -> ObjectStore:
    kinds = builtin_kinds().with_hooks(resource.hooks(gates))
    return ObjectStore(path, kinds, clock or FakeClock())


def node(name: str, cpu: str = "4", memory: str = "32Gi", pods: str = "110", *, ready: bool = True,
         labels: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {"capacity": alloc, "allocatable": alloc,
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def device(name: str, attributes: Mapping[str, Any] | None = None,
           capacity: Mapping[str, str] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if attributes:
        d["attributes"] = {k: ({"bool": v} if isinstance(v, bool) else {"int": v} if isinstance(v, int)
                               else {"string": v}) for k, v in attributes.items()}
    if capacity:
        d["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    return d


def resource_slice(node_name: str, driver: str, devices: Sequence[Mapping[str, Any]],
                   name: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node_name}-{driver}"},
        "spec": {"driver": driver, "nodeName": node_name,
                 "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                 "devices": list(devices)},
    }


def device_class(name: str, *selectors: str, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
    if config:
        spec["config"] = [{"opaque": {"driver": GPU, "parameters": dict(config)}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def exact(name: str, cls: str, count: int = 1, selectors: Sequence[str] = ()) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": cls, "count": count}
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": body}


def first_available(name: str, *alternatives: tuple[str, str, int]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": [
        {"name": sub, "deviceClassName": cls, "count": count} for sub, cls, count in alternatives]}


def claim_spec(*requests: Mapping[str, Any], constraints: Sequence[Mapping[str, Any]] = (),
               config: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = list(constraints)
    if config:
        devices["config"] = list(config)
    return {"devices": devices}


def claim(name: str, spec: Mapping[str, Any], namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace}, "spec": dict(spec)}


def template(name: str, spec: Mapping[str, Any], namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"spec": dict(spec)}}


def pod(name: str, *, templates: Mapping[str, str] | None = None, claims: Mapping[str, str] | None = None,
        cpu: str = "", memory: str = "", node_name: str = "", namespace: str = "default",
        requests: Sequence[tuple[str, str]] = (), annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`templates`: pod claim name -> template; `claims`: pod claim name -> ResourceClaim name;
    `requests`: container claim references (pod claim name, request)."""
    res: dict[str, Any] = {}
    reqs = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    if reqs:
        res["requests"] = reqs
    refs = [{"name": pc, **({"request": r} if r else {})} for pc, r in requests]
    if not refs:
        refs = [{"name": pc} for pc in [*(templates or {}), *(claims or {})]]
    if refs:
        res["claims"] = refs
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox", "resources": res}]}
    pod_claims = [{"name": pc, "resourceClaimTemplateName": t} for pc, t in (templates or {}).items()]
    pod_claims += [{"name": pc, "resourceClaimName": c} for pc, c in (claims or {}).items()]
    if pod_claims:
        spec["resourceClaims"] = pod_claims
    if node_name:
        spec["nodeName"] = node_name
    md: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        md["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


class Cluster:
    """Store + claim controller + scheduler, stepped synchronously from a store watch until nothing
    is left to do (no tasks, no timing). Construct inside a running event loop (async tests)."""

    def __init__(self, *, options: SchedulerOptions | None = None, classic: ClassicPort | None = None,
                 gates: Mapping[str, bool] = GATES, store: ObjectStore | None = None,
                 lifecycle: bool = False) -> None:
        """`lifecycle`: the node lifecycle controller too, for Nodes created through the API (their
        not-ready taint from the TaintNodesByCondition admission goes once they are Ready)."""
        self.clock = FakeClock()
        self.store = store or make_store(clock=self.clock, gates=gates)
        self.registry = CollectorRegistry()
        self.metrics = ControlPlaneMetrics(self.registry)
        self.claims = ClaimController(self.store, self.clock, self.metrics)
        self.scheduler = Scheduler(self.store, self.clock, self.metrics,
                                   options or SchedulerOptions(initial_backoff=0.0, max_backoff=0.0),
                                   classic=classic, claim_errors=self.claims.creation_error)
        self.claims.on_error = self.scheduler.retry
        self.lifecycle = NodeLifecycleController(self.store, self.clock, 50.0) if lifecycle else None
        listed, self.watch = self.store.list_and_watch(KINDS)
        self.claims.load(listed.items)
        self.scheduler.load(listed.items)

    def add(self, *objs: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [self.store.create(o) for o in objs]

    def delete(self, kind: str, name: str, namespace: str = "default") -> None:
        self.store.delete(kind, namespace, name)

    def _feed(self) -> None:
        while (ev := self.watch.get_nowait()) is not None:
            self.claims.handle(ev.type, ev.object)
            self.scheduler.handle(ev.type, ev.object)
            if self.lifecycle is not None:
                self.lifecycle.handle(ev.type, ev.object)

    def run(self, rounds: int = 200) -> None:
        """Until neither controller has anything to do now."""
        for _ in range(rounds):
            self._feed()
            did = self.claims.sync_pending()
            if self.lifecycle is not None:
                did += self.lifecycle.work(100)
            self._feed()
            while self.scheduler.schedule_next() is not None:
                did += 1
                self._feed()
            if not did and self.watch.pending() == 0:
                return
        raise AssertionError("cluster did not settle")

    def get(self, kind: str, name: str, namespace: str = "default") -> dict[str, Any]:
        return self.store.get(kind, namespace, name)

    def pod_claim(self, pod_name: str, pod_claim: str = "gpu") -> dict[str, Any]:
        p = self.get("Pod", pod_name)
        for s in p.get("status", {}).get("resourceClaimStatuses") or ():
            if s["name"] == pod_claim:
                return self.get("ResourceClaim", s["resourceClaimName"])
        for e in p["spec"].get("resourceClaims") or ():
            if e["name"] == pod_claim and e.get("resourceClaimName"):
                return self.get("ResourceClaim", e["resourceClaimName"])
        raise AssertionError(f"pod {pod_name} has no claim {pod_claim}")


def gpu_cluster(devices: int = 2, namespace: str = "default") -> Cluster:
    """One node with `devices` GPUs, the gpu class, and template "t" (one exactly request) in `namespace`."""
    c = Cluster()
    c.add(node("n1"), device_class("gpu", f'device.driver == "{GPU}"'),
          resource_slice("n1", GPU, [device(f"g{i}") for i in range(devices)]),
          template("t", claim_spec(exact("gpu", "gpu")), namespace=namespace))
    return c


KINDS = ("Pod", "ResourceClaim", "ResourceQuota", "Node", "DeviceClass", "ResourceSlice", "PodSchedulingContext",
         "DeviceTaintRule")
