"""The prepare/unprepare flow every driver shares: idempotent, per claim, checkpointed.

`ClaimFlow` answers the kubelet's batch calls claim by claim: a claim already prepared gets
the same devices back without touching anything (the kubelet repeats a prepare it is unsure
about, e.g. after a restart); otherwise it reads the claim's allocation, lets the driver's
`prepare_devices` do the work (write CDI, move a link) and records the result in a JSON
checkpoint (written atomically) before answering. Unprepare of an unknown claim succeeds
(idempotent). One claim's failure is that claim's error text, never the whole call's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from nodeagent.plugin_kit import NodeAgentError
from plugins.dra_kit.claimfile import ClaimFile
from plugins.dra_kit.claims import ClaimAllocation
from plugins.dra_kit.model import ClaimRef, PreparedDevice, PrepareResult

logger = logging.getLogger(__name__)

CHECKPOINT_VERSION = 1


class AllocationSource(Protocol):
    async def allocation(self, claim: ClaimRef) -> ClaimAllocation: ...


PrepareDevices = Callable[[ClaimRef, ClaimAllocation], Awaitable[Sequence[PreparedDevice]]]
ReleaseDevices = Callable[[ClaimRef, Sequence[PreparedDevice]], Awaitable[None]]


@dataclass(frozen=True)
class PreparedClaim:
    claim: ClaimRef
    devices: tuple[PreparedDevice, ...]


def _prepared_to_json(prepared: PreparedClaim) -> dict[str, Any]:
    return {"claim": {"namespace": prepared.claim.namespace, "name": prepared.claim.name},
            "devices": [d.to_json() for d in prepared.devices]}


def _prepared_from_json(uid: str, entry: Any) -> PreparedClaim:
    c = entry["claim"]
    return PreparedClaim(
        ClaimRef(str(c["namespace"]), uid, str(c["name"])),
        tuple(PreparedDevice.from_json(d) for d in entry["devices"]),
    )


class PreparedStore(ClaimFile[PreparedClaim]):
    """Prepared claims by uid; persisted to `path` (JSON, atomic) when a path is given."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(path, what="checkpoint", version=CHECKPOINT_VERSION, key=lambda p: p.claim.uid,
                         encode=_prepared_to_json, decode=_prepared_from_json)


class ClaimFlow:
    """Batch prepare/unprepare as the kubelet asks, one claim at a time under a per-claim lock."""

    def __init__(
        self,
        driver: str,
        source: AllocationSource,
        store: PreparedStore,
        prepare_devices: PrepareDevices,
        release_devices: ReleaseDevices,
    ) -> None:
        self.driver = driver
        self.source = source
        self.store = store
        self._prepare_devices = prepare_devices
        self._release_devices = release_devices
        self._locks: dict[str, asyncio.Lock] = {}

    def _lock(self, uid: str) -> asyncio.Lock:
        return self._locks.setdefault(uid, asyncio.Lock())

    async def prepare(self, claims: Sequence[ClaimRef]) -> dict[str, PrepareResult]:
        return {c.uid: await self.prepare_one(c) for c in claims}

    async def prepare_one(self, claim: ClaimRef) -> PrepareResult:
        async with self._lock(claim.uid):
            known = self.store.get(claim.uid)
            if known is not None:
                logger.info("claim already prepared claim=%s", claim)
                return PrepareResult(known.devices)
            try:
                allocation = await self.source.allocation(claim)
                devices = tuple(await self._prepare_devices(claim, allocation))
                self.store.put(PreparedClaim(claim, devices))
            except NodeAgentError as err:
                logger.warning("prepare failed claim=%s err=%s", claim, err)
                return PrepareResult(error=str(err))
            except Exception as err:
                logger.exception("prepare failed claim=%s", claim)
                return PrepareResult(error=f"driver {self.driver}: prepare {claim.namespace}/{claim.name}: {err}")
            logger.info("claim prepared claim=%s devices=%s", claim,
                        ",".join(f"{d.pool_name}/{d.device_name}" for d in devices) or "-")
            return PrepareResult(devices)

    async def unprepare(self, claims: Sequence[ClaimRef]) -> dict[str, str]:
        return {c.uid: await self.unprepare_one(c) for c in claims}

    async def unprepare_one(self, claim: ClaimRef) -> str:
        async with self._lock(claim.uid):
            known = self.store.get(claim.uid)
            try:
                await self._release_devices(claim, known.devices if known is not None else ())
                self.store.delete(claim.uid)
            except NodeAgentError as err:
                logger.warning("unprepare failed claim=%s err=%s", claim, err)
                return str(err)
            except Exception as err:
                logger.exception("unprepare failed claim=%s", claim)
                return f"driver {self.driver}: unprepare {claim.namespace}/{claim.name}: {err}"
            logger.info("claim unprepared claim=%s known=%s", claim, known is not None)
            return ""
