"""The kubelet's client of one DRA plugin endpoint: DRAPlugin v1 / v1beta1 and DRAResourceHealth.

DRAResourceHealth is spoken in whichever of v1, v1beta1 and v1alpha1 the registry chose from
the plugin's registration (the three have the same messages and numbers; convert.py reads them
alike).

A thin adapter: encode (convert.py), call with the kubelet's 45 s deadline, decode,
check the answer's keys against the request the way pkg/kubelet/cm/dra/manager.go
does, and turn grpc.aio.AioRpcError into DriverCallError (`raise ... from err`) with
grpc-go's text. Each unary call is timed into dra_grpc_operations_duration_seconds
{driver_name, method_name (full path), grpc_status_code (grpc-go spelling)}; the
health stream is not counted, as upstream. The channel connects lazily to
`unix:<endpoint>`; `connected` reports its state so the registry can prefer a live
plugin of a driver.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Collection, Sequence
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
from nodeagent.dra import convert
from nodeagent.dra.ports import ClaimRef, DeviceHealthUpdate, DriverCallError, PrepareResult
from nodeagent.dra.versions import (  # the registration tokens, newest first: the preference order
    CALL_TIMEOUT,
    PLUGIN_SERVICES,
    V1_HEALTH,
    V1_PLUGIN,
    V1ALPHA1_HEALTH,
    V1BETA1_HEALTH,
)
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.executor import go_code_name, rpc_error_text
from nodeagent.rpc.server import CHANNEL_OPTIONS

logger = logging.getLogger(__name__)

CONN_CLOSING = "grpc: the client connection is closing"  # grpc-go's ErrClientConnClosing

# grpc's reconnect backoff grows to 120 s by default: a driver restarted after a long outage
# would stay unreachable that long. Unix sockets are cheap to retry, so start at 0.1 s and cap
# it at 1 s. grpc.min_reconnect_backoff_ms stays at its default on purpose: gRPC core reads it as
# the connection attempt's minimum timeout (MIN_CONNECT_TIMEOUT of gRPC's connection-backoff
# spec, 20 s, as grpc-go's MinConnectTimeout the kubelet uses); set to 0.1 s, a driver on a busy
# machine that sent its HTTP/2 SETTINGS late failed the call ("connection attempt timed out
# before receiving SETTINGS frame").
_CHANNEL_OPTIONS = (
    *CHANNEL_OPTIONS,
    ("grpc.default_authority", "localhost"),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)

_V1_SERVICE = dra_v1.DESCRIPTOR.services_by_name["DRAPlugin"].full_name
_V1BETA1_SERVICE = dra_v1beta1.DESCRIPTOR.services_by_name["DRAPlugin"].full_name


class HealthUnimplemented(DriverCallError):
    """The endpoint does not serve the health service asked for: stop asking."""


def method_path(plugin_version: str, method: str) -> str:
    service = _V1_SERVICE if plugin_version == V1_PLUGIN else _V1BETA1_SERVICE
    return f"/{service}/{method}"


def check_keys(method: str, claims: Sequence[ClaimRef], answered: Collection[str]) -> None:
    """The kubelet's response checks: no unknown claim UID, no claim left out."""
    requested = {c.uid for c in claims}
    for uid in sorted(answered):
        if uid not in requested:
            raise DriverCallError(f"{method} returned result for unknown claim UID {uid}")
    skipped = len(requested - set(answered))
    if skipped:
        raise DriverCallError(f"{method} skipped {skipped} ResourceClaims")


