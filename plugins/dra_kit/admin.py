"""The driver's view of the API server, which for nodeagent is its admin socket.

- `AdminAccess`: the port (apply / get / node name) over nodeagent.admin.client.AdminClient,
  with NOT_FOUND told apart and a fresh channel after the daemon was unreachable (a channel
  that saw the socket vanish may sit in reconnect backoff for minutes).
- `SlicePublisher`: publishes the driver's ResourceSlices (resource.k8s.io/v1, one slice per
  pool, resourceSliceCount 1) for this node, and keeps them there: every `interval` it checks
  the slices and re-applies missing or stale ones (the daemon deletes a node's slices when it
  starts, as the kubelet does), bumping the pool generation whenever the device list changes.
- `ClaimReader`: reads a ResourceClaim and returns this driver's allocation results.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc

from nodeagent.admin.client import AdminClient, AdminError
from nodeagent.errors import FailedPrecondition, NotFound, Unavailable
from plugins.dra_kit.model import AllocatedDevice, ClaimRef

logger = logging.getLogger(__name__)

SLICE_API_VERSION = "resource.k8s.io/v1"
FINGERPRINT_ANNOTATION = "dra.nodeagent.dev/devices-sha256"


class AdminPort(Protocol):
    async def apply(self, manifest: str, namespace: str) -> None: ...

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist. Raises Unavailable."""
        ...

    async def node_name(self) -> str: ...


class AdminAccess:
    """AdminPort over the daemon's admin socket."""

    def __init__(self, socket: Path, *, timeout: float = 10.0) -> None:
        self.socket = socket
        self._timeout = timeout
        self._client: AdminClient | None = None

    def _get_client(self) -> AdminClient:
        if self._client is None:
            self._client = AdminClient(self.socket, timeout=self._timeout)
        return self._client

    async def _reset(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    async def close(self) -> None:
        await self._reset()

    async def apply(self, manifest: str, namespace: str) -> None:
        try:
            await self._get_client().apply(manifest, namespace)
        except Unavailable:
            await self._reset()
            raise

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            objs = await self._get_client().get(kind, namespace, name, False)
        except Unavailable:
            await self._reset()
            raise
        except AdminError as err:
            cause = err.__cause__
            if isinstance(cause, grpc.aio.AioRpcError) and cause.code() == grpc.StatusCode.NOT_FOUND:
                return None
            raise
        return objs[0] if objs else None

    async def node_name(self) -> str:
        try:
            node = await self._get_client().node()
        except Unavailable:
            await self._reset()
            raise
        return str((node.get("metadata") or {}).get("name", ""))


# ---------------------------------------------------------------------------- slices


def slice_name(node: str, driver: str, pool: str) -> str:
    """Deterministic, so a restarted driver updates its slice instead of adding one."""
    raw = f"{node}-{driver}-{pool}".lower()
    name = "".join(c if c.isalnum() or c in "-." else "-" for c in raw).strip("-.")
    if len(name) > 253:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:16]
        name = f"{name[:236]}-{digest}"
    return name


