"""The kubelet's side of v1beta1.DevicePlugin: dial, options, ListAndWatch, allocation calls.

A thin adapter implementing devices/ports.py: it encodes, calls and decodes, and turns
grpc.aio.AioRpcError into Unavailable/PluginCallError (`raise ... from err`). No
business rules here. Allocate has a deadline (cfg.agent.allocate_timeout: the kubelet
has none, we do) and is timed into kubelet_device_plugin_alloc_duration_seconds,
PreStartContainer has the kubelet's 30 s deadline. Also the small JSON-lines client
for the fake plugin's control socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
from prometheus_client import Histogram

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.devices import convert
from nodeagent.devices.model import PRE_START_TIMEOUT, ContainerAllocation, Device, PluginOptions
from nodeagent.devices.snapshot_decode import SnapshotDecoder
from nodeagent.errors import FailedPrecondition, NodeAgentError, NotFound, PluginCallError, Unavailable
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.executor import rpc_error_text
from nodeagent.rpc.server import channel

logger = logging.getLogger(__name__)

DIAL_TIMEOUT = 10.0  # the kubelet's blocking dial limit inside Register
INLINE_CONVERT_MAX = 2000  # larger ListAndWatch snapshots are converted off the event loop


def _wrap(err: grpc.aio.AioRpcError, what: str, path: Path) -> NodeAgentError:
    code = err.code()
    text = f"{what} {path}: {code.name}: {err.details()}"
    if code == grpc.StatusCode.UNAVAILABLE:
        return Unavailable(text)
    return PluginCallError(text)


def _go_status_error(err: grpc.aio.AioRpcError) -> NodeAgentError:
    """What the kubelet's devicemanager passes on from a failed Allocate: the grpc-go status error
    itself ('rpc error: code = Internal desc = ...'), with no call or socket named; the pod's
    UnexpectedAdmissionError and status.message carry it."""
    text = rpc_error_text(err)
    if err.code() == grpc.StatusCode.UNAVAILABLE:
        return Unavailable(text)
    return PluginCallError(text)


async def _probe_socket(path: Path, timeout: float) -> None:
    """Fail fast (as a blocking Go dial would) when nothing listens on the socket."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path)), timeout)
    except TimeoutError:
        raise Unavailable(f"dial unix {path}: context deadline exceeded") from None
    except OSError as err:
        reason = errno.errorcode.get(err.errno or 0, "")
        text = {"ENOENT": "no such file or directory", "ECONNREFUSED": "connection refused"}.get(
            reason, err.strerror or str(err)
        )
        raise Unavailable(f"dial unix {path}: connect: {text}") from err
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


class GrpcPluginConnection:
    def __init__(
        self,
        resource: str,
        path: Path,
        chan: grpc.aio.Channel,
        instruments: Instruments,
        allocate_timeout: float,
        options_timeout: float = DIAL_TIMEOUT,
        inline_convert_max: int = INLINE_CONVERT_MAX,
    ) -> None:
        """`options_timeout`: GetDevicePluginOptions' deadline, inside Register (see get_options);
        `inline_convert_max`: larger ListAndWatch snapshots are converted in a worker thread."""
        self.resource = resource
        self._options_timeout = options_timeout
        self._inline_convert_max = inline_convert_max
        self.path = path
        self._channel = chan
        self._stub = api_pb2_grpc.DevicePluginStub(chan)
        self._instruments = instruments
        self._allocate_timeout = allocate_timeout
        # This resource's child of kubelet_device_plugin_alloc_duration_seconds, looked up once
        # (at the first Allocate, so the series appears when it has a sample, as before).
        self._alloc_duration: Histogram | None = None

    async def get_options(self) -> PluginOptions:
        """The kubelet asks without a deadline of its own but within Register's 10 s connection budget;
        a silent plugin here once held Register open for over 70 s, so the dial's limit applies."""
        try:
            msg = await self._stub.GetDevicePluginOptions(api_pb2.Empty(), timeout=self._options_timeout)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise PluginCallError(
                    f"GetDevicePluginOptions {self.path}: no answer within {self._options_timeout:g}s"
                ) from err
            raise _wrap(err, "GetDevicePluginOptions", self.path) from err
        return convert.options_from_pb(msg)

    async def list_and_watch(self) -> AsyncIterator[list[Device]]:
        """Each snapshot the plugin sends, converted; a snapshot equal to the one before is skipped
        (nothing changed), only the devices that changed are decoded (devices/snapshot_decode.py),
        and a large one is handled in a worker thread: 100,000 devices took seconds to convert and
        stalled every socket (pod-resources List p99 once 3.3 s)."""
        call = self._stub.ListAndWatch(api_pb2.Empty())
        decoder = SnapshotDecoder()  # decodes only what changed since the previous snapshot
        try:
            async for msg in call:
                if len(msg.devices) > self._inline_convert_max:
                    snapshot = await asyncio.to_thread(decoder.decode, msg)
                else:
                    snapshot = decoder.decode(msg)
                if snapshot is not None:
                    yield snapshot
        except grpc.aio.AioRpcError as err:
            raise _wrap(err, "ListAndWatch", self.path) from err
        finally:
            call.cancel()

    async def get_preferred_allocation(
        self, available: Sequence[str], must_include: Sequence[str], size: int
    ) -> tuple[str, ...]:
        req = api_pb2.PreferredAllocationRequest(
            container_requests=[
                api_pb2.ContainerPreferredAllocationRequest(
                    available_deviceIDs=list(available),
                    must_include_deviceIDs=list(must_include),
                    allocation_size=size,
                )
            ]
        )
        try:
            resp = await self._stub.GetPreferredAllocation(req, timeout=self._allocate_timeout)
        except grpc.aio.AioRpcError as err:
            raise _wrap(err, "GetPreferredAllocation", self.path) from err
        if not resp.container_responses:
            return ()
        return tuple(resp.container_responses[0].deviceIDs)

    async def allocate(self, device_ids: Sequence[str]) -> ContainerAllocation:
        req = api_pb2.AllocateRequest(
            container_requests=[api_pb2.ContainerAllocateRequest(devices_ids=list(device_ids))]
        )
        start = time.perf_counter()
        try:
            resp = await self._stub.Allocate(req, timeout=self._allocate_timeout)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise PluginCallError(
                    f"Allocate {self.path}: no answer within {self._allocate_timeout:g}s"
                ) from err
            raise _go_status_error(err) from err
        finally:
            if self._alloc_duration is None:
                self._alloc_duration = self._instruments.device_plugin_alloc_duration.labels(self.resource)
            self._alloc_duration.observe(time.perf_counter() - start)
        if not resp.container_responses:
            raise PluginCallError(f"no containers return in allocation response from {self.path}")
        return convert.allocation_from_pb(resp.container_responses[0])

    async def pre_start_container(self, device_ids: Sequence[str]) -> None:
        req = api_pb2.PreStartContainerRequest(devices_ids=list(device_ids))
        try:
            await self._stub.PreStartContainer(req, timeout=PRE_START_TIMEOUT)
        except grpc.aio.AioRpcError as err:
            raise _go_status_error(err) from err  # passed on as Allocate's is (manager.go)

    async def close(self) -> None:
        await self._channel.close(None)