class DRAPluginClient:
    """Calls one plugin endpoint of a DRA driver over the service version chosen at registration."""

    def __init__(
        self,
        driver: str,
        endpoint: str,
        plugin_version: str,
        instruments: Instruments,
        *,
        timeout: float = CALL_TIMEOUT,
        interceptors: Sequence[Any] = (),
    ) -> None:
        """`interceptors`: client interceptors for the channel (the faults' hook, nodeagent.faults)."""
        if plugin_version not in PLUGIN_SERVICES:
            raise ValueError(f"DRA driver {driver}: unsupported DRAPlugin service {plugin_version!r}")
        self.driver = driver
        self.endpoint = endpoint
        self.plugin_version = plugin_version
        self._timeout = timeout
        self._closed = False
        self._duration = instruments.dra_grpc_duration
        self._channel = grpc.aio.insecure_channel(
            f"unix:{endpoint}", options=list(_CHANNEL_OPTIONS), interceptors=list(interceptors) or None
        )
        self._v1 = dra_v1_grpc.DRAPluginStub(self._channel)
        self._v1beta1 = dra_v1beta1_grpc.DRAPluginStub(self._channel)
        self._health_v1 = health_v1_grpc.DRAResourceHealthStub(self._channel)
        self._health_v1beta1 = health_v1beta1_grpc.DRAResourceHealthStub(self._channel)
        self._health_v1alpha1 = health_v1alpha1_grpc.DRAResourceHealthStub(self._channel)

    def connect(self) -> None:
        """Start connecting now (grpc-go's conn.Connect), so `connected` becomes meaningful early."""
        self._channel.get_state(try_to_connect=True)

    @property
    def connected(self) -> bool:
        return self._channel.get_state(try_to_connect=False) == grpc.ChannelConnectivity.READY

    async def watch_connection(self) -> AsyncIterator[bool]:
        """Whether the channel is connected: at once, then at every change. A lost connection is
        asked to come back at once, as the kubelet's stats handler calls conn.Connect on ConnEnd."""
        last: bool | None = None
        state = self._connect_if_idle()
        while True:
            connected = state == grpc.ChannelConnectivity.READY
            if connected != last:
                last = connected
                yield connected
            await self._channel.wait_for_state_change(state)
            state = self._connect_if_idle()

    def _connect_if_idle(self) -> grpc.ChannelConnectivity:
        """The channel's state, asking an idle channel to connect. Only an idle one: poking a channel in
        TRANSIENT_FAILURE restarts its attempt, and calls queued meanwhile wait for it instead of failing
        with Unavailable at once."""
        state = self._channel.get_state(try_to_connect=False)
        if state == grpc.ChannelConnectivity.IDLE:
            state = self._channel.get_state(try_to_connect=True)
        return state

    async def prepare(self, claims: Sequence[ClaimRef]) -> dict[str, PrepareResult]:
        method = "NodePrepareResources"
        if self.plugin_version == V1_PLUGIN:
            resp_v1 = await self._call(self._v1.NodePrepareResources, method, convert.prepare_request_v1(claims))
            results = convert.prepare_results_v1(resp_v1)
        else:
            resp_b = await self._call(
                self._v1beta1.NodePrepareResources, method, convert.prepare_request_v1beta1(claims)
            )
            results = convert.prepare_results_v1beta1(resp_b)
        check_keys(method, claims, results)
        return results

    async def unprepare(self, claims: Sequence[ClaimRef]) -> dict[str, str]:
        method = "NodeUnprepareResources"
        if self.plugin_version == V1_PLUGIN:
            resp_v1 = await self._call(
                self._v1.NodeUnprepareResources, method, convert.unprepare_request_v1(claims)
            )
            results = convert.unprepare_results(resp_v1)
        else:
            resp_b = await self._call(
                self._v1beta1.NodeUnprepareResources, method, convert.unprepare_request_v1beta1(claims)
            )
            results = convert.unprepare_results(resp_b)
        check_keys(method, claims, results)
        return results

    async def _call(self, rpc: Callable[..., Any], method: str, request: object) -> Any:
        path = method_path(self.plugin_version, method)
        start = time.perf_counter()
        code = grpc.StatusCode.OK
        try:
            return await rpc(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as err:
            code = err.code()
            raise DriverCallError(f"{method}: {rpc_error_text(err)}") from err
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not self._closed or (task is not None and task.cancelling()):
                raise
            # Our channel was closed under the call (the plugin unregistered): grpc.aio cancels the
            # call, which is the caller's failure, not its cancellation. grpc-go's text for it:
            code = grpc.StatusCode.CANCELLED
            raise DriverCallError(f"{method}: rpc error: code = Canceled desc = {CONN_CLOSING}") from None
        finally:
            self._duration.labels(self.driver, path, go_code_name(code)).observe(time.perf_counter() - start)

    async def watch_health(self, version: str) -> AsyncIterator[list[DeviceHealthUpdate]]:
        """NodeWatchResources over `version`; each message is the driver's complete device list."""
        call: Any
        if version == V1_HEALTH:
            call = self._health_v1.NodeWatchResources(health_v1.NodeWatchResourcesRequest())
        elif version == V1BETA1_HEALTH:
            call = self._health_v1beta1.NodeWatchResources(health_v1beta1.NodeWatchResourcesRequest())
        elif version == V1ALPHA1_HEALTH:
            call = self._health_v1alpha1.NodeWatchResources(health_v1alpha1.NodeWatchResourcesRequest())
        else:
            raise ValueError(f"DRA driver {self.driver}: unsupported DRAResourceHealth service {version!r}")
        try:
            async for msg in call:
                yield convert.health_updates(msg)
        except grpc.aio.AioRpcError as err:
            text = f"NodeWatchResources ({version}): {rpc_error_text(err)}"
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                raise HealthUnimplemented(text) from err
            raise DriverCallError(text) from err
        finally:
            call.cancel()

    async def close(self) -> None:
        self._closed = True
        await self._channel.close(None)