def devices_fingerprint(devices: Sequence[Mapping[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(list(devices), sort_keys=True).encode()).hexdigest()


def slice_object(
    driver: str, node: str, pool: str, devices: Sequence[Mapping[str, Any]], generation: int
) -> dict[str, Any]:
    """A resource.k8s.io/v1 ResourceSlice for one pool of one node."""
    return {
        "apiVersion": SLICE_API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {
            "name": slice_name(node, driver, pool),
            "annotations": {FINGERPRINT_ANNOTATION: devices_fingerprint(devices)},
        },
        "spec": {
            "driver": driver,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": [dict(d) for d in devices],
        },
    }


class SlicePublisher:
    """Keeps this driver's ResourceSlices (one per pool) published for this node."""

    def __init__(
        self,
        admin: AdminPort,
        driver: str,
        pools: Mapping[str, Sequence[Mapping[str, Any]]],
        *,
        node_name: str | None = None,
        interval: float = 2.0,
    ) -> None:
        self.admin = admin
        self.driver = driver
        self.node_name = node_name
        self.interval = interval
        self._pools = {p: [dict(d) for d in devs] for p, devs in pools.items()}
        self.applied = 0  # slices applied (created or changed) so far
        self.published = asyncio.Event()  # set after the first complete publish
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def slices(self) -> list[dict[str, Any]]:
        node = self.node_name or ""
        return [slice_object(self.driver, node, p, devs, 1) for p, devs in self._pools.items()]

    async def set_pools(self, pools: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """New device lists (a driver whose devices changed); published on the next round, at once."""
        self._pools = {p: [dict(d) for d in devs] for p, devs in pools.items()}
        self._wake.set()

    async def publish(self) -> int:
        """Apply every slice that is missing or stale; returns how many were applied. Raises Unavailable."""
        if not self.node_name:
            self.node_name = await self.admin.node_name()
            if not self.node_name:
                raise Unavailable("the daemon reported no node name")
            logger.info("publishing slices for node=%s driver=%s", self.node_name, self.driver)
        count = 0
        for pool, devices in self._pools.items():
            name = slice_name(self.node_name, self.driver, pool)
            current = await self.admin.get("resourceslices", "", name)
            fingerprint = devices_fingerprint(devices)
            generation = 1
            if current is not None:
                annotations = (current.get("metadata") or {}).get("annotations") or {}
                spec = current.get("spec") or {}
                old_gen = int((spec.get("pool") or {}).get("generation") or 0)
                if annotations.get(FINGERPRINT_ANNOTATION) == fingerprint and spec.get("nodeName") == self.node_name:
                    continue
                generation = old_gen + 1
            obj = slice_object(self.driver, self.node_name, pool, devices, generation)
            await self.admin.apply(json.dumps(obj), "")
            count += 1
            logger.info("resource slice published name=%s pool=%s devices=%d generation=%d",
                        name, pool, len(devices), generation)
        self.applied += count
        self.published.set()
        return count

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        reported = False
        while True:
            try:
                await self.publish()
                reported = False
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the daemon may be restarting: try again next round
                if not reported:
                    logger.warning("cannot publish resource slices driver=%s err=%s", self.driver, err)
                    reported = True
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)


# ---------------------------------------------------------------------------- claims


@dataclass(frozen=True)
class OpaqueConfig:
    """allocation.devices.config[] with opaque parameters for this driver."""

    requests: tuple[str, ...]  # empty: every request
    parameters: Any
    source: str = ""  # FromClass | FromClaim


@dataclass(frozen=True)
class ClaimAllocation:
    devices: tuple[AllocatedDevice, ...]
    config: tuple[OpaqueConfig, ...] = ()


def allocation_of(claim: ClaimRef, obj: Mapping[str, Any], driver: str) -> ClaimAllocation:
    """This driver's part of a claim's status.allocation; raises when the claim does not match."""
    meta = obj.get("metadata") or {}
    uid = str(meta.get("uid", ""))
    if claim.uid and uid and uid != claim.uid:
        raise FailedPrecondition(
            f"ResourceClaim {claim.namespace}/{claim.name}: uid is {uid}, the kubelet asked for {claim.uid}"
        )
    allocation = (obj.get("status") or {}).get("allocation")
    if not allocation:
        raise FailedPrecondition(f"ResourceClaim {claim.namespace}/{claim.name} is not allocated")
    devices = allocation.get("devices") or {}
    results = tuple(
        AllocatedDevice(
            request=str(r.get("request", "")),
            pool=str(r.get("pool", "")),
            device=str(r.get("device", "")),
            admin_access=bool(r.get("adminAccess", False)),
            share_id=None if r.get("shareID") is None else str(r["shareID"]),
        )
        for r in devices.get("results") or ()
        if r.get("driver") == driver
    )
    config = tuple(
        OpaqueConfig(tuple(str(x) for x in c.get("requests") or ()), (c.get("opaque") or {}).get("parameters"),
                     str(c.get("source", "")))
        for c in devices.get("config") or ()
        if (c.get("opaque") or {}).get("driver") == driver
    )
    return ClaimAllocation(results, config)


class ClaimReader:
    """Reads claims through the admin API and extracts this driver's allocation."""

    def __init__(self, admin: AdminPort, driver: str) -> None:
        self.admin = admin
        self.driver = driver

    async def allocation(self, claim: ClaimRef) -> ClaimAllocation:
        obj = await self.admin.get("resourceclaims", claim.namespace, claim.name)
        if obj is None:
            raise NotFound(f"ResourceClaim {claim.namespace}/{claim.name} not found")
        return allocation_of(claim, obj, self.driver)
