"""The registered DRA drivers: the plugin watcher's DRAPlugin handler and the manager's DriverRegistry.

Validation and choice of service follow pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go,
with the kubelet's error texts. One difference on purpose: v1.DRAPlugin is preferred
over v1beta1.DRAPlugin whatever order the plugin lists them in (upstream takes the
plugin's first supported token; the upstream helper lists v1 first, so this agrees in
practice). A driver may have several plugins (rolling update); calls go to the newest
connected one, else the newest. Each plugin gets its own health stream, held open
while it is registered, over the newest DRAResourceHealth version both sides speak
(v1, then v1beta1, then v1alpha1), learnt from the registration's supported services as
the kubelet's pickHealthService does; a plugin that advertises none gets no stream at
all (released 1.34-1.36 kubelets tried v1alpha1 blindly; master no longer does). The
stream is reopened `health_retry` seconds (5 s) after it ends or fails; UNIMPLEMENTED stops it for that
registration, so a driver without health costs one call. Every message goes to the
on_health listeners; registration and the departure of a driver's last plugin go to
the on_driver listeners. No claim bookkeeping here: that is the manager's.

Each plugin's connection is watched (the kubelet's monitoredPlugin/HandleConn): a lost one is
asked to come back at once, and after every change of a driver's plugins (registered,
unregistered, connected, disconnected) the driver's usability (at least one plugin connected)
goes to the SliceWiper, which wipes the node's slices of a driver unusable for 30 s. So a
rolling update (`<driver>-<podUID>-reg.sock`, own dra socket) never loses them: while the old
instance leaves, the new one is connected. Calls in flight on a plugin that unregisters fail
(its channel is closed, as upstream closes the conn) and the pod manager retries them, now on
the plugin that remains.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodeagent.dra.ports import (
    ClaimRef,
    DeviceHealthUpdate,
    DriverCallError,
    DriverInfo,
    DriverListener,
    HealthListener,
    PrepareResult,
)
from nodeagent.dra.slices import SliceWiper
from nodeagent.dra.versions import CALL_TIMEOUT, HEALTH_SERVICES, PLUGIN_SERVICES
from nodeagent.errors import AlreadyExists, FailedPrecondition, ValidationError
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.model import PluginInfo
from nodeagent.store import validation as meta
from nodeagent.util.clock import Clock
from nodeagent.util.logtext import plain_or_quoted, untrusted
from nodeagent.util.tasks import cancel_and_wait

if TYPE_CHECKING:
    from nodeagent.dra.client import DRAPluginClient

logger = logging.getLogger(__name__)

PLUGIN_TYPE = "DRAPlugin"
HEALTH_RETRY = 5.0


def _go_quoted(items: Sequence[str]) -> str:
    """Go's %q of a []string: ["a" "b"]."""
    return "[" + " ".join('"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"' for s in items) + "]"


def choose_plugin_service(versions: Sequence[str]) -> str:
    """The DRAPlugin service to use, or raise ValueError with the kubelet's text."""
    if not versions:
        raise ValueError("empty list of supported gRPC services (aka supported versions)")
    for service in PLUGIN_SERVICES:
        if service in versions:
            return service
    raise ValueError(
        f"none of services supported by the plugin ({_go_quoted(versions)}) "
        f"are supported by the kubelet ({_go_quoted(PLUGIN_SERVICES)})"
    )


def choose_health_service(versions: Sequence[str]) -> str:
    """The newest health service both sides support (HEALTH_SERVICES order), or "" for none: no stream."""
    for service in HEALTH_SERVICES:
        if service in versions:
            return service
    return ""


@dataclass
class _Plugin:
    info: DriverInfo
    seq: int
    client: DRAPluginClient
    health: asyncio.Task[None] | None = None
    connected: bool = False  # as last reported by the connection watch
    connection: asyncio.Task[None] | None = None


