"""A claim's allocation for this driver, read through the Kubernetes API.

`ClaimReader` GETs the ResourceClaim the kubelet names (resource.k8s.io v1, else v1beta2,
else v1beta1: APIPort.get_claim) and `allocation_of` keeps this driver's results and opaque
config. Errors carry the kubeletplugin helper's texts ("retrieve claim NS/NAME: ...",
"claim NS/NAME not allocated", "claim NS/NAME got replaced") and are per claim: ClaimFlow
turns them into that claim's error, never the whole call's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.plugin_kit import FailedPrecondition, NotFound, Unavailable
from plugins.dra_kit.kube import APIError, APIPort
from plugins.dra_kit.model import AllocatedDevice, ClaimRef


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
    """This driver's part of a claim's status.allocation; raises FailedPrecondition as the helper does."""
    where = f"{claim.namespace}/{claim.name}"
    allocation = (obj.get("status") or {}).get("allocation")
    if not allocation:
        raise FailedPrecondition(f"claim {where} not allocated")
    uid = str((obj.get("metadata") or {}).get("uid", ""))
    if claim.uid and uid != claim.uid:
        raise FailedPrecondition(f"claim {where} got replaced")
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
    """Reads claims through the Kubernetes API and extracts this driver's allocation."""

    def __init__(self, api: APIPort, driver: str) -> None:
        self.api = api
        self.driver = driver

    async def allocation(self, claim: ClaimRef) -> ClaimAllocation:
        try:
            obj = await self.api.get_claim(claim.namespace, claim.name)
        except NotFound as err:
            raise NotFound(f"retrieve claim {claim.namespace}/{claim.name}: {err}") from None
        except Unavailable as err:
            raise Unavailable(f"retrieve claim {claim.namespace}/{claim.name}: {err}") from None
        except APIError as err:
            raise APIError(err.status, f"retrieve claim {claim.namespace}/{claim.name}: {err}") from None
        return allocation_of(claim, obj, self.driver)
