"""Composition of the device subsystem for the daemon: manager + grpc dialer + registration server.

Exists so the daemon (nodeagent/wiring) wires one object with the config, the StateDB, the instruments and
the clock, while the manager itself stays free of grpc. Start order: manager (restored
state, grace timers) then the registration socket; stop in reverse.
"""

from __future__ import annotations

from nodeagent.clock import Clock
from nodeagent.config import Config
from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.manager import DeviceManager
from nodeagent.devices.plugin_client import DIAL_TIMEOUT, ControlClient, GrpcPluginDialer
from nodeagent.devices.ports import CpuNumaLookup, EventRecorder, HealthCallback
from nodeagent.devices.registration_service import RegistrationServer
from nodeagent.metrics.instruments import Instruments
from nodeagent.state.db import StateDB


class DeviceSubsystem:
    def __init__(
        self,
        cfg: Config,
        db: StateDB,
        instruments: Instruments,
        clock: Clock,
        *,
        on_health_change: HealthCallback | None = None,
        record: EventRecorder | None = None,
        cpu_numa: CpuNumaLookup | None = None,
        dial_timeout: float = DIAL_TIMEOUT,
        pod_health_events: bool = True,
    ) -> None:
        self.manager = DeviceManager(
            dialer=GrpcPluginDialer(
                instruments, allocate_timeout=cfg.agent.allocate_timeout, dial_timeout=dial_timeout
            ),
            checkpoint=Checkpoint(db),
            clock=clock,
            device_plugins_dir=cfg.device_plugins_dir,
            node_name=cfg.agent.node_name,
            topology_policy=cfg.kubelet.topology_manager_policy,
            grace_period=cfg.agent.device_plugin_grace_period,
            control=ControlClient(),
            on_health_change=on_health_change,
            record=record,
            cpu_numa=cpu_numa,
            pod_health_events=pod_health_events,
        )
        self.server = RegistrationServer(
            cfg.kubelet_socket, self.manager, instruments, mode=cfg.agent.socket_mode
        )

    async def start(self) -> None:
        await self.manager.start()
        await self.server.start()

    async def stop(self, grace: float = 1.0) -> None:
        await self.server.stop(grace)
        await self.manager.stop()
