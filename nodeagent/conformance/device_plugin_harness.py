"""The kubelet side the device plugin suite plays: kubelet.sock, the plugin's socket, its streams.

With a device-plugins directory (given, or the suite's own with --plugin-command) the suite
serves v1beta1.Registration on kubelet.sock there, as the kubelet does, and records every
RegisterRequest; the plugin's endpoint is then the socket it named. With --socket only the
plugin's own service is exercised (no registration cases). Calls go through nodeagent's own
device plugin client (devices/plugin_client.py) where it fits, and through the raw stub
where a case needs a request the kubelet's client never builds (several containers at once).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from prometheus_client import CollectorRegistry

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.conformance.model import fail
from nodeagent.conformance.process import PluginProcess, expand
from nodeagent.devices.model import PluginOptions
from nodeagent.devices.plugin_client import GrpcPluginConnection, GrpcPluginDialer
from nodeagent.devices.registration_service import clean_device_plugins_dir
from nodeagent.metrics.instruments import Instruments
from nodeagent.rpc.server import Service, UnixServer, channel

KUBELET_SOCKET = "kubelet.sock"


@dataclass(frozen=True)
class DPOptions:
    work_dir: Path
    socket: Path | None = None
    device_plugins_dir: Path | None = None
    plugin_command: str | None = None
    set_health_command: str | None = None
    wait: float = 30.0


@dataclass(frozen=True)
class Registration:
    version: str
    endpoint: str
    resource_name: str
    options: PluginOptions | None


class _Registration(api_pb2_grpc.RegistrationServicer):
    def __init__(self, queue: asyncio.Queue[Registration]) -> None:
        self._queue = queue

    async def Register(self, request: api_pb2.RegisterRequest,
                       context: grpc.aio.ServicerContext[Any, Any]) -> api_pb2.Empty:
        opts = request.options if request.HasField("options") else None
        self._queue.put_nowait(Registration(
            request.version, request.endpoint, request.resource_name,
            None if opts is None else PluginOptions(pre_start_required=opts.pre_start_required,
                                                    get_preferred_allocation_available=opts.
                                                    get_preferred_allocation_available)))
        return api_pb2.Empty()


class DPContext:
    def __init__(self, opts: DPOptions) -> None:
        self.opts = opts
        self.directory = opts.device_plugins_dir or (opts.work_dir / "device-plugins" if opts.plugin_command
                                                     else None)
        self.registrations: asyncio.Queue[Registration] = asyncio.Queue()
        self.registration: Registration | None = None
        self.process: PluginProcess | None = None
        self.setup_error = ""
        self._server: UnixServer | None = None
        self._dialer = GrpcPluginDialer(Instruments(CollectorRegistry()), allocate_timeout=30.0)
        self._conn: GrpcPluginConnection | None = None
        self._chan: grpc.aio.Channel | None = None

    @property
    def kubelet_socket(self) -> Path:
        assert self.directory is not None
        return self.directory / KUBELET_SOCKET

    async def serve_kubelet(self) -> None:
        assert self.directory is not None
        clean_device_plugins_dir(self.directory)
        self._server = UnixServer(self.kubelet_socket, [Service(
            "v1beta1.Registration",
            lambda s: api_pb2_grpc.add_RegistrationServicer_to_server(_Registration(self.registrations), s))],
            what="device plugin registration socket (conformance)")
        await self._server.start()

    async def stop_kubelet(self) -> None:
        if self._server is not None:
            await self._server.stop(0.5)
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.kubelet_socket.unlink()

    async def next_registration(self, timeout: float | None = None) -> Registration:
        try:
            return await asyncio.wait_for(self.registrations.get(), timeout or self.opts.wait)
        except TimeoutError:
            fail(f"no Register call on {self.kubelet_socket} within {timeout or self.opts.wait:g}s"
                 f"{self.diagnostics()}")

    async def setup(self) -> None:
        try:
            if self.directory is not None:
                await self.serve_kubelet()
            if self.opts.plugin_command:
                assert self.directory is not None
                values = {"device_plugins": str(self.directory)}
                self.process = PluginProcess(expand(self.opts.plugin_command, values),
                                             {"NODEAGENT_DEVICE_PLUGINS_DIR": str(self.directory)},
                                             self.opts.work_dir / "plugin.log")
                await self.process.start()
            if self.directory is not None:
                self.registration = await self.next_registration()
        except Exception as err:
            self.setup_error = str(err)

    async def close(self) -> None:
        await self._drop()
        if self.process is not None:
            await self.process.stop()
        if self._server is not None:
            await self._server.stop(0.5)

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()
        chan, self._chan = self._chan, None
        if chan is not None:
            await chan.close(None)

    def gaps(self) -> Mapping[str, str]:
        out: dict[str, str] = {}
        if self.directory is None:
            out["registration"] = "--socket given: the suite serves no kubelet.sock (use --device-plugins-dir)"
        if not self.opts.set_health_command:
            out["set-health"] = "no --set-health-command to change a device's health"
        return out

    async def after_case(self) -> None:
        return None

    @property
    def socket(self) -> Path:
        if self.opts.socket is not None:
            return self.opts.socket
        if self.registration is None:
            fail(f"the plugin did not register: {self.setup_error or 'no Register call'}{self.diagnostics()}")
        assert self.directory is not None
        return self.directory / self.registration.endpoint

    @property
    def resource(self) -> str:
        return self.registration.resource_name if self.registration else "conformance/unknown"

    async def conn(self) -> GrpcPluginConnection:
        if self._conn is None:
            try:
                self._conn = await self._dialer.dial(self.resource, self.socket)
            except Exception as err:
                fail(f"cannot dial the plugin at {self.socket}: {err}")
        return self._conn

    def stub(self) -> api_pb2_grpc.DevicePluginStub:
        if self._chan is None:
            self._chan = channel(self.socket)
        return api_pb2_grpc.DevicePluginStub(self._chan)

    async def reconnect(self) -> None:
        await self._drop()

    def diagnostics(self) -> str:
        if self.process is None:
            return ""
        tail = self.process.log_tail()
        return f"\n--- plugin log (tail) ---\n{tail}" if tail else ""
