"""Two plugins and one socket: a registration of another resource on an endpoint already
registered replaces the old registration (the kubelet keys plugins by resource, and a socket
serves one DevicePlugin), and one device of one plugin is never handed out under two names."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.rpc.server import channel
from plugins.fake_device_plugin.plugin import FakeDevicePlugin
from tests.rpc.test_device_plugins import GPU, Node, gpu_pod, node, plugin, profile
from tests.waiting import eventually

__all__ = ["node", "plugin"]  # fixtures, imported for pytest

pytestmark = pytest.mark.rpc

OTHER = "example.com/other"


def other_pod(uid: str, count: int) -> Pod:
    return Pod(uid=uid, name=f"pod-{uid}", containers=(Container("main", limits={OTHER: count},
                                                                 requests={OTHER: count}),))


@pytest.fixture
async def second(node: Node) -> AsyncIterator[FakeDevicePlugin]:
    """Another plugin process of its own (own socket, another resource), not yet registered."""
    p = FakeDevicePlugin(profile(resourceName=OTHER, socketName="other.sock", devices=[{"id": "nic-0"}]),
                         device_plugins_dir=node.cfg.device_plugins_dir)
    await p.start(register=False)
    yield p
    await p.stop()


async def _register(node: Node, resource: str, endpoint: str) -> None:
    async with channel(node.cfg.kubelet_socket) as chan:
        await api_pb2_grpc.RegistrationStub(chan).Register(
            api_pb2.RegisterRequest(version="v1beta1", endpoint=endpoint, resource_name=resource))


def _held(node: Node, uids: list[str]) -> list[str]:
    return [d.device_id for uid in uids for d in node.manager.container_devices(uid, "main")]


async def test_other_resource_on_a_registered_endpoint_replaces_it(
    node: Node, plugin: FakeDevicePlugin, second: FakeDevicePlugin
) -> None:
    assert (await node.manager.admit(gpu_pod("p1", 1), [])).admit
    assert _held(node, ["p1"]) == ["gpu-0"]

    # The second plugin names the first one's socket as its endpoint.
    await _register(node, OTHER, "fake-gpu.sock")
    await eventually(lambda: node.manager.extended_resources()[0].get(OTHER) == 4)

    capacity, allocatable = node.manager.extended_resources()
    assert capacity == {OTHER: 4} and allocatable == {OTHER: 4}  # each device counted once
    assert node.manager.registered_endpoints() == {OTHER: plugin.socket_path}
    assert any(e[3:5] == ("Warning", "DevicePluginReplaced") for e in node.events)
    # gpu-0 stays with p1 (held under the replaced name) and is not free under the new one.
    assert _held(node, ["p1"]) == ["gpu-0"]
    assert (await node.manager.admit(other_pod("p2", 4), [])).reason == "UnexpectedAdmissionError"
    assert (await node.manager.admit(other_pod("p3", 3), [])).admit
    held = _held(node, ["p1", "p3"])
    assert sorted(held) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]  # no device under two names
    # Once p1 lets gpu-0 go, it is free under the endpoint's resource.
    await node.manager.remove(gpu_pod("p1", 1))
    assert (await node.manager.admit(other_pod("p4", 1), [])).admit
    assert _held(node, ["p4"]) == ["gpu-0"]


async def test_old_resource_registering_again_takes_its_endpoint_back(
    node: Node, plugin: FakeDevicePlugin, second: FakeDevicePlugin
) -> None:
    await _register(node, OTHER, "fake-gpu.sock")
    await eventually(lambda: node.manager.extended_resources()[1] == {OTHER: 4})
    assert (await node.manager.admit(other_pod("p1", 1), [])).admit
    await _register(node, GPU, "fake-gpu.sock")
    await eventually(lambda: node.allocatable() == 4)
    assert OTHER not in node.manager.extended_resources()[0]
    assert (await node.manager.admit(gpu_pod("p2", 4), [])).reason == "UnexpectedAdmissionError"
    assert (await node.manager.admit(gpu_pod("p3", 3), [])).admit
    assert sorted(_held(node, ["p1", "p3"])) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]


async def test_the_second_plugin_on_its_own_socket_keeps_both(
    node: Node, plugin: FakeDevicePlugin, second: FakeDevicePlugin
) -> None:
    await _register(node, OTHER, "other.sock")
    await eventually(lambda: node.manager.extended_resources()[0].get(OTHER) == 1)
    assert node.capacity() == 4
