"""The fake device plugin itself: serves v1beta1.DevicePlugin, registers, follows the kubelet.

Upstream contract (so it runs against a real kubelet too): serve on
<device-plugins dir>/<socketName> first, then call Register on kubelet.sock with
version v1beta1 and the socket's file name as endpoint; ListAndWatch streams a complete
snapshot at once and again on every health change; re-register whenever kubelet.sock is
recreated (its inode changes) and re-serve if our own socket vanishes (the kubelet
removes stale sockets when it starts). Device health is switched at runtime through a
JSON-lines control socket next to the plugin socket (`<socket>.ctl`, plugins.common.control):
  {"set_health": {"device": "gpu-1", "health": "Unhealthy"}} -> {"ok": true}
  {"list": {}} -> {"ok": true, "devices": [...]}
  {"set_allocate_error": "text"} / {"set_allocate_delay": 1.5} -> {"ok": true}
  {"set_pre_start_error": "text"} -> {"ok": true} (PreStartContainer fails with it; "" succeeds again)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import grpc

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.plugin_kit import Service, UnixServer, cancel_and_wait, channel, deviceplugin
from nodeagent.plugin_kit.deviceplugin import HEALTHY, UNHEALTHY, VERSION, Device, PluginOptions
from plugins.common.control import Command, ControlServer
from plugins.fake_device_plugin.profile import DEFAULT_DIR, Profile

logger = logging.getLogger(__name__)

REGISTER_TIMEOUT = 15.0  # the kubelet dials us inside Register with a 10 s limit


def _pack(available: Sequence[str], must: Sequence[str], size: int, numa: dict[str, int | None]) -> list[str]:
    """Preferred allocation: must-include first, then fill NUMA nodes already used, fullest first."""
    chosen = list(dict.fromkeys(must))[:size]
    rest = [i for i in available if i not in chosen]
    by_node: dict[int | None, list[str]] = {}
    for i in rest:
        by_node.setdefault(numa.get(i), []).append(i)
    used = {numa.get(i) for i in chosen}
    order = sorted(by_node, key=lambda n: (n not in used, -len(by_node[n]), -1 if n is None else n))
    for node in order:
        for i in by_node[node]:
            if len(chosen) >= size:
                return chosen
            chosen.append(i)
    return chosen


class _Servicer(api_pb2_grpc.DevicePluginServicer):
    def __init__(self, plugin: FakeDevicePlugin) -> None:
        self._p = plugin

    async def GetDevicePluginOptions(
        self, request: api_pb2.Empty, context: grpc.aio.ServicerContext[Any, Any]
    ) -> api_pb2.DevicePluginOptions:
        return deviceplugin.options_to_pb(self._p.options)

    async def ListAndWatch(
        self, request: api_pb2.Empty, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[api_pb2.ListAndWatchResponse]:
        async for devices in self._p.watch_devices():
            yield deviceplugin.devices_to_pb(devices)

    async def GetPreferredAllocation(
        self, request: api_pb2.PreferredAllocationRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> api_pb2.PreferredAllocationResponse:
        numa = {d.id: (d.numa_nodes[0] if d.numa_nodes else None) for d in self._p.devices()}
        out = api_pb2.PreferredAllocationResponse()
        for req in request.container_requests:
            ids = _pack(list(req.available_deviceIDs), list(req.must_include_deviceIDs),
                        req.allocation_size, numa)
            out.container_responses.append(api_pb2.ContainerPreferredAllocationResponse(deviceIDs=ids))
        return out

    async def Allocate(
        self, request: api_pb2.AllocateRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> api_pb2.AllocateResponse:
        self._p.allocate_calls += 1
        if self._p.allocate_delay > 0:
            await asyncio.sleep(self._p.allocate_delay)
        if self._p.allocate_error:
            await context.abort(grpc.StatusCode.INTERNAL, self._p.allocate_error)
        known = {d.id: n for n, d in enumerate(self._p.devices())}
        out = api_pb2.AllocateResponse()
        for req in request.container_requests:
            unknown = [i for i in req.devices_ids if i not in known]
            if unknown:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unknown devices {unknown}")
            alloc = self._p.profile.allocate.render(list(req.devices_ids), known)
            out.container_responses.append(deviceplugin.allocation_to_pb(alloc))
        return out

    async def PreStartContainer(
        self, request: api_pb2.PreStartContainerRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> api_pb2.PreStartContainerResponse:
        self._p.pre_start_calls.append(tuple(request.devices_ids))
        if self._p.pre_start_error:
            await context.abort(grpc.StatusCode.INTERNAL, self._p.pre_start_error)
        return api_pb2.PreStartContainerResponse()


class FakeDevicePlugin:
    def __init__(
        self,
        profile: Profile,
        *,
        device_plugins_dir: Path | None = None,
        kubelet_socket: Path | None = None,
        watch_interval: float | None = None,
    ) -> None:
        self.profile = profile
        self.dir = device_plugins_dir or profile.device_plugins_dir or DEFAULT_DIR
        self.socket_path = self.dir / profile.socket_name
        self.control_path = Path(f"{self.socket_path}.ctl")
        self.kubelet_socket = kubelet_socket or self.dir / "kubelet.sock"
        self.options = PluginOptions(
            pre_start_required=profile.pre_start_required,
            get_preferred_allocation_available=profile.get_preferred_allocation,
        )
        self.allocate_delay = profile.allocate_delay
        self.allocate_error = profile.allocate_error
        self.pre_start_error = ""  # non-empty: PreStartContainer fails with it (set_pre_start_error)
        self.allocate_calls = 0
        self.pre_start_calls: list[tuple[str, ...]] = []
        self.registrations = 0
        self._interval = profile.watch_interval if watch_interval is None else watch_interval
        self._devices = {
            d.id: Device(d.id, d.health, () if d.numa_node is None else (d.numa_node,))
            for d in profile.devices
        }
        self._version = 0
        self._changed = asyncio.Condition()
        self._stopping = False
        self._server: UnixServer | None = None
        # umask mode and no list of known commands: as this plugin has always answered
        self._control = ControlServer(self.control_path, self._commands(), mode=None, list_known=False)
        self._watcher: asyncio.Task[None] | None = None
        self._registered_as: tuple[int, int] | None = None  # (st_ino, st_ctime_ns) of kubelet.sock

    # ------------------------------------------------------------------ devices

    def devices(self) -> list[Device]:
        return list(self._devices.values())

    async def set_health(self, device_id: str, health: str) -> None:
        if device_id not in self._devices:
            raise KeyError(device_id)
        if health not in (HEALTHY, UNHEALTHY):
            raise ValueError(f'health must be "{HEALTHY}" or "{UNHEALTHY}", got "{health}"')
        old = self._devices[device_id]
        if old.health == health:
            return
        self._devices[device_id] = Device(old.id, health, old.numa_nodes)
        logger.info("device health changed device=%s health=%s", device_id, health)
        async with self._changed:
            self._version += 1
            self._changed.notify_all()

    async def watch_devices(self) -> AsyncIterator[list[Device]]:
        seen = -1
        while True:
            async with self._changed:
                while not self._stopping and self._version == seen:
                    await self._changed.wait()
                if self._stopping:
                    return
                seen = self._version
            yield self.devices()

    # ------------------------------------------------------------------ lifecycle

    async def start(self, *, register: bool = True) -> None:
        """Serve, then register (a failed registration is retried by the watcher)."""
        self._stopping = False
        await self._serve()
        if register:
            with contextlib.suppress(Exception):
                await self.register()
            self._watcher = asyncio.ensure_future(self._watch())

    async def stop(self) -> None:
        """End every ListAndWatch stream, stop serving and remove our sockets."""
        async with self._changed:
            self._stopping = True
            self._changed.notify_all()
        watcher, self._watcher = self._watcher, None
        await cancel_and_wait([watcher])
        await self._unserve()

    async def _serve(self) -> None:
        servicer = _Servicer(self)
        self._server = UnixServer(
            self.socket_path,
            [Service("v1beta1.DevicePlugin",
                     lambda s: api_pb2_grpc.add_DevicePluginServicer_to_server(servicer, s))],
            mode=0o660,
            what="device plugin socket",
        )
        await self._server.start()
        await self._control.start()

    async def _unserve(self) -> None:
        await self._control.stop()
        if self._server is not None:
            await self._server.stop(0.5)
            self._server = None

    async def register(self) -> None:
        """Register with the kubelet; raises grpc.aio.AioRpcError when refused."""
        st = os.stat(self.kubelet_socket)
        req = api_pb2.RegisterRequest(
            version=VERSION,
            endpoint=self.profile.socket_name,
            resource_name=self.profile.resource_name,
            options=deviceplugin.options_to_pb(self.options),
        )
        async with channel(self.kubelet_socket) as chan:
            await api_pb2_grpc.RegistrationStub(chan).Register(req, timeout=REGISTER_TIMEOUT)
        self._registered_as = (st.st_ino, st.st_ctime_ns)
        self.registrations += 1
        logger.info("registered resource=%s endpoint=%s kubelet=%s",
                    self.profile.resource_name, self.profile.socket_name, self.kubelet_socket)

    def _kubelet_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.kubelet_socket)
        except OSError:
            return None
        return (st.st_ino, st.st_ctime_ns)

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                if not self.socket_path.exists():
                    logger.warning("own socket vanished, serving again socket=%s", self.socket_path)
                    await self._unserve()
                    await self._serve()
                    self._registered_as = None
                elif not self.control_path.exists():
                    await self._control.start()
                ident = self._kubelet_identity()
                if ident is not None and ident != self._registered_as:
                    logger.info("kubelet socket new or recreated, registering socket=%s", self.kubelet_socket)
                    await self.register()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # keep watching: the kubelet may come back
                logger.warning("registration attempt failed err=%s", err)

    # ------------------------------------------------------------------ control commands

    def _commands(self) -> dict[str, Command]:
        return {
            "set_health": self._cmd_set_health,
            "list": self._cmd_list,
            "set_allocate_error": self._cmd_set_allocate_error,
            "set_allocate_delay": self._cmd_set_allocate_delay,
            "set_pre_start_error": self._cmd_set_pre_start_error,
        }

    async def _cmd_set_health(self, arg: Any) -> dict[str, Any]:
        if not isinstance(arg, dict):
            raise ValueError("unknown command 'set_health'")
        try:
            await self.set_health(str(arg.get("device")), str(arg.get("health")))
        except KeyError:
            raise KeyError(f"{self.profile.resource_name} has no device {arg.get('device')}") from None
        return {}

    async def _cmd_list(self, arg: Any) -> dict[str, Any]:
        return {"resource": self.profile.resource_name,
                "devices": [{"id": d.id, "health": d.health, "numa": list(d.numa_nodes)}
                            for d in self.devices()]}

    async def _cmd_set_allocate_error(self, arg: Any) -> dict[str, Any]:
        self.allocate_error = str(arg or "")
        return {}

    async def _cmd_set_pre_start_error(self, arg: Any) -> dict[str, Any]:
        self.pre_start_error = str(arg or "")
        return {}

    async def _cmd_set_allocate_delay(self, arg: Any) -> dict[str, Any]:
        if not isinstance(arg, (int, float)):
            raise ValueError("unknown command 'set_allocate_delay'")
        self.allocate_delay = float(arg)
        return {}