class DRARegistry:
    """PluginHandler for type DRAPlugin + ports.DriverRegistry for the DRA manager."""

    def __init__(
        self,
        clock: Clock,
        instruments: Instruments,
        *,
        call_timeout: float = CALL_TIMEOUT,
        health_retry: float = HEALTH_RETRY,
        health_enabled: bool = True,
        slices: SliceWiper | None = None,
        channel_interceptors: Callable[[str], Sequence[Any]] | None = None,
        allowed_dirs: Sequence[Path] = (),
        own_sockets: Sequence[Path] = (),
    ) -> None:
        """`channel_interceptors(driver)`: client interceptors for each plugin channel (nodeagent.faults).
        `allowed_dirs`: where a plugin's endpoint may be (empty: anywhere); `own_sockets`: the node's
        own sockets, which no plugin may name as its endpoint."""
        self._allowed_dirs = tuple(allowed_dirs)
        self._own_sockets = tuple(own_sockets)
        self._channel_interceptors = channel_interceptors
        self._clock = clock
        self._slices = slices
        self._instruments = instruments
        self._call_timeout = call_timeout
        self._health_retry = health_retry
        self._health_enabled = health_enabled
        self._plugins: dict[str, list[_Plugin]] = {}
        self._seq = 0
        self._health_listeners: list[HealthListener] = []
        self._driver_listeners: list[DriverListener] = []

    # -- PluginHandler (called by the plugin watcher) ------------------------------------------

    def validate(self, info: PluginInfo) -> str | None:
        endpoint = plain_or_quoted(info.endpoint)  # a plugin's strings may hold newlines
        if not info.name:
            return f"invalid DRA driver plugin at endpoint {endpoint}: DRA driver name is empty"
        try:
            meta.check_dns_subdomain("driverName", info.name)
        except ValidationError:
            too_long = len(info.name) > meta.DNS1123_SUBDOMAIN_MAX
            detail = f"must be no more than {meta.DNS1123_SUBDOMAIN_MAX} characters" if too_long else meta.SUBDOMAIN_MSG
            return (f"invalid DRA driver plugin at endpoint {endpoint}: "
                    f"DRA driver name {untrusted(info.name)} is not a DNS subdomain: {detail}")
        problem = self._endpoint_problem(info.endpoint)
        if problem:
            return f"invalid endpoint of DRA driver plugin {info.name} at endpoint {endpoint}: {problem}"
        try:
            choose_plugin_service(info.supported_versions)
        except ValueError as err:
            return (
                f"invalid supported gRPC versions of DRA driver plugin {info.name} at endpoint {endpoint}: {err}"
            )
        return None

    def _endpoint_problem(self, endpoint: str) -> str:
        """Why a plugin may not name `endpoint` (a socket of the daemon's own, or outside the plugin
        directories), or "". Symlinks are resolved, so a link to the admin socket is one."""
        if not endpoint.startswith("/") or "\x00" in endpoint:
            return "the endpoint must be an absolute path"
        if not self._allowed_dirs and not self._own_sockets:
            return ""
        real = Path(os.path.realpath(endpoint))
        for own in self._own_sockets:
            if real == Path(os.path.realpath(own)):
                return "the endpoint is a socket the node serves itself"
        if self._allowed_dirs and not any(real.is_relative_to(os.path.realpath(d)) for d in self._allowed_dirs):
            dirs = ", ".join(str(d) for d in self._allowed_dirs)
            return f"the endpoint must be a socket under {dirs}"
        return ""

    async def register(self, info: PluginInfo) -> None:
        name, endpoint = info.name, info.endpoint
        try:
            version = choose_plugin_service(info.supported_versions)
        except ValueError as err:
            raise FailedPrecondition(str(err)) from None  # validate() refuses this first; kept for safety
        plugins = self._plugins.setdefault(name, [])
        if any(p.info.endpoint == endpoint for p in plugins):
            raise AlreadyExists(f"endpoint {endpoint} already registered for DRA driver plugin {name}")
        driver = DriverInfo(
            name=name,
            endpoint=endpoint,
            plugin_version=version,
            health_version=choose_health_service(info.supported_versions),
        )
        # the client and the generated DRA services come with the first plugin (dra/versions.py: issue 25)
        from nodeagent.dra.client import DRAPluginClient

        client = DRAPluginClient(
            name, endpoint, version, self._instruments, timeout=self._call_timeout,
            interceptors=self._channel_interceptors(name) if self._channel_interceptors else (),
        )
        client.connect()
        self._seq += 1
        plugin = _Plugin(driver, self._seq, client)
        plugins.append(plugin)
        plugin.connection = asyncio.create_task(self._watch_connection(plugin), name=f"dra conn {name} {endpoint}")
        self._sync(name)
        if self._health_enabled and driver.health_version:
            plugin.health = asyncio.create_task(self._watch_health(plugin), name=f"dra health {name} {endpoint}")
        logger.info(
            "DRA plugin registered driver=%s endpoint=%s service=%s health=%s plugins=%d",
            name, untrusted(endpoint), version, driver.health_version or "-", len(plugins),
        )
        await self._notify_driver(name, True)

    async def deregister(self, name: str, endpoint: str) -> None:
        plugins = self._plugins.get(name, [])
        found = next((p for p in plugins if p.info.endpoint == endpoint), None)
        if found is None:
            return
        plugins.remove(found)
        if not plugins:
            del self._plugins[name]
        await self._close_plugin(found)
        self._sync(name)
        logger.info("DRA plugin deregistered driver=%s endpoint=%s plugins=%d", name, untrusted(endpoint),
                    len(plugins))
        if not plugins:
            await self._notify_driver(name, False)

    # -- DriverRegistry (used by the DRA manager) ----------------------------------------------

    def drivers(self) -> Mapping[str, DriverInfo]:
        return {name: self._pick(plugins).info for name, plugins in self._plugins.items() if plugins}

    def is_registered(self, driver: str) -> bool:
        return bool(self._plugins.get(driver))

    def endpoints(self, driver: str) -> list[str]:
        """The endpoints of the driver's registered plugins, oldest first."""
        return [p.info.endpoint for p in self._plugins.get(driver, ())]

    def usable(self, driver: str) -> bool:
        """At least one plugin of the driver is connected (the kubelet's usable())."""
        return any(p.connected for p in self._plugins.get(driver, ()))

    async def prepare(self, driver: str, claims: Sequence[ClaimRef]) -> Mapping[str, PrepareResult]:
        return await self._client(driver).prepare(claims)

    async def unprepare(self, driver: str, claims: Sequence[ClaimRef]) -> Mapping[str, str]:
        return await self._client(driver).unprepare(claims)

    def on_health(self, listener: HealthListener) -> None:
        self._health_listeners.append(listener)

    def on_driver(self, listener: DriverListener) -> None:
        self._driver_listeners.append(listener)

    async def close(self) -> None:
        """Daemon shutdown: stop every health stream and close every channel (no listener calls)."""
        plugins = [p for ps in self._plugins.values() for p in ps]
        self._plugins.clear()
        for plugin in plugins:
            await self._close_plugin(plugin)

    # -- internals -------------------------------------------------------------------------------

    def _client(self, driver: str) -> DRAPluginClient:
        if not driver:
            raise DriverCallError("DRA driver name is empty")
        plugins = self._plugins.get(driver)
        if not plugins:
            raise DriverCallError(f"DRA driver {driver} is not registered")
        return self._pick(plugins).client

    @staticmethod
    def _pick(plugins: Sequence[_Plugin]) -> _Plugin:
        for plugin in reversed(plugins):
            if plugin.client.connected:
                return plugin
        return plugins[-1]

    def _sync(self, driver: str) -> None:
        if self._slices is not None:
            self._slices.update(driver, self.usable(driver))

    async def _watch_connection(self, plugin: _Plugin) -> None:
        name, endpoint = plugin.info.name, plugin.info.endpoint
        try:
            async for connected in plugin.client.watch_connection():
                if connected == plugin.connected:
                    continue
                plugin.connected = connected
                logger.info("DRA plugin connection changed driver=%s endpoint=%s connected=%s",
                            name, untrusted(endpoint), connected)
                if any(p is plugin for p in self._plugins.get(name, ())):
                    self._sync(name)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("DRA plugin connection watch failed driver=%s endpoint=%s", name, untrusted(endpoint))

    async def _close_plugin(self, plugin: _Plugin) -> None:
        conn, plugin.connection = plugin.connection, None
        task, plugin.health = plugin.health, None
        await cancel_and_wait([conn, task])
        await plugin.client.close()

    async def _watch_health(self, plugin: _Plugin) -> None:
        from nodeagent.dra.client import HealthUnimplemented  # imported with the plugin's client

        name, endpoint = plugin.info.name, plugin.info.endpoint
        version = plugin.info.health_version
        while True:
            try:
                async for updates in plugin.client.watch_health(version):
                    await self._deliver(name, updates)
                logger.info("health stream ended driver=%s endpoint=%s retry_in=%ss", name, untrusted(endpoint),
                            self._health_retry)
            except HealthUnimplemented:
                logger.info("health service not implemented driver=%s endpoint=%s service=%s: not watching",
                            name, untrusted(endpoint), version)
                return
            except DriverCallError as err:
                logger.info("health stream failed driver=%s endpoint=%s retry_in=%ss err=%s", name, untrusted(endpoint),
                            self._health_retry, err)
            await self._clock.sleep(self._health_retry)

    async def _deliver(self, driver: str, updates: Sequence[DeviceHealthUpdate]) -> None:
        for listener in list(self._health_listeners):
            try:
                await listener(driver, updates)
            except Exception:
                logger.exception("health listener failed driver=%s", driver)

    async def _notify_driver(self, driver: str, registered: bool) -> None:
        for listener in list(self._driver_listeners):
            try:
                await listener(driver, registered)
            except Exception:
                logger.exception("driver listener failed driver=%s registered=%s", driver, registered)
