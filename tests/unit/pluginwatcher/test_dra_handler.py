"""The DRAPlugin handler's pure parts: service choice, validation texts, message conversion, call checks."""

from __future__ import annotations

import grpc
import pytest
from prometheus_client import CollectorRegistry

from nodeagent.apis.dra.v1 import api_pb2 as dra_v1
from nodeagent.apis.dra.v1beta1 import api_pb2 as dra_v1beta1
from nodeagent.apis.dra_health.v1alpha1 import api_pb2 as health_v1alpha1
from nodeagent.dra import convert
from nodeagent.dra.client import check_keys, method_path
from nodeagent.dra.ports import ClaimRef, DriverCallError
from nodeagent.dra.registry import DRARegistry, choose_health_service, choose_plugin_service
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.executor import go_code_name
from nodeagent.pluginwatcher.model import PluginInfo
from nodeagent.util.clock import FakeClock


@pytest.mark.parametrize(
    ("versions", "chosen"),
    [
        (("v1.DRAPlugin",), "v1.DRAPlugin"),
        (("v1beta1.DRAPlugin",), "v1beta1.DRAPlugin"),
        (("v1beta1.DRAPlugin", "v1.DRAPlugin"), "v1.DRAPlugin"),
        (("v1alpha1.DRAResourceHealth", "v1beta1.DRAPlugin"), "v1beta1.DRAPlugin"),
    ],
)
def test_choose_plugin_service_prefers_v1(versions: tuple[str, ...], chosen: str) -> None:
    assert choose_plugin_service(versions) == chosen


@pytest.mark.parametrize(
    ("versions", "chosen"),
    [
        (("v1.DRAPlugin", "v1alpha1.DRAResourceHealth", "v1.DRAResourceHealth"), "v1.DRAResourceHealth"),
        (("v1.DRAPlugin", "v1alpha1.DRAResourceHealth"), "v1alpha1.DRAResourceHealth"),
        (("v1.DRAPlugin",), ""),
    ],
)
def test_choose_health_service(versions: tuple[str, ...], chosen: str) -> None:
    assert choose_health_service(versions) == chosen


def _registry() -> DRARegistry:
    return DRARegistry(FakeClock(), Instruments(CollectorRegistry()))


@pytest.mark.parametrize(
    ("name", "versions", "text"),
    [
        ("d.example.com", ("v1.DRAPlugin",), None),
        (
            "d.example.com",
            (),
            "invalid supported gRPC versions of DRA driver plugin d.example.com at endpoint /p/dra.sock: "
            "empty list of supported gRPC services (aka supported versions)",
        ),
        (
            "d.example.com",
            ("v1alpha3.NodeService",),
            "invalid supported gRPC versions of DRA driver plugin d.example.com at endpoint /p/dra.sock: "
            'none of services supported by the plugin (["v1alpha3.NodeService"]) are supported by the kubelet '
            '(["v1.DRAPlugin" "v1beta1.DRAPlugin"])',
        ),
        ("", ("v1.DRAPlugin",), "invalid DRA driver plugin at endpoint /p/dra.sock: DRA driver name is empty"),
    ],
)
def test_validate_texts(name: str, versions: tuple[str, ...], text: str | None) -> None:
    info = PluginInfo("DRAPlugin", name, "/p/dra.sock", versions, "/r/reg.sock")
    assert _registry().validate(info) == text


def test_convert_v1_and_v1beta1_prepare() -> None:
    v1 = dra_v1.NodePrepareResourcesResponse(claims={
        "u1": dra_v1.NodePrepareResourceResponse(devices=[dra_v1.Device(
            request_names=["a", "b"], pool_name="p", device_name="d", cdi_device_ids=["x=1"], share_id="s")]),
        "u2": dra_v1.NodePrepareResourceResponse(),  # empty value: zero devices
        "u3": dra_v1.NodePrepareResourceResponse(error="bad"),
    })
    got = convert.prepare_results_v1(v1)
    assert got["u1"].devices[0].request_names == ("a", "b")
    assert got["u1"].devices[0].share_id == "s"
    assert got["u2"].devices == () and got["u2"].error == ""
    assert got["u3"].error == "bad"
    beta = dra_v1beta1.NodePrepareResourcesResponse(claims={
        "u1": dra_v1beta1.NodePrepareResourceResponse(devices=[dra_v1beta1.Device(pool_name="p", device_name="d")])
    })
    dev = convert.prepare_results_v1beta1(beta)["u1"].devices[0]
    assert (dev.pool_name, dev.device_name, dev.request_names, dev.share_id) == ("p", "d", (), None)
    req = convert.prepare_request_v1beta1([ClaimRef("ns", "u1", "c1")])
    assert [(c.namespace, c.uid, c.name) for c in req.claims] == [("ns", "u1", "c1")]


def test_convert_health_unknown_enum_value_is_unknown() -> None:
    msg = health_v1alpha1.NodeWatchResourcesResponse(devices=[
        health_v1alpha1.DeviceHealth(device=health_v1alpha1.DeviceIdentifier(pool_name="p", device_name="d"),
                                     health=health_v1alpha1.UNHEALTHY, last_updated_time=5)
    ])
    (u,) = convert.health_updates(msg)
    assert (u.pool_name, u.device_name, u.health, u.last_updated, u.timeout_seconds) == ("p", "d", "Unhealthy", 5.0,
                                                                                       0.0)


def test_check_keys() -> None:
    claims = [ClaimRef("n", "u1", "c1"), ClaimRef("n", "u2", "c2")]
    check_keys("NodePrepareResources", claims, {"u1", "u2"})
    with pytest.raises(DriverCallError, match=r"^NodePrepareResources skipped 2 ResourceClaims$"):
        check_keys("NodePrepareResources", claims, set())
    with pytest.raises(DriverCallError, match=r"unknown claim UID u3$"):
        check_keys("NodePrepareResources", claims, {"u1", "u2", "u3"})


def test_method_paths_and_go_code_names() -> None:
    assert method_path("v1.DRAPlugin", "NodePrepareResources") == (
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources")
    assert method_path("v1beta1.DRAPlugin", "NodeUnprepareResources") == (
        "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources")
    assert [go_code_name(c) for c in (grpc.StatusCode.OK, grpc.StatusCode.CANCELLED,
                                       grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)] == [
        "OK", "Canceled", "DeadlineExceeded", "Unavailable"]
