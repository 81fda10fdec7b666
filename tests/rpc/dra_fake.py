"""A small in-test DRA driver: pluginregistration on a registration socket, DRAPlugin v1/v1beta1
and DRAResourceHealth v1/v1beta1/v1alpha1 on its service socket, each piece switchable, every call recorded.

Shared by test_dra_registration.py and test_dra_client.py. Not the real fake driver (plugins/):
this one exists to misbehave on request (failing GetInfo, bad PluginInfo, per-claim errors,
missing or extra keys, RPC errors, streams that end).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

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
from nodeagent.apis.pluginregistration.v1 import api_pb2 as reg_pb2
from nodeagent.apis.pluginregistration.v1 import api_pb2_grpc as reg_grpc
from nodeagent.dra.registry import DRARegistry
from nodeagent.pluginwatcher.watcher import PluginWatcher
from nodeagent.rpc.server import Service, UnixServer

ALL_VERSIONS = ("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth")


@dataclass
class FakeDRADriver:
    name: str
    reg_path: Path
    dra_path: Path
    versions: tuple[str, ...] = ALL_VERSIONS
    plugin_type: str = "DRAPlugin"
    endpoint: str | None = None  # None: dra_path; "": let the kubelet use the registration socket
    serve_v1: bool = True
    serve_v1beta1: bool = True
    health: tuple[str, ...] = ("v1", "v1alpha1")  # health services actually served ("v1beta1" too)
    health_abort: grpc.StatusCode | None = None  # health servicers answer with this code
    getinfo_failures: int = 0
    # prepare/unprepare behaviour
    claim_errors: dict[str, str] = field(default_factory=dict)
    extra_uid: str | None = None
    skip_uids: set[str] = field(default_factory=set)
    abort: grpc.StatusCode | None = None
    delay: float = 0.0
    share_id: str | None = None
    # records
    getinfo_calls: int = 0
    notifications: asyncio.Queue[tuple[bool, str]] = field(default_factory=asyncio.Queue)
    calls: list[tuple[str, str, list[tuple[str, str, str]]]] = field(default_factory=list)  # (version, method, claims)
    health_opens: list[str] = field(default_factory=list)
    health_closed: int = 0
    _streams: list[tuple[str, asyncio.Queue[list[tuple[str, str, int]] | None]]] = field(default_factory=list)
    _servers: list[UnixServer] = field(default_factory=list)

    async def start(self) -> None:
        await self.start_service()
        await self.start_registration()

    async def start_service(self) -> None:
        if self.endpoint == "":
            return  # everything is served on the registration socket
        server = UnixServer(self.dra_path, self._dra_services(), what="fake dra")
        await server.start()
        self._servers.append(server)

    async def start_registration(self) -> None:
        services = [_service(reg_pb2, "Registration", lambda s: reg_grpc.add_RegistrationServicer_to_server(
            _Registration(self), s))]
        if self.endpoint == "":
            services += self._dra_services()
        server = UnixServer(self.reg_path, services, what="fake dra registration")
        await server.start()
        self._servers.append(server)

    async def stop_registration(self) -> None:
        for server in [s for s in self._servers if s.path == self.reg_path]:
            await server.stop(0)
            self._servers.remove(server)

    async def stop(self) -> None:
        for q in [q for _, q in self._streams]:
            q.put_nowait(None)
        for server in self._servers:
            await server.stop(0)
        self._servers.clear()

    def _dra_services(self) -> list[Service]:
        out: list[Service] = []
        if self.serve_v1:
            out.append(_service(dra_v1, "DRAPlugin",
                                lambda s: dra_v1_grpc.add_DRAPluginServicer_to_server(_DRA(self, "v1"), s)))
        if self.serve_v1beta1:
            out.append(_service(dra_v1beta1, "DRAPlugin", lambda s: dra_v1beta1_grpc.add_DRAPluginServicer_to_server(
                cast(Any, _DRA(self, "v1beta1")), s)))
        if "v1" in self.health:
            out.append(_service(health_v1, "DRAResourceHealth", lambda s: health_v1_grpc.
                                add_DRAResourceHealthServicer_to_server(_Health(self, "v1"), s)))
        if "v1beta1" in self.health:
            out.append(_service(health_v1beta1, "DRAResourceHealth", lambda s: health_v1beta1_grpc.
                                add_DRAResourceHealthServicer_to_server(cast(Any, _Health(self, "v1beta1")), s)))
        if "v1alpha1" in self.health:
            out.append(_service(health_v1alpha1, "DRAResourceHealth", lambda s: health_v1alpha1_grpc.
                                add_DRAResourceHealthServicer_to_server(cast(Any, _Health(self, "v1alpha1")), s)))
        return out

    def push_health(self, devices: list[tuple[str, str, int]]) -> None:
        """Send one message (pool, device, HealthStatus value) on every open stream."""
        for _, q in self._streams:
            q.put_nowait(devices)

    def end_streams(self) -> None:
        for _, q in self._streams:
            q.put_nowait(None)

    @property
    def open_streams(self) -> int:
        return len(self._streams)


def _service(module: Any, name: str, add: Any) -> Service:
    return Service(module.DESCRIPTOR.services_by_name[name].full_name, add)


class _Registration(reg_grpc.RegistrationServicer):
    def __init__(self, driver: FakeDRADriver) -> None:
        self.d = driver

    async def GetInfo(self, request: Any, context: Any) -> reg_pb2.PluginInfo:
        self.d.getinfo_calls += 1
        if self.d.getinfo_failures > 0:
            self.d.getinfo_failures -= 1
            await context.abort(grpc.StatusCode.UNAVAILABLE, "not ready yet")
        endpoint = str(self.d.dra_path) if self.d.endpoint is None else self.d.endpoint
        return reg_pb2.PluginInfo(
            type=self.d.plugin_type, name=self.d.name, endpoint=endpoint, supported_versions=list(self.d.versions)
        )

    async def NotifyRegistrationStatus(self, request: Any, context: Any) -> reg_pb2.RegistrationStatusResponse:
        self.d.notifications.put_nowait((request.plugin_registered, request.error))
        return reg_pb2.RegistrationStatusResponse()


class _DRA(dra_v1_grpc.DRAPluginServicer):
    def __init__(self, driver: FakeDRADriver, version: str) -> None:
        self.d = driver
        self.version = version
        self.pb: Any = dra_v1 if version == "v1" else dra_v1beta1

    async def _before(self, method: str, request: Any, context: Any) -> None:
        self.d.calls.append((self.version, method, [(c.namespace, c.uid, c.name) for c in request.claims]))
        if self.d.delay:
            await asyncio.sleep(self.d.delay)
        if self.d.abort is not None:
            await context.abort(self.d.abort, "boom")

    def _uids(self, request: Any) -> list[str]:
        uids = [c.uid for c in request.claims if c.uid not in self.d.skip_uids]
        if self.d.extra_uid:
            uids.append(self.d.extra_uid)
        return uids

    async def NodePrepareResources(self, request: Any, context: Any) -> Any:
        await self._before("NodePrepareResources", request, context)
        claims = {}
        for uid in self._uids(request):
            if uid in self.d.claim_errors:
                claims[uid] = self.pb.NodePrepareResourceResponse(error=self.d.claim_errors[uid])
                continue
            dev: dict[str, Any] = dict(request_names=["gpu"], pool_name="node-1", device_name=f"dev-{uid}",
                                       cdi_device_ids=[f"example.com/gpu={uid}"])
            if self.version == "v1" and self.d.share_id is not None:
                dev["share_id"] = self.d.share_id
            claims[uid] = self.pb.NodePrepareResourceResponse(devices=[self.pb.Device(**dev)])
        return self.pb.NodePrepareResourcesResponse(claims=claims)

    async def NodeUnprepareResources(self, request: Any, context: Any) -> Any:
        await self._before("NodeUnprepareResources", request, context)
        claims = {uid: self.pb.NodeUnprepareResourceResponse(error=self.d.claim_errors.get(uid, ""))
                  for uid in self._uids(request)}
        return self.pb.NodeUnprepareResourcesResponse(claims=claims)


class _Health(health_v1_grpc.DRAResourceHealthServicer):
    def __init__(self, driver: FakeDRADriver, version: str) -> None:
        self.d = driver
        self.version = version
        self.pb: Any = {"v1": health_v1, "v1beta1": health_v1beta1}.get(version, health_v1alpha1)

    async def NodeWatchResources(self, request: Any, context: Any) -> AsyncIterator[Any]:
        self.d.health_opens.append(self.version)
        if self.d.health_abort is not None:
            await context.abort(self.d.health_abort, "not here")
        q: asyncio.Queue[list[tuple[str, str, int]] | None] = asyncio.Queue()
        entry = (self.version, q)
        self.d._streams.append(entry)
        try:
            while True:
                item = await q.get()
                if item is None:
                    return
                yield self.pb.NodeWatchResourcesResponse(devices=[
                    self.pb.DeviceHealth(device=self.pb.DeviceIdentifier(pool_name=p, device_name=n), health=h,
                                         last_updated_time=1_700_000_000, health_check_timeout_seconds=7,
                                         message=f"{n} is {h}")
                    for p, n, h in item
                ])
        finally:
            self.d._streams.remove(entry)
            self.d.health_closed += 1


async def stop_rig(watcher: PluginWatcher, dra: DRARegistry, drivers: Iterable[FakeDRADriver]) -> None:
    """Teardown of a registration rig: stop watching, close the registry, stop every fake driver."""
    await watcher.stop()
    await dra.close()
    for d in drivers:
        await d.stop()
