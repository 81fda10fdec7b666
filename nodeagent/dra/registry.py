"""The registered DRA drivers: the plugin watcher's DRAPlugin handler and the manager's DriverRegistry.

Validation and choice of service follow pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go,
with the kubelet's error texts. One difference on purpose: v1.DRAPlugin is preferred
over v1beta1.DRAPlugin whatever order the plugin lists them in (upstream takes the
plugin's first supported token; the upstream helper lists v1 first, so this agrees in
practice). A driver may have several plugins (rolling update); calls go to the newest
connected one, else the newest. Each plugin gets its own health stream, held open
while it is registered: v1.DRAResourceHealth when advertised, else v1alpha1 (also
tried when nothing is advertised, like released kubelets). The stream is reopened
`health_retry` seconds (5 s) after it ends or fails; UNIMPLEMENTED stops it for that
registration, so a driver without health costs one call. Every message goes to the
on_health listeners; registration and the departure of a driver's last plugin go to
the on_driver listeners. No claim bookkeeping here: that is the manager's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodeagent.clock import Clock
from nodeagent.dra.client import (
    CALL_TIMEOUT,
    HEALTH_SERVICES,
    PLUGIN_SERVICES,
    V1ALPHA1_HEALTH,
    DRAPluginClient,
    HealthUnimplemented,
)
from nodeagent.dra.ports import (
    ClaimRef,
    DeviceHealthUpdate,
    DriverCallError,
    DriverInfo,
    DriverListener,
    HealthListener,
    PrepareResult,
)
from nodeagent.errors import AlreadyExists, FailedPrecondition
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.model import PluginInfo

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
    """The advertised health service we prefer, or "" when none is advertised."""
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
    ) -> None:
        self._clock = clock
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
        if not info.name:
            return f"invalid DRA driver plugin at endpoint {info.endpoint}: DRA driver name is empty"
        try:
            choose_plugin_service(info.supported_versions)
        except ValueError as err:
            return (
                f"invalid supported gRPC versions of DRA driver plugin {info.name} at endpoint {info.endpoint}: {err}"
            )
        return None

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
        client = DRAPluginClient(name, endpoint, version, self._instruments, timeout=self._call_timeout)
        client.connect()
        self._seq += 1
        plugin = _Plugin(driver, self._seq, client)
        plugins.append(plugin)
        if self._health_enabled:
            plugin.health = asyncio.create_task(self._watch_health(plugin), name=f"dra health {name} {endpoint}")
        logger.info(
            "DRA plugin registered driver=%s endpoint=%s service=%s health=%s plugins=%d",
            name, endpoint, version, driver.health_version or "-", len(plugins),
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
        logger.info("DRA plugin deregistered driver=%s endpoint=%s plugins=%d", name, endpoint, len(plugins))
        if not plugins:
            await self._notify_driver(name, False)

    # -- DriverRegistry (used by the DRA manager) ----------------------------------------------

    def drivers(self) -> Mapping[str, DriverInfo]:
        return {name: self._pick(plugins).info for name, plugins in self._plugins.items() if plugins}

    def is_registered(self, driver: str) -> bool:
        return bool(self._plugins.get(driver))

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

    async def _close_plugin(self, plugin: _Plugin) -> None:
        task, plugin.health = plugin.health, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await plugin.client.close()

    async def _watch_health(self, plugin: _Plugin) -> None:
        name, endpoint = plugin.info.name, plugin.info.endpoint
        version = plugin.info.health_version or V1ALPHA1_HEALTH
        while True:
            try:
                async for updates in plugin.client.watch_health(version):
                    await self._deliver(name, updates)
                logger.info("health stream ended driver=%s endpoint=%s retry_in=%ss", name, endpoint,
                            self._health_retry)
            except HealthUnimplemented:
                logger.info("health service not implemented driver=%s endpoint=%s service=%s: not watching",
                            name, endpoint, version)
                return
            except DriverCallError as err:
                logger.info("health stream failed driver=%s endpoint=%s retry_in=%ss err=%s", name, endpoint,
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
