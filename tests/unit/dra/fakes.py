"""Fakes for the DRA manager tests: a DriverRegistry, a ClaimSource, pods with claims, a rig."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from nodeagent.dra.manager import DRAManager
from nodeagent.dra.ports import (
    ClaimRef,
    DeviceHealthUpdate,
    DriverCallError,
    DriverInfo,
    DriverListener,
    HealthListener,
    PreparedDevice,
    PrepareResult,
)
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.objects.pod.model import Pod
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.state.db import StateDB
from nodeagent.util.clock import Clock, FakeClock
from tests.unit.pods.fakes import FakeCgroups, FakeResources

ALLOC = {"cpu": 4000, "memory": 8 * 2**30, "ephemeral-storage": 10 * 2**30, "pods": 110}


class FakeRegistry:
    """DriverRegistry: devices answered from `devices[claim name]`; errors and blocking on demand."""

    def __init__(self, *drivers: str) -> None:
        self.registered: set[str] = set(drivers)
        self.prepare_calls: list[tuple[str, tuple[ClaimRef, ...]]] = []
        self.unprepare_calls: list[tuple[str, tuple[ClaimRef, ...]]] = []
        self.claim_errors: dict[str, str] = {}  # claim name -> per-claim error text
        self.unprepare_errors: dict[str, str] = {}
        self.call_error: str = ""
        self.block: asyncio.Event | None = None  # prepare waits for it when set
        self.health_listeners: list[HealthListener] = []
        self.driver_listeners: list[DriverListener] = []

    def drivers(self) -> Mapping[str, DriverInfo]:
        return {d: DriverInfo(d, f"/plugins/{d}/dra.sock", "v1.DRAPlugin", "v1.DRAResourceHealth")
                for d in self.registered}

    def is_registered(self, driver: str) -> bool:
        return driver in self.registered

    async def prepare(self, driver: str, claims: Sequence[ClaimRef]) -> Mapping[str, PrepareResult]:
        self.prepare_calls.append((driver, tuple(claims)))
        if self.block is not None:
            await self.block.wait()
        if self.call_error:
            raise DriverCallError(self.call_error)
        out = {}
        for c in claims:
            error = self.claim_errors.get(c.name, "")
            devices = () if error else (PreparedDevice((), "pool-a", f"{c.name}-dev",
                                                       (f"{driver}/gpu={c.name}",)),)
            out[c.uid] = PrepareResult(devices, error)
        return out

    async def unprepare(self, driver: str, claims: Sequence[ClaimRef]) -> Mapping[str, str]:
        self.unprepare_calls.append((driver, tuple(claims)))
        if self.call_error:
            raise DriverCallError(self.call_error)
        return {c.uid: self.unprepare_errors.get(c.name, "") for c in claims}

    def on_health(self, listener: HealthListener) -> None:
        self.health_listeners.append(listener)

    def on_driver(self, listener: DriverListener) -> None:
        self.driver_listeners.append(listener)

    async def send_health(self, driver: str, *devices: tuple[str, str, str], timeout: float = 0) -> None:
        updates = [DeviceHealthUpdate(pool, dev, health, 0.0, timeout) for pool, dev, health in devices]
        for listener in self.health_listeners:
            await listener(driver, updates)

    async def set_registered(self, driver: str, registered: bool) -> None:
        if registered:
            self.registered.add(driver)
        else:
            self.registered.discard(driver)
        for listener in self.driver_listeners:
            await listener(driver, registered)

    def prepared_names(self) -> list[tuple[str, list[str]]]:
        return [(d, [c.name for c in cs]) for d, cs in self.prepare_calls]

    def unprepared_names(self) -> list[tuple[str, list[str]]]:
        return [(d, [c.name for c in cs]) for d, cs in self.unprepare_calls]


def claim_doc(name: str, *, uid: str | None = None, namespace: str = "default",
              results: Sequence[tuple[str, str, str, str]] | None = None,
              reserved: Sequence[Pod] = (), allocated: bool = True, owner: Pod | None = None) -> dict[str, Any]:
    """A ResourceClaim dict; results as (request, driver, pool, device); `owner`: the pod it was
    generated for (its controller ownerReference)."""
    status: dict[str, Any] = {}
    if allocated:
        res = results if results is not None else [("gpu", "gpu.example.com", "pool-a", f"{name}-dev")]
        status["allocation"] = {"devices": {"results": [
            {"request": r, "driver": d, "pool": p, "device": dev} for r, d, p, dev in res]}}
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": p.name, "uid": p.uid} for p in reserved]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}
    if owner is not None:
        metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner.name, "uid": owner.uid,
                                        "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": metadata, "status": status}


class FakeClaims:
    """ClaimSource over a dict; pod claims resolve to claim names directly (or via `generated`)."""

    def __init__(self) -> None:
        self.docs: dict[tuple[str, str], dict[str, Any]] = {}
        self.generated: dict[tuple[str, str], str] = {}  # (pod uid, pod claim name) -> claim name
        self.fetched: list[tuple[str, str]] = []  # every fetch_claim, in order

    def put(self, doc: dict[str, Any]) -> None:
        md = doc["metadata"]
        self.docs[(md["namespace"], md["name"])] = doc

    def reserve(self, name: str, *pods: Pod, namespace: str = "default") -> None:
        doc = self.docs[(namespace, name)]
        doc["status"]["reservedFor"] = [{"resource": "pods", "name": p.name, "uid": p.uid} for p in pods]

    def get_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.docs.get((namespace, name))

    async def fetch_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        self.fetched.append((namespace, name))
        return self.docs.get((namespace, name))

    def pod_claim_names(self, pod: Pod) -> Sequence[tuple[str, str]]:
        return [(c.name, c.resource_claim_name or self.generated.get((pod.uid, c.name), ""))
                for c in pod.resource_claims]


def claim_pod(name: str, clock: Clock, claims: Mapping[str, str], *,
              containers: Mapping[str, Sequence[tuple[str, str]]] | None = None,
              annotations: Mapping[str, str] | None = None, uid: str | None = None) -> Pod:
    """A pod with spec.resourceClaims {pod claim name: claim name} and containers referencing them
    (default: one container `c0` referencing every claim whole)."""
    refs = containers if containers is not None else {"c0": [(n, "") for n in claims]}
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": dict(annotations or {})},
        "spec": {
            # An empty claim name stands for a claim from a template (resolved by FakeClaims.generated).
            "resourceClaims": [{"name": pcn, "resourceClaimName": cn} if cn
                               else {"name": pcn, "resourceClaimTemplateName": f"{pcn}-template"}
                               for pcn, cn in claims.items()],
            "containers": [
                {"name": cname, "image": "nginx",
                 "resources": {"claims": [{"name": n, "request": r} if r else {"name": n} for n, r in crefs]}}
                for cname, crefs in refs.items()
            ],
        },
    }
    return pod_from_manifest(doc, clock=clock, uid=uid or f"uid-pod-{name}")


@dataclasses.dataclass
class Rig:
    clock: FakeClock
    db: StateDB
    drivers: FakeRegistry
    claims: FakeClaims
    dra: DRAManager
    pods: PodManager
    recorder: EventRecorder
    metrics: CollectorRegistry

    async def close(self) -> None:
        await self.dra.stop()
        await self.pods.close()


def build(clock: FakeClock, db: StateDB, drivers: FakeRegistry, claims: FakeClaims, *,
          health_gate: bool = True) -> Rig:
    metrics = CollectorRegistry()
    recorder = EventRecorder(clock=clock, host="node-a")
    dra = DRAManager(drivers, claims, db, clock, metrics_registry=metrics, health_gate=health_gate)
    pods = PodManager(node_name="node-a", resources=FakeResources(dict(ALLOC)), admitters=[],
                      cgroups=FakeCgroups(), db=db, clock=clock, instruments=Instruments(metrics),
                      recorder=recorder, starters=[dra])
    dra.attach_pods(pods)
    return Rig(clock, db, drivers, claims, dra, pods, recorder, metrics)


async def settle(rounds: int = 30) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)
