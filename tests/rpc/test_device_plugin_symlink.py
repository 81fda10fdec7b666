"""A device-plugin endpoint that is a symlink is ignored: the link could point at any socket on
the host (issue 15: a link in device-plugins to a socket outside rootDir was served)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.rpc.server import channel
from plugins.fake_device_plugin.plugin import FakeDevicePlugin
from tests.rpc.test_device_plugins import Node, node, profile

__all__ = ["node"]  # fixture, imported for pytest

pytestmark = pytest.mark.rpc

OTHER = "example.com/other"


@pytest.fixture
async def outside() -> AsyncIterator[FakeDevicePlugin]:
    """A live plugin whose socket is outside rootDir, not registered."""
    folder = Path(tempfile.mkdtemp(prefix="na-", dir="/tmp"))
    p = FakeDevicePlugin(profile(resourceName=OTHER, socketName="out.sock", devices=[{"id": "nic-0"}]),
                         device_plugins_dir=folder)
    await p.start(register=False)
    try:
        yield p
    finally:
        await p.stop()
        shutil.rmtree(folder, ignore_errors=True)


async def test_symlinked_endpoint_is_refused(node: Node, outside: FakeDevicePlugin) -> None:
    link = node.cfg.device_plugins_dir / "evil.sock"
    link.symlink_to(outside.socket_path)
    async with channel(node.cfg.kubelet_socket) as chan:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await api_pb2_grpc.RegistrationStub(chan).Register(
                api_pb2.RegisterRequest(version="v1beta1", endpoint="evil.sock", resource_name=OTHER))
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    assert 'endpoint "evil.sock" is a symlink' in (err.value.details() or "")
    assert OTHER not in node.manager.extended_resources()[0]
    assert OTHER not in node.manager.registered_endpoints()
