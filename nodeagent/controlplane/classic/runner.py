"""ClassicRunner: builds the configured driver controllers and runs each as an asyncio task.

The daemon creates one runner with its config, object store, clock and metrics registry,
awaits `start()` once the store is open and `stop()` on shutdown, and hands `.scheduling`
to the scheduler. Controllers run only when classic DRA is on (NodeAgentConfiguration.classicDRA,
carried in the effective gates under the removed gate's name DRAControlPlaneController); the
configuration is validated when the file is loaded either way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from prometheus_client import CollectorRegistry

from nodeagent.config import Config
from nodeagent.config.model import ClassicControllerConfig
from nodeagent.controlplane.classic import common as c
from nodeagent.controlplane.classic.api import ClassicScheduling
from nodeagent.controlplane.classic.controller import ClassicController
from nodeagent.controlplane.classic.cxl import CxlController
from nodeagent.controlplane.classic.driver import DriverController
from nodeagent.controlplane.classic.metrics import ClassicMetrics
from nodeagent.controlplane.classic.reader import StoreReader
from nodeagent.controlplane.classic.scheduling import StoreClassicScheduling
from nodeagent.objects.resource.validation import GATE_CONTROL_PLANE_CONTROLLER
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)


def build_driver(config: ClassicControllerConfig, store: ObjectStore) -> DriverController:
    """The built-in driver for a configured controller (only the CXL pools driver exists)."""
    return CxlController(config, StoreReader(store))


class ClassicRunner:
    def __init__(
        self,
        cfg: Config,
        store: ObjectStore,
        clock: Clock,
        registry: CollectorRegistry | None,
        *,
        drivers: Sequence[DriverController] = (),
    ) -> None:
        """`drivers` adds controllers beside the configured ones (tests, out-of-tree drivers)."""
        self.enabled = cfg.kubelet.gate(GATE_CONTROL_PLANE_CONTROLLER)
        self.configs = cfg.agent.classic_controllers  # parsed when the file was loaded
        self.store = store
        self.clock = clock
        self.metrics = ClassicMetrics(registry, store) if self.enabled else None
        self.drivers: list[DriverController] = [build_driver(c, store) for c in self.configs]
        self.drivers += list(drivers)
        names = [d.name for d in self.drivers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"two classic controllers serve controllerName {dupes[0]}")
        self._scheduling = StoreClassicScheduling(store, clock, events=c.scheduler_events())
        self.controllers: list[ClassicController] = []
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def scheduling(self) -> ClassicScheduling:
        return self._scheduling

    def in_flight(self) -> int:
        """PodSchedulingContexts in the store."""
        return self._scheduling.in_flight()

    async def start(self) -> None:
        if not self.enabled:
            if self.drivers:
                logger.warning(
                    "classic controllers configured but NodeAgentConfiguration.classicDRA is off count=%d",
                    len(self.drivers),
                )
            return
        if self._tasks:
            return
        for driver in self.drivers:
            ctrl = ClassicController(
                self.store,
                driver,
                self.clock,
                events=c.controller_events(driver.name),
                metrics=self.metrics,
            )
            self.controllers.append(ctrl)
            self._tasks.append(asyncio.create_task(ctrl.run(), name=f"classic-controller-{driver.name}"))
            logger.info("classic controller started controller=%s", driver.name)
        await asyncio.gather(*(c.synced.wait() for c in self.controllers))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(tasks)
        self.controllers = []

    def idle(self) -> bool:
        """Every controller has processed every event it received (tests)."""
        return all(c.idle() for c in self.controllers)
