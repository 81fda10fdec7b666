"""Wiring of the faults on demand: the injector, the simulated kubelet restart, the timeline, the service.

Exists because the faults reach into every plugin-facing part of the node: the injector is
built first (with the node's base, so every channel and served socket can take its
interceptors), the restart's steps are the device subsystem's, the DRA registry's, manager's
and slice wiper's and the plugin watcher's (known only once it runs, so it is handed in late),
and the timeline starts once the daemon is ready.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from nodeagent.config import Config
from nodeagent.config.faults import parse_timeline
from nodeagent.devices.subsystem import DeviceSubsystem
from nodeagent.errors import FailedPrecondition
from nodeagent.faults import service as faults_service
from nodeagent.faults import timeline
from nodeagent.faults.interceptors import FaultInjector
from nodeagent.faults.restart import KubeletRestart, RestartStep
from nodeagent.pluginwatcher.watcher import PluginWatcher
from nodeagent.rpc.server import Service
from nodeagent.util.clock import Clock
from nodeagent.wiring.dra import DRAParts
from nodeagent.wiring.running import Running

logger = logging.getLogger(__name__)


@dataclass
class FaultParts:
    """The injector and what the restart needs that exists only later (the plugin watcher)."""

    injector: FaultInjector
    watcher: PluginWatcher | None = None
    restart: KubeletRestart | None = field(default=None)

    async def simulate_restart(self) -> float:
        if self.restart is None:
            raise FailedPrecondition("the node is still starting: no kubelet restart to simulate yet")
        return await self.restart()

    def services(self) -> list[Service]:
        return faults_service.services(self.injector, self.simulate_restart)


def injector(clock: Clock) -> FaultInjector:
    return FaultInjector(clock)


def wire_restart(parts: FaultParts, devices: DeviceSubsystem, dra: DRAParts) -> None:
    """The simulated kubelet restart over the node's device subsystem and DRA parts."""

    async def forget_plugins() -> None:
        if parts.watcher is not None:
            await parts.watcher.forget()

    async def wipe_slices() -> None:
        dra.slices.wipe_at_start()

    parts.restart = KubeletRestart(
        down=[
            RestartStep("device-plugins/kubelet.sock removed", devices.server.stop),
            RestartStep("device plugin connections dropped, device state restored", devices.manager.restart),
            RestartStep("DRA plugin connections dropped", dra.registry.close),
            RestartStep("DRA claim cache restored", dra.manager.reload),
            RestartStep("ResourceSlices of the node wiped", wipe_slices),
        ],
        up=[
            RestartStep("device-plugins/kubelet.sock recreated", devices.server.start),
            RestartStep("plugins_registry scanned afresh", forget_plugins),
        ],
    )


def start_timeline(cfg: Config, clock: Clock, parts: FaultParts, running: Running) -> None:
    """Play NodeAgentConfiguration.faults from now (validated when the config was parsed)."""
    if not cfg.agent.faults:
        return
    entries = parse_timeline(cfg.agent.faults, "NodeAgentConfiguration.faults")
    running.spawn(timeline.run(entries, clock, parts.injector.faults, parts.simulate_restart), "fault-timeline")
    logger.info("fault timeline started entries=%d", len(entries))
