"""Pure parts of the kit: claim allocation extraction and reading, health values, conversion."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apis.dra.v1 import api_pb2 as dra_v1
from nodeagent.apis.dra.v1beta1 import api_pb2 as dra_v1beta1
from nodeagent.apis.dra_health.v1alpha1 import api_pb2 as health_v1alpha1
from nodeagent.errors import FailedPrecondition, NotFound, Unavailable
from plugins.dra_kit import claims, convert
from plugins.dra_kit.model import (
    AllocatedDevice,
    ClaimRef,
    DeviceHealth,
    PreparedDevice,
    PrepareResult,
    check_health,
)
from tests.unit.dra_kit.memory_api import MemoryAPI

CLAIM = ClaimRef("default", "uid-1", "c1")


def _claim(results: list[dict[str, Any]], uid: str = "uid-1", config: list[Any] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"results": results}
    if config:
        devices["config"] = config
    return {"metadata": {"name": "c1", "namespace": "default", "uid": uid},
            "status": {"allocation": {"devices": devices}}}


def test_allocation_of_keeps_this_driver() -> None:
    obj = _claim(
        [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "pool-a", "device": "gpu-1"},
            {"request": "nic", "driver": "net.example.com", "pool": "p", "device": "eth0"},
            {"request": "gpu2", "driver": "gpu.example.com", "pool": "pool-a", "device": "gpu-2",
             "adminAccess": True, "shareID": "s1"},
        ],
        config=[{"source": "FromClaim", "requests": ["gpu"],
                 "opaque": {"driver": "gpu.example.com", "parameters": {"env": {"A": "1"}}}},
                {"opaque": {"driver": "other", "parameters": {}}}],
    )
    got = claims.allocation_of(CLAIM, obj, "gpu.example.com")
    assert got.devices == (
        AllocatedDevice("gpu", "pool-a", "gpu-1"),
        AllocatedDevice("gpu2", "pool-a", "gpu-2", admin_access=True, share_id="s1"),
    )
    assert got.config == (claims.OpaqueConfig(("gpu",), {"env": {"A": "1"}}, "FromClaim"),)


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        # the kubeletplugin helper's texts; "not allocated" is checked first, as there
        (_claim([], uid="other"), "^claim default/c1 got replaced$"),
        ({"metadata": {"uid": "other"}, "status": {}}, "^claim default/c1 not allocated$"),
    ],
)
def test_allocation_of_rejects(obj: dict[str, Any], match: str) -> None:
    with pytest.raises(FailedPrecondition, match=match):
        claims.allocation_of(CLAIM, obj, "gpu.example.com")


async def test_claim_reader_errors_name_the_claim() -> None:
    api = MemoryAPI()
    reader = claims.ClaimReader(api, "gpu.example.com")
    with pytest.raises(NotFound) as err:
        await reader.allocation(CLAIM)
    assert str(err.value) == 'retrieve claim default/c1: resourceclaims.resource.k8s.io "c1" not found'
    api.put_claim(_claim([{"request": "r", "driver": "gpu.example.com", "pool": "p", "device": "d"}]))
    assert (await reader.allocation(CLAIM)).devices == (AllocatedDevice("r", "p", "d"),)
    api.disconnect("get_claim")
    with pytest.raises(Unavailable, match=r"^retrieve claim default/c1: get_claim: connection refused$"):
        await reader.allocation(CLAIM)


def test_check_health() -> None:
    assert check_health("unhealthy") == "Unhealthy"
    with pytest.raises(ValueError, match="Healthy, Unhealthy, Unknown"):
        check_health("sick")


def test_prepare_response_versions() -> None:
    results = {"u1": PrepareResult((PreparedDevice(("r",), "p", "d", ("k/c=x",), share_id="s"),)),
               "u2": PrepareResult(error="boom")}
    v1 = convert.prepare_response_to_pb(dra_v1, results, share_id=True)
    assert v1.claims["u1"].devices[0].share_id == "s"
    assert v1.claims["u1"].devices[0].HasField("share_id")
    assert v1.claims["u2"].error == "boom"
    beta = convert.prepare_response_to_pb(dra_v1beta1, results, share_id=False)
    assert list(beta.claims["u1"].devices[0].cdi_device_ids) == ["k/c=x"]
    assert "share_id" not in beta.claims["u1"].devices[0].DESCRIPTOR.fields_by_name


def test_health_to_pb() -> None:
    msg = convert.health_to_pb(
        health_v1alpha1,
        [DeviceHealth("p", "a", "Healthy", 30), DeviceHealth("p", "b", "Unhealthy", 0, "hot"),
         DeviceHealth("p", "c", "Unknown")],
        now=1000.7,
    )
    assert [(d.device.device_name, d.health, d.health_check_timeout_seconds, d.message, d.last_updated_time)
            for d in msg.devices] == [
        ("a", health_v1alpha1.HEALTHY, 30, "", 1000),
        ("b", health_v1alpha1.UNHEALTHY, 0, "hot", 1000),
        ("c", health_v1alpha1.UNKNOWN, 0, "", 1000),
    ]


def test_prepared_device_json_round_trip() -> None:
    d = PreparedDevice(("a", "b"), "p", "d", ("k/c=x",), "s")
    assert PreparedDevice.from_json(d.to_json()) == d
    plain = PreparedDevice((), "p", "d")
    assert PreparedDevice.from_json(plain.to_json()) == plain
