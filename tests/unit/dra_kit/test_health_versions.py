"""The fake DRA driver's health profile: any subset of the health versions, per-device timeout and message."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from nodeagent.apis.dra_health.v1 import api_pb2 as health_v1
from nodeagent.apis.dra_health.v1alpha1 import api_pb2 as health_v1alpha1
from nodeagent.apis.dra_health.v1beta1 import api_pb2 as health_v1beta1
from nodeagent.errors import ConfigError
from plugins.dra_kit import convert
from plugins.dra_kit.health import HealthBoard
from plugins.dra_kit.model import ALL_SERVICES, HEALTH_SERVICES, DeviceHealth
from plugins.fake_dra_driver.profile import parse_profile

BASE: dict[str, Any] = {
    "driverName": "gpu.example.com",
    "poolName": "pool-a",
    "devices": [{"name": "gpu-0"}, {"name": "gpu-1", "healthCheckTimeoutSeconds": 4, "healthMessage": "burn-in"}],
    "healthCheckTimeoutSeconds": 12,
}


def test_all_three_health_versions_are_known_newest_first() -> None:
    assert HEALTH_SERVICES == ("v1.DRAResourceHealth", "v1beta1.DRAResourceHealth", "v1alpha1.DRAResourceHealth")
    assert ("v1.DRAPlugin", "v1beta1.DRAPlugin", *HEALTH_SERVICES) == ALL_SERVICES


@pytest.mark.parametrize(
    "health",
    [[], ["v1alpha1.DRAResourceHealth"], ["v1beta1.DRAResourceHealth"], ["v1.DRAResourceHealth"],
     list(HEALTH_SERVICES)],
)
def test_profile_offers_any_subset(health: list[str]) -> None:
    doc = copy.deepcopy(BASE)
    doc["services"] = ["v1.DRAPlugin", *health]
    assert parse_profile(doc).services == ("v1.DRAPlugin", *health)


def test_default_offers_everything() -> None:
    assert parse_profile(copy.deepcopy(BASE)).services == ALL_SERVICES


def test_per_device_timeout_and_message() -> None:
    p = parse_profile(copy.deepcopy(BASE))
    assert [(p.device_timeout(d), d.health_message) for d in p.devices] == [(12, ""), (4, "burn-in")]
    assert p.health_resend_seconds == pytest.approx(4 / 3)  # a third of the shortest timeout


def test_negative_device_timeout_rejected() -> None:
    doc = copy.deepcopy(BASE)
    doc["devices"][0]["healthCheckTimeoutSeconds"] = -1
    with pytest.raises(ConfigError, match=r"profile.devices\[0\].healthCheckTimeoutSeconds: must be zero or more"):
        parse_profile(doc)


@pytest.mark.parametrize("pb", [health_v1, health_v1beta1, health_v1alpha1])
def test_every_version_carries_timeout_and_message(pb: Any) -> None:
    msg = convert.health_to_pb(pb, [DeviceHealth("pool-a", "gpu-1", "Unhealthy", 4, "x" * 1500)], now=1_700_000_000)
    (d,) = msg.devices
    assert (d.device.pool_name, d.device.device_name, d.health, d.last_updated_time) == (
        "pool-a", "gpu-1", pb.UNHEALTHY, 1_700_000_000)
    assert (d.health_check_timeout_seconds, len(d.message)) == (4, 1500)


async def test_board_sends_long_messages_whole() -> None:
    """The kubelet, not the driver, cuts messages at 1024 characters."""
    board = HealthBoard([DeviceHealth("p", "a")], resend=10)
    assert await board.set("p", "a", "Unhealthy", "m" * 1500)
    it = board.watch().__aiter__()
    (d,) = await asyncio.wait_for(it.__anext__(), 1)
    assert len(d.message) == 1500
    await board.close()


def test_v1beta1_wire_matches_v1() -> None:
    """Same messages, field names, numbers and types in all three versions (they differ only by package)."""
    def shape(module: Any) -> dict[str, list[tuple[str, int, int, str]]]:
        return {
            name: [(f.name, f.number, f.type, f.message_type.name if f.message_type else
                    f.enum_type.name if f.enum_type else "") for f in m.fields]
            for name, m in module.DESCRIPTOR.message_types_by_name.items()
        }

    assert shape(health_v1beta1) == shape(health_v1) == shape(health_v1alpha1)
    assert health_v1beta1.DESCRIPTOR.package == "v1beta1"
    method = health_v1beta1.DESCRIPTOR.services_by_name["DRAResourceHealth"].methods_by_name["NodeWatchResources"]
    assert (method.server_streaming, method.client_streaming) == (True, False)
    assert [v.name for v in health_v1beta1.DESCRIPTOR.enum_types_by_name["HealthStatus"].values] == [
        "UNKNOWN", "HEALTHY", "UNHEALTHY"]
