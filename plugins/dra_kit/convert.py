"""Protobuf <-> kit dataclasses, for DRAPlugin v1 / v1beta1 and DRAResourceHealth v1 / v1beta1 / v1alpha1.

The two DRAPlugin versions share message shapes except Device.share_id (v1 only), and the
three health versions are identical, so each function takes the generated module to build with.
Nothing else in the kit or in a driver sees a protobuf message.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from plugins.dra_kit.model import HEALTHY, UNHEALTHY, ClaimRef, DeviceHealth, PrepareResult


def claims_from_pb(claims: Iterable[Any]) -> list[ClaimRef]:
    return [ClaimRef(c.namespace, c.uid, c.name) for c in claims]


def prepare_response_to_pb(pb: Any, results: Mapping[str, PrepareResult], *, share_id: bool) -> Any:
    """NodePrepareResourcesResponse of module `pb`; `share_id` only where the version has it."""
    out = pb.NodePrepareResourcesResponse()
    for uid, result in results.items():
        entry = out.claims[uid]
        if result.error:
            entry.error = result.error
            continue
        for d in result.devices:
            dev = entry.devices.add(
                request_names=list(d.request_names),
                pool_name=d.pool_name,
                device_name=d.device_name,
                cdi_device_ids=list(d.cdi_device_ids),
            )
            if share_id and d.share_id is not None:
                dev.share_id = d.share_id
    return out


def unprepare_response_to_pb(pb: Any, errors: Mapping[str, str]) -> Any:
    out = pb.NodeUnprepareResourcesResponse()
    for uid, error in errors.items():
        entry = out.claims[uid]
        if error:
            entry.error = error
    return out


def health_to_pb(pb: Any, devices: Sequence[DeviceHealth], now: float | None = None) -> Any:
    """NodeWatchResourcesResponse of module `pb` carrying the complete device list."""
    stamp = int(time.time() if now is None else now)
    status = {HEALTHY: pb.HEALTHY, UNHEALTHY: pb.UNHEALTHY}
    out = pb.NodeWatchResourcesResponse()
    for d in devices:
        out.devices.add(
            device=pb.DeviceIdentifier(pool_name=d.pool, device_name=d.device),
            health=status.get(d.health, pb.UNKNOWN),
            last_updated_time=stamp,
            health_check_timeout_seconds=d.timeout_seconds,
            message=d.message,
        )
    return out
