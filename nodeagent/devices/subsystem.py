"""Composition of the device subsystem for the daemon: manager + grpc dialer + registration server.

Exists so the daemon (nodeagent/wiring) wires one object with the config, the StateDB, the instruments and
the clock, while the manager itself stays free of grpc. Start order: manager (restored
state, grace timers) then the registration socket; stop in reverse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from nodeagent.config import Config
from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.manager import DeviceManager
from nodeagent.devices.plugin_client import DIAL_TIMEOUT, ControlClient, GrpcPluginDialer
from nodeagent.devices.ports import EventRecorder, HealthCallback
from nodeagent.devices.registration_service import RegistrationServer
from nodeagent.metrics.instruments import Instruments
from nodeagent.rpc.server import BindDir
from nodeagent.state.db import StateDB
from nodeagent.util.clock import Clock


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
        numa_nodes: Sequence[int] = (),
        dial_timeout: float = DIAL_TIMEOUT,
        pod_health_events: bool = True,
        channel_interceptors: Callable[[str], Sequence[Any]] | None = None,
        server_interceptors: Sequence[Any] = (),
        bind_dir: BindDir | None = None,
    ) -> None:
        """`channel_interceptors(resource)` and `server_interceptors`: the faults' hooks (nodeagent.faults).
        `bind_dir`: shared by many nodes' sockets (rpc/server.py)."""
        self.manager = DeviceManager(
            dialer=GrpcPluginDialer(
                instruments, allocate_timeout=cfg.agent.allocate_timeout, dial_timeout=dial_timeout,
                interceptors=channel_interceptors,
            ),
            checkpoint=Checkpoint(db),
            clock=clock,
            device_plugins_dir=cfg.device_plugins_dir,
            node_name=cfg.agent.node_name,
            grace_period=cfg.agent.device_plugin_grace_period,
            control=ControlClient(),
            on_health_change=on_health_change,
            record=record,
            numa_nodes=numa_nodes,
            pod_health_events=pod_health_events,
        )
        self.server = RegistrationServer(
            cfg.kubelet_socket, self.manager, instruments, mode=cfg.agent.socket_mode,
            interceptors=server_interceptors, bind_dir=bind_dir,
        )

    async def start(self) -> None:
        await self.manager.start()
        await self.server.start()

    async def stop(self, grace: float = 1.0) -> None:
        await self.server.stop(grace)
        await self.manager.stop()
