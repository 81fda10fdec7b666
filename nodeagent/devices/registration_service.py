"""v1beta1.Registration served on ROOT/device-plugins/kubelet.sock: decode, count, delegate.

The servicer increments kubelet_device_plugin_registration_total and hands the request to
DeviceManager.register, whose KubeletError texts reach the wire as status UNKNOWN. The
kubelet counts every call before validating; here only calls with a supported version and a
valid extended resource name count, and at most MAX_RESOURCE_SERIES names get a series, so a
plugin cannot grow the metric without bound (10,000 bogus names once left 10,001 series).
Plugin-provided strings are logged quoted (nodeagent.util.logtext): a name with a newline once
forged a log line. The server start does the kubelet's
directory handling: remove every unix socket left in the device-plugins directory
(plugins notice and register again), then listen. No DEPRECATION marker: the v1.37 kubelet
never writes one (its server.GetPluginHandler, which would, is called by nothing), and the
upstream sample device plugin skips registration when it finds one.
"""

from __future__ import annotations

import logging
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.devices.manager import DeviceManager
from nodeagent.devices.model import SUPPORTED_VERSIONS, is_extended_resource_name
from nodeagent.metrics.instruments import Instruments
from nodeagent.rpc.server import BindDir, Service, UnixServer
from nodeagent.rpc.status import handle_errors
from nodeagent.util.logtext import untrusted

logger = logging.getLogger(__name__)

SERVICE_NAME = "v1beta1.Registration"
MAX_RESOURCE_SERIES = 256
"""Resource names that get a kubelet_device_plugin_registration_total series (a node has a handful)."""


class RegistrationServicer(api_pb2_grpc.RegistrationServicer):
    def __init__(self, manager: DeviceManager, instruments: Instruments) -> None:
        self._manager = manager
        self._instruments = instruments
        self._counted: set[str] = set()  # resource names with a registration series

    @handle_errors
    async def Register(
        self, request: api_pb2.RegisterRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> api_pb2.Empty:
        resource = request.resource_name
        logger.info(
            "device plugin registration resource=%s endpoint=%s version=%s",
            untrusted(resource), untrusted(request.endpoint), untrusted(request.version),
        )
        if request.version in SUPPORTED_VERSIONS and is_extended_resource_name(resource):
            self._count(resource)
        await self._manager.register(request.version, request.endpoint, resource)
        return api_pb2.Empty()

    def _count(self, resource: str) -> None:
        if resource not in self._counted:
            if len(self._counted) >= MAX_RESOURCE_SERIES:
                logger.warning("device plugin registration not counted, %d resource names counted already "
                               "resource=%s", MAX_RESOURCE_SERIES, untrusted(resource))
                return
            self._counted.add(resource)
        self._instruments.device_plugin_registration.labels(resource).inc()


def clean_device_plugins_dir(directory: Path) -> None:
    """Remove every unix socket in the directory (not files, not directories), as the kubelet does."""
    directory.mkdir(mode=0o750, parents=True, exist_ok=True)
    for entry in directory.iterdir():
        try:
            if stat.S_ISSOCK(entry.lstat().st_mode):
                entry.unlink()
                logger.info("removed stale socket=%s", untrusted(str(entry)))
        except FileNotFoundError:
            continue


class RegistrationServer:
    def __init__(
        self, socket_path: Path, manager: DeviceManager, instruments: Instruments, *, mode: int = 0o660,
        interceptors: Sequence[Any] = (), bind_dir: BindDir | None = None,
    ) -> None:
        servicer = RegistrationServicer(manager, instruments)
        self.path = socket_path
        self._server = UnixServer(
            socket_path,
            [Service(SERVICE_NAME, lambda s: api_pb2_grpc.add_RegistrationServicer_to_server(servicer, s))],
            mode=mode,
            interceptors=interceptors,
            what="device plugin registration socket",
            bind_dir=bind_dir,
        )

    async def start(self) -> None:
        clean_device_plugins_dir(self.path.parent)
        await self._server.start()

    async def stop(self, grace: float = 1.0) -> None:
        await self._server.stop(grace)