class GrpcPluginDialer:
    """Dials plugin sockets with a bounded wait (the kubelet's 10 s blocking dial)."""

    def __init__(
        self, instruments: Instruments, *, allocate_timeout: float, dial_timeout: float = DIAL_TIMEOUT,
        interceptors: Callable[[str], Sequence[Any]] | None = None,
        inline_convert_max: int = INLINE_CONVERT_MAX,
    ) -> None:
        """`interceptors(resource)`: client interceptors for the channel to that resource's plugin."""
        self._inline_convert_max = inline_convert_max
        self._instruments = instruments
        self._allocate_timeout = allocate_timeout
        self._dial_timeout = dial_timeout
        self._interceptors = interceptors

    async def dial(self, resource: str, socket_path: Path) -> GrpcPluginConnection:
        await _probe_socket(socket_path, self._dial_timeout)
        chan = channel(socket_path, interceptors=self._interceptors(resource) if self._interceptors else None)
        try:
            await asyncio.wait_for(chan.channel_ready(), self._dial_timeout)
        except TimeoutError:
            await chan.close(None)
            raise Unavailable(f"dial unix {socket_path}: context deadline exceeded") from None
        return GrpcPluginConnection(resource, socket_path, chan, self._instruments, self._allocate_timeout,
                                    options_timeout=self._dial_timeout, inline_convert_max=self._inline_convert_max)


class ControlClient:
    """Client of the fake device plugin's control socket: one JSON object per line each way."""

    def __init__(self, timeout: float = 5.0) -> None:
        self._timeout = timeout

    async def set_health(self, control_socket: Path, device_id: str, health: str) -> None:
        reply = await self.call(control_socket, {"set_health": {"device": device_id, "health": health}})
        if not reply.get("ok"):
            text = f"device plugin control {control_socket}: {reply.get('error', 'failed')}"
            raise NotFound(text) if reply.get("code") == "NotFound" else FailedPrecondition(text)

    async def call(self, control_socket: Path, request: dict[str, object]) -> dict[str, object]:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(str(control_socket)), self._timeout
            )
        except (OSError, TimeoutError) as err:
            raise FailedPrecondition(
                f"no control socket {control_socket} ({err.__class__.__name__}): only nodeagent's "
                "fake device plugin can switch device health"
            ) from err
        try:
            writer.write(json.dumps(request).encode() + b"\n")
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), self._timeout)
        except (OSError, TimeoutError) as err:
            raise Unavailable(f"device plugin control {control_socket}: {err!r}") from err
        finally:
            writer.close()
        try:
            reply = json.loads(line)
        except ValueError as err:
            raise Unavailable(f"device plugin control {control_socket}: bad reply {line[:80]!r}") from err
        if not isinstance(reply, dict):
            raise Unavailable(f"device plugin control {control_socket}: bad reply {line[:80]!r}")
        return reply
