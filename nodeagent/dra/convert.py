"""DRA wire messages <-> ports.py dataclasses: the only place dra/dra_health pb2 types are read or built.

v1 and v1beta1 DRAPlugin messages differ only in Device.share_id (v1 only, proto3
optional: None when the driver did not set it), so v1beta1 answers convert to the
same PrepareResult with share_id None. Health v1, v1beta1 and v1alpha1 messages are
identical in shape; the message text is passed on whole (health.py keeps the kubelet's
1024-character cut). No checks here beyond shape: the client validates keys against the request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from nodeagent.apis.dra.v1 import api_pb2 as dra_v1
from nodeagent.apis.dra.v1beta1 import api_pb2 as dra_v1beta1
from nodeagent.apis.dra_health.v1 import api_pb2 as health_v1
from nodeagent.apis.dra_health.v1alpha1 import api_pb2 as health_v1alpha1
from nodeagent.apis.dra_health.v1beta1 import api_pb2 as health_v1beta1
from nodeagent.dra.ports import HEALTHY, UNHEALTHY, UNKNOWN, ClaimRef, DeviceHealthUpdate, PreparedDevice, PrepareResult

_HEALTH = {0: UNKNOWN, 1: HEALTHY, 2: UNHEALTHY}


def prepare_request_v1(claims: Iterable[ClaimRef]) -> dra_v1.NodePrepareResourcesRequest:
    return dra_v1.NodePrepareResourcesRequest(claims=[_claim_v1(c) for c in claims])


def unprepare_request_v1(claims: Iterable[ClaimRef]) -> dra_v1.NodeUnprepareResourcesRequest:
    return dra_v1.NodeUnprepareResourcesRequest(claims=[_claim_v1(c) for c in claims])


def prepare_request_v1beta1(claims: Iterable[ClaimRef]) -> dra_v1beta1.NodePrepareResourcesRequest:
    return dra_v1beta1.NodePrepareResourcesRequest(claims=[_claim_v1beta1(c) for c in claims])


def unprepare_request_v1beta1(claims: Iterable[ClaimRef]) -> dra_v1beta1.NodeUnprepareResourcesRequest:
    return dra_v1beta1.NodeUnprepareResourcesRequest(claims=[_claim_v1beta1(c) for c in claims])


def _claim_v1(c: ClaimRef) -> dra_v1.Claim:
    return dra_v1.Claim(namespace=c.namespace, uid=c.uid, name=c.name)


def _claim_v1beta1(c: ClaimRef) -> dra_v1beta1.Claim:
    return dra_v1beta1.Claim(namespace=c.namespace, uid=c.uid, name=c.name)


def prepare_results_v1(resp: dra_v1.NodePrepareResourcesResponse) -> dict[str, PrepareResult]:
    return {
        uid: PrepareResult(devices=tuple(_device_v1(d) for d in r.devices), error=r.error)
        for uid, r in resp.claims.items()
    }


def prepare_results_v1beta1(resp: dra_v1beta1.NodePrepareResourcesResponse) -> dict[str, PrepareResult]:
    return {
        uid: PrepareResult(devices=tuple(_device_v1beta1(d) for d in r.devices), error=r.error)
        for uid, r in resp.claims.items()
    }


def _device_v1(d: dra_v1.Device) -> PreparedDevice:
    return PreparedDevice(
        request_names=tuple(d.request_names),
        pool_name=d.pool_name,
        device_name=d.device_name,
        cdi_device_ids=tuple(d.cdi_device_ids),
        share_id=d.share_id if d.HasField("share_id") else None,
    )


def _device_v1beta1(d: dra_v1beta1.Device) -> PreparedDevice:
    return PreparedDevice(
        request_names=tuple(d.request_names),
        pool_name=d.pool_name,
        device_name=d.device_name,
        cdi_device_ids=tuple(d.cdi_device_ids),
    )


def unprepare_results(
    resp: dra_v1.NodeUnprepareResourcesResponse | dra_v1beta1.NodeUnprepareResourcesResponse,
) -> dict[str, str]:
    claims: Mapping[str, dra_v1.NodeUnprepareResourceResponse | dra_v1beta1.NodeUnprepareResourceResponse]
    claims = resp.claims
    return {uid: r.error for uid, r in claims.items()}


HealthResponse = (
    health_v1.NodeWatchResourcesResponse
    | health_v1beta1.NodeWatchResourcesResponse
    | health_v1alpha1.NodeWatchResourcesResponse
)


def health_updates(resp: HealthResponse) -> list[DeviceHealthUpdate]:
    devices: Sequence[health_v1.DeviceHealth | health_v1beta1.DeviceHealth | health_v1alpha1.DeviceHealth]
    devices = resp.devices
    return [
        DeviceHealthUpdate(
            pool_name=d.device.pool_name,
            device_name=d.device.device_name,
            health=_HEALTH.get(int(d.health), UNKNOWN),
            last_updated=float(d.last_updated_time),
            timeout_seconds=float(d.health_check_timeout_seconds),
            message=d.message,
        )
        for d in devices
    ]
