"""DriverServer: the two sockets a DRA kubelet plugin serves, wired to a DriverBackend.

- ROOT/plugins_registry/<driver>-reg.sock: pluginregistration.Registration. GetInfo answers
  type DRAPlugin, name = driver, endpoint = absolute dra.sock path, supported_versions = the
  service tokens served (v1.DRAPlugin, v1beta1.DRAPlugin, v1.DRAResourceHealth,
  v1beta1.DRAResourceHealth, v1alpha1.DRAResourceHealth by default; `services` narrows it, so a
  test can offer any subset of the health versions). NotifyRegistrationStatus is logged and recorded.
- ROOT/plugins/<driver>/dra.sock: DRAPlugin v1 + v1beta1 and DRAResourceHealth v1 + v1beta1 +
  v1alpha1, exactly the advertised ones (health only when the backend has a HealthBoard;
  otherwise the kubelet gets Unimplemented). All health versions stream the same board.
- <dra.sock>.ctl: the JSON-lines control socket (set_health, list, pause_health, status, plus
  the driver's own commands).

The service socket is bound before the registration socket (the kubelet dials the endpoint
right after GetInfo), and a watcher re-serves a socket that vanished. This module only
decodes, calls the backend and encodes; the driver's rules live in the backend.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc

from nodeagent.apis.dra.v1 import api_pb2 as dra_v1
from nodeagent.apis.dra.v1 import api_pb2_grpc as dra_v1_grpc
from nodeagent.apis.dra.v1beta1 import api_pb2 as dra_v1beta1
from nodeagent.apis.dra.v1beta1 import api_pb2_grpc as dra_v1beta1_grpc
from nodeagent.apis.dra_health.v1 import api_pb2 as health_v1
from nodeagent.apis.dra_health.v1 import api_pb2_grpc as health_v1_grpc
from nodeagent.apis.dra_health.v1alpha1 import api_pb2 as health_v1alpha1
from nodeagent.apis.dra_health.v1alpha1 import api_pb2_grpc as health_v1alpha1_grpc
from nodeagent.apis.dra_health.v1beta1 import api_pb2 as health_v1beta1
from nodeagent.apis.dra_health.v1beta1 import api_pb2_grpc as health_v1beta1_grpc
from nodeagent.apis.pluginregistration.v1 import api_pb2 as reg_pb
from nodeagent.apis.pluginregistration.v1 import api_pb2_grpc as reg_grpc
from nodeagent.plugin_kit import Service, StartupError, UnixServer, cancel_and_wait, handle_errors
from plugins.common.control import Command, ControlServer
from plugins.dra_kit import convert
from plugins.dra_kit.model import (
    ALL_SERVICES,
    HEALTH_SERVICES,
    PLUGIN_TYPE,
    V1_HEALTH,
    V1_PLUGIN,
    V1ALPHA1_HEALTH,
    V1BETA1_HEALTH,
    V1BETA1_PLUGIN,
    ClaimRef,
    PrepareResult,
)
from plugins.dra_kit.ports import DriverBackend

logger = logging.getLogger(__name__)

Ctx = grpc.aio.ServicerContext[Any, Any]


def registration_socket(root_dir: Path, driver: str) -> Path:
    return root_dir / "plugins_registry" / f"{driver}-reg.sock"


def plugin_socket(root_dir: Path, driver: str) -> Path:
    return root_dir / "plugins" / driver / "dra.sock"


class _Registration(reg_grpc.RegistrationServicer):
    def __init__(self, server: DriverServer) -> None:
        self._s = server

    async def GetInfo(self, request: reg_pb.InfoRequest, context: Ctx) -> reg_pb.PluginInfo:
        return reg_pb.PluginInfo(
            type=PLUGIN_TYPE,
            name=self._s.driver_name,
            endpoint=str(self._s.plugin_path),
            supported_versions=list(self._s.supported_versions),
        )

    async def NotifyRegistrationStatus(
        self, request: reg_pb.RegistrationStatus, context: Ctx
    ) -> reg_pb.RegistrationStatusResponse:
        self._s.note_registration(request.plugin_registered, request.error)
        return reg_pb.RegistrationStatusResponse()


async def _prepare(server: DriverServer, claims: Sequence[ClaimRef]) -> dict[str, PrepareResult]:
    server.prepare_calls += 1
    results = dict(await server.backend.prepare(claims))
    for claim in claims:
        if claim.uid not in results:
            results[claim.uid] = PrepareResult(error=f"driver {server.driver_name} returned no result for {claim}")
    return {c.uid: results[c.uid] for c in claims}


async def _unprepare(server: DriverServer, claims: Sequence[ClaimRef]) -> dict[str, str]:
    server.unprepare_calls += 1
    errors = dict(await server.backend.unprepare(claims))
    return {c.uid: errors.get(c.uid, "") for c in claims}


class _PluginV1(dra_v1_grpc.DRAPluginServicer):
    def __init__(self, server: DriverServer) -> None:
        self._s = server

    @handle_errors
    async def NodePrepareResources(
        self, request: dra_v1.NodePrepareResourcesRequest, context: Ctx
    ) -> dra_v1.NodePrepareResourcesResponse:
        results = await _prepare(self._s, convert.claims_from_pb(request.claims))
        out: dra_v1.NodePrepareResourcesResponse = convert.prepare_response_to_pb(dra_v1, results, share_id=True)
        return out

    @handle_errors
    async def NodeUnprepareResources(
        self, request: dra_v1.NodeUnprepareResourcesRequest, context: Ctx
    ) -> dra_v1.NodeUnprepareResourcesResponse:
        errors = await _unprepare(self._s, convert.claims_from_pb(request.claims))
        out: dra_v1.NodeUnprepareResourcesResponse = convert.unprepare_response_to_pb(dra_v1, errors)
        return out


class _PluginV1beta1(dra_v1beta1_grpc.DRAPluginServicer):
    def __init__(self, server: DriverServer) -> None:
        self._s = server

    @handle_errors
    async def NodePrepareResources(
        self, request: dra_v1beta1.NodePrepareResourcesRequest, context: Ctx
    ) -> dra_v1beta1.NodePrepareResourcesResponse:
        results = await _prepare(self._s, convert.claims_from_pb(request.claims))
        out: dra_v1beta1.NodePrepareResourcesResponse = convert.prepare_response_to_pb(
            dra_v1beta1, results, share_id=False
        )
        return out

    @handle_errors
    async def NodeUnprepareResources(
        self, request: dra_v1beta1.NodeUnprepareResourcesRequest, context: Ctx
    ) -> dra_v1beta1.NodeUnprepareResourcesResponse:
        errors = await _unprepare(self._s, convert.claims_from_pb(request.claims))
        out: dra_v1beta1.NodeUnprepareResourcesResponse = convert.unprepare_response_to_pb(dra_v1beta1, errors)
        return out


async def _watch(server: DriverServer, pb: Any, token: str) -> AsyncIterator[Any]:
    board = server.backend.health_board()
    if board is None:  # served only when a board exists; kept for a backend that drops it
        return
    server.health_opens.append(token)
    server.health_streams += 1
    try:
        async for devices in board.watch():
            yield convert.health_to_pb(pb, devices)
    finally:
        server.health_streams -= 1


class _HealthV1(health_v1_grpc.DRAResourceHealthServicer):
    def __init__(self, server: DriverServer) -> None:
        self._s = server

    async def NodeWatchResources(
        self, request: health_v1.NodeWatchResourcesRequest, context: Ctx
    ) -> AsyncIterator[health_v1.NodeWatchResourcesResponse]:
        async for msg in _watch(self._s, health_v1, V1_HEALTH):
            yield msg


class _HealthV1beta1(health_v1beta1_grpc.DRAResourceHealthServicer):
    def __init__(self, server: DriverServer) -> None:
        self._s = server

    async def NodeWatchResources(
        self, request: health_v1beta1.NodeWatchResourcesRequest, context: Ctx
    ) -> AsyncIterator[health_v1beta1.NodeWatchResourcesResponse]:
        async for msg in _watch(self._s, health_v1beta1, V1BETA1_HEALTH):
            yield msg


class _HealthV1alpha1(health_v1alpha1_grpc.DRAResourceHealthServicer):
    def __init__(self, server: DriverServer) -> None:
        self._s = server

    async def NodeWatchResources(
        self, request: health_v1alpha1.NodeWatchResourcesRequest, context: Ctx
    ) -> AsyncIterator[health_v1alpha1.NodeWatchResourcesResponse]:
        async for msg in _watch(self._s, health_v1alpha1, V1ALPHA1_HEALTH):
            yield msg


def _service_name(module: Any, service: str) -> str:
    return str(module.DESCRIPTOR.services_by_name[service].full_name)


class DriverServer:
    """Serves one DRA driver's registration, plugin and control sockets under `root_dir`."""

    def __init__(
        self,
        driver_name: str,
        root_dir: Path,
        backend: DriverBackend,
        *,
        services: Sequence[str] = ALL_SERVICES,
        registration_path: Path | None = None,
        plugin_path: Path | None = None,
        commands: Mapping[str, Command] | None = None,
        watch_interval: float = 1.0,
        socket_mode: int = 0o660,
    ) -> None:
        if not driver_name:
            raise StartupError("DRA driver name must not be empty")
        unknown = [s for s in services if s not in ALL_SERVICES]
        if unknown or not any(s in (V1_PLUGIN, V1BETA1_PLUGIN) for s in services):
            raise StartupError(
                f"DRA driver {driver_name}: services {list(services)} must name at least one of "
                f"{V1_PLUGIN}, {V1BETA1_PLUGIN} and only known tokens {list(ALL_SERVICES)}"
            )
        self.driver_name = driver_name
        self.backend = backend
        self.registration_path = registration_path or registration_socket(root_dir, driver_name)
        self.plugin_path = plugin_path or plugin_socket(root_dir, driver_name)
        if not self.plugin_path.is_absolute():
            raise StartupError(f"DRA plugin socket {self.plugin_path}: socket path must be absolute")
        self.control_path = Path(f"{self.plugin_path}.ctl")
        health = backend.health_board() is not None
        self.supported_versions: tuple[str, ...] = tuple(
            s for s in services if health or s not in HEALTH_SERVICES
        )
        self.watch_interval = watch_interval
        self._mode = socket_mode
        self.registered: bool | None = None  # None: the kubelet has not told us yet
        self.registration_error = ""
        self.registration_events: list[tuple[bool, str]] = []
        self.registration_changed = asyncio.Event()
        self.prepare_calls = 0
        self.unprepare_calls = 0
        self.health_streams = 0
        self.health_opens: list[str] = []  # the service token of every NodeWatchResources call, in order
        self._plugin: UnixServer | None = None
        self._registration: UnixServer | None = None
        self._control = ControlServer(self.control_path, {**self._standard_commands(), **(commands or {})})
        self._watcher: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ registration status

    def note_registration(self, registered: bool, error: str) -> None:
        self.registered = registered
        self.registration_error = "" if registered else error
        self.registration_events.append((registered, error))
        self.registration_changed.set()
        if registered:
            logger.info("registered with the kubelet driver=%s endpoint=%s", self.driver_name, self.plugin_path)
        else:
            logger.error("registration rejected by the kubelet driver=%s error=%s", self.driver_name, error)

    # ------------------------------------------------------------------ lifecycle

    def _plugin_services(self) -> list[Service]:
        out: list[Service] = []
        tokens = set(self.supported_versions)
        if V1_PLUGIN in tokens:
            v1 = _PluginV1(self)
            out.append(Service(_service_name(dra_v1, "DRAPlugin"),
                               lambda s: dra_v1_grpc.add_DRAPluginServicer_to_server(v1, s)))
        if V1BETA1_PLUGIN in tokens:
            v1beta1 = _PluginV1beta1(self)
            out.append(Service(_service_name(dra_v1beta1, "DRAPlugin"),
                               lambda s: dra_v1beta1_grpc.add_DRAPluginServicer_to_server(v1beta1, s)))
        if V1_HEALTH in tokens:
            h1 = _HealthV1(self)
            out.append(Service(_service_name(health_v1, "DRAResourceHealth"),
                               lambda s: health_v1_grpc.add_DRAResourceHealthServicer_to_server(h1, s)))
        if V1BETA1_HEALTH in tokens:
            hb = _HealthV1beta1(self)
            out.append(Service(_service_name(health_v1beta1, "DRAResourceHealth"),
                               lambda s: health_v1beta1_grpc.add_DRAResourceHealthServicer_to_server(hb, s)))
        if V1ALPHA1_HEALTH in tokens:
            h0 = _HealthV1alpha1(self)
            out.append(Service(_service_name(health_v1alpha1, "DRAResourceHealth"),
                               lambda s: health_v1alpha1_grpc.add_DRAResourceHealthServicer_to_server(h0, s)))
        return out

    async def start(self) -> None:
        """Serve dra.sock, then the control socket, then the registration socket; start the watcher."""
        board = self.backend.health_board()
        if board is not None:
            await board.reopen()
        await self._serve_plugin()
        await self._control.start()
        await self._serve_registration()
        self._watcher = asyncio.ensure_future(self._watch())

    async def stop(self, grace: float = 1.0) -> None:
        """Withdraw registration first (the kubelet unregisters us), end health streams, unbind."""
        watcher, self._watcher = self._watcher, None
        await cancel_and_wait([watcher])
        if self._registration is not None:
            await self._registration.stop(grace)
            self._registration = None
        board = self.backend.health_board()
        if board is not None:
            await board.close()
        await self._control.stop()
        if self._plugin is not None:
            await self._plugin.stop(grace)
            self._plugin = None

    async def _serve_plugin(self) -> None:
        self._plugin = UnixServer(self.plugin_path, self._plugin_services(), mode=self._mode,
                                  what="DRA plugin socket")
        await self._plugin.start()

    async def _serve_registration(self) -> None:
        registration = _Registration(self)
        self._registration = UnixServer(
            self.registration_path,
            [Service(_service_name(reg_pb, "Registration"),
                     lambda s: reg_grpc.add_RegistrationServicer_to_server(registration, s))],
            mode=self._mode,
            what="DRA registration socket",
        )
        await self._registration.start()

    async def _watch(self) -> None:
        """Re-serve a socket somebody removed (a kubelet start cleans its folders)."""
        while True:
            await asyncio.sleep(self.watch_interval)
            try:
                if not self.plugin_path.exists():
                    logger.warning("plugin socket vanished, serving again socket=%s", self.plugin_path)
                    if self._plugin is not None:
                        await self._plugin.stop(0)
                    await self._serve_plugin()
                if not self.control_path.exists():
                    await self._control.start()
                if not self.registration_path.exists():
                    logger.warning("registration socket vanished, serving again socket=%s",
                                   self.registration_path)
                    if self._registration is not None:
                        await self._registration.stop(0)
                    await self._serve_registration()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # keep trying next period
                logger.warning("re-serving sockets failed driver=%s err=%s", self.driver_name, err)

    # ------------------------------------------------------------------ control commands

    def _standard_commands(self) -> dict[str, Command]:
        async def set_health(arg: Any) -> dict[str, Any]:
            board = self._board()
            if not isinstance(arg, dict):
                raise ValueError('set_health wants {"device": "POOL/DEVICE", "health": "Unhealthy"}')
            pool, _, device = str(arg.get("device", "")).partition("/")
            if not device:
                raise ValueError(f'device must be "POOL/DEVICE", got "{arg.get("device")}"')
            try:
                board.get(pool, device)
            except KeyError:
                raise KeyError(f"driver {self.driver_name} has no device {pool}/{device}") from None
            changed = await board.set(pool, device, str(arg.get("health", "")), str(arg.get("message", "")))
            return {"changed": changed}

        async def list_devices(arg: Any) -> dict[str, Any]:
            board = self._board()
            return {"driver": self.driver_name, "paused": board.paused,
                    "devices": [{"pool": d.pool, "device": d.device, "health": d.health,
                                 "timeoutSeconds": d.timeout_seconds, "message": d.message}
                                for d in board.snapshot()]}

        async def pause_health(arg: Any) -> dict[str, Any]:
            await self._board().pause(bool(arg.get("paused", True)) if isinstance(arg, dict) else bool(arg))
            return {}

        async def status(arg: Any) -> dict[str, Any]:
            return {"driver": self.driver_name, "registered": self.registered,
                    "registrationError": self.registration_error,
                    "supportedVersions": list(self.supported_versions),
                    "prepareCalls": self.prepare_calls, "unprepareCalls": self.unprepare_calls,
                    "healthStreams": self.health_streams}

        return {"set_health": set_health, "list": list_devices, "pause_health": pause_health, "status": status}

    def _board(self) -> Any:
        board = self.backend.health_board()
        if board is None:
            raise ValueError(f"driver {self.driver_name} reports no device health")
        return board
