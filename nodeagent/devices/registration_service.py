"""v1beta1.Registration served on ROOT/device-plugins/kubelet.sock: decode, count, delegate.

The servicer only increments kubelet_device_plugin_registration_total (first, for every
call, as the kubelet does) and hands the request to DeviceManager.register, whose
KubeletError texts reach the wire as status UNKNOWN. The server start does the kubelet's
directory handling: remove every unix socket left in the device-plugins directory
(plugins notice and register again), drop the DEPRECATION marker, then listen.
"""

from __future__ import annotations

import logging
import stat
from pathlib import Path
from typing import Any

import grpc

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.devices.manager import DeviceManager
from nodeagent.metrics.instruments import Instruments
from nodeagent.rpc.server import Service, UnixServer
from nodeagent.rpc.status import handle_errors

logger = logging.getLogger(__name__)

SERVICE_NAME = "v1beta1.Registration"


class RegistrationServicer(api_pb2_grpc.RegistrationServicer):
    def __init__(self, manager: DeviceManager, instruments: Instruments) -> None:
        self._manager = manager
        self._instruments = instruments

    @handle_errors
    async def Register(
        self, request: api_pb2.RegisterRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> api_pb2.Empty:
        self._instruments.device_plugin_registration.labels(request.resource_name).inc()
        logger.info(
            "device plugin registration resource=%s endpoint=%s version=%s",
            request.resource_name, request.endpoint, request.version,
        )
        await self._manager.register(request.version, request.endpoint, request.resource_name)
        return api_pb2.Empty()


def clean_device_plugins_dir(directory: Path) -> None:
    """Remove every unix socket in the directory (not files, not directories), as the kubelet does."""
    directory.mkdir(mode=0o750, parents=True, exist_ok=True)
    for entry in directory.iterdir():
        try:
            if stat.S_ISSOCK(entry.lstat().st_mode):
                entry.unlink()
                logger.info("removed stale socket=%s", entry)
        except FileNotFoundError:
            continue
    marker = directory / "DEPRECATION"
    if not marker.exists():
        marker.touch()


class RegistrationServer:
    def __init__(
        self, socket_path: Path, manager: DeviceManager, instruments: Instruments, *, mode: int = 0o660
    ) -> None:
        servicer = RegistrationServicer(manager, instruments)
        self.path = socket_path
        self._server = UnixServer(
            socket_path,
            [Service(SERVICE_NAME, lambda s: api_pb2_grpc.add_RegistrationServicer_to_server(servicer, s))],
            mode=mode,
            what="device plugin registration socket",
        )

    async def start(self) -> None:
        clean_device_plugins_dir(self.path.parent)
        await self._server.start()

    async def stop(self, grace: float = 1.0) -> None:
        await self._server.stop(grace)
