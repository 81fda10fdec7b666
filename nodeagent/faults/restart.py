"""A simulated kubelet restart: what a new kubelet process does to the plugins, without losing the pods.

What the plugins see, in the kubelet's order: the node's plugin-facing sockets go away
(device-plugins/kubelet.sock; every plugin connection is dropped, the DRA health streams
included), the node's in-memory view of devices and prepared claims is forgotten and read back
from the checkpoints (as a new process restores them), the node's ResourceSlices are wiped
(the kubelet's start-up wipe; drivers publish them again), then kubelet.sock is recreated
(device-plugins/ is cleaned of sockets as at start, so device plugins must register again) and
plugins_registry is scanned afresh (DRA drivers are registered again through GetInfo).
Pods keep running and keep their devices and claims throughout: nothing here touches them.

The steps themselves belong to the subsystems (wired in nodeagent/wiring/faults.py); this
module only runs them in order, one restart at a time, and says how long it took.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from nodeagent.errors import FailedPrecondition

logger = logging.getLogger(__name__)

Step = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class RestartStep:
    name: str
    run: Step


class KubeletRestart:
    """Runs the down steps, then the up steps; a second restart while one runs is refused."""

    def __init__(self, down: Sequence[RestartStep], up: Sequence[RestartStep]) -> None:
        self._down = list(down)
        self._up = list(up)
        self._lock = asyncio.Lock()
        self.count = 0

    async def __call__(self) -> float:
        """Restart; returns the seconds it took. Every up step runs even when a down step failed."""
        if self._lock.locked():
            raise FailedPrecondition("a simulated kubelet restart is already running")
        async with self._lock:
            started = time.perf_counter()
            logger.warning("simulated kubelet restart: stopping plugin-facing sockets and connections")
            failed: list[str] = []
            for step in [*self._down, *self._up]:
                try:
                    await step.run()
                except Exception:
                    logger.exception("simulated kubelet restart step failed step=%s", step.name)
                    failed.append(step.name)
            self.count += 1
            took = time.perf_counter() - started
            if failed:
                raise FailedPrecondition(f"simulated kubelet restart: steps failed: {', '.join(failed)}")
            logger.warning("simulated kubelet restart done took=%.3fs", took)
            return took
