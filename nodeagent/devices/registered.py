"""The registered-devices checkpoint, written coalesced: at once when the resources change,
at most once per interval when only their healthy devices do.

The kubelet rewrites kubelet_internal_checkpoint (pods' devices and every resource's
healthy device ids) after every ListAndWatch update. A plugin of 100,000 devices
flapping one device's health made that a 100,000-id JSON document written on the event
loop for every flip. What a restart reads back from the `registered` entry is only the
resource names (manager._restore: each becomes a stopped resource that keeps its
capacity for the grace period, as the kubelet's readCheckpoint does); the device ids
are informative. So a change of the set of resources is written before `changed`
returns (what a restart relies on is durable as soon as the change is), while a change
of ids only marks the entry dirty and is written at most once per `interval`, the
latest state winning, and always on `close`. Documents over `offload_min` ids are
encoded and written in a worker thread (StateDB serialises its writers with a lock).
Pod allocations are not written here: they commit before admission (checkpoint.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.model import Device
from nodeagent.devices.state import DeviceState
from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

REGISTERED_INTERVAL = 1.0  # at most one write of changed device ids per second
OFFLOAD_MIN = 2000  # larger documents are encoded and written in a worker thread


class RegisteredWriter:
    """Writes DeviceState's resources and healthy device ids to the checkpoint, coalesced."""

    def __init__(
        self,
        checkpoint: Checkpoint,
        state: DeviceState,
        clock: Clock,
        interval: float = REGISTERED_INTERVAL,
        offload_min: int = OFFLOAD_MIN,
    ) -> None:
        self._checkpoint = checkpoint
        self._state = state
        self._clock = clock
        self._interval = interval
        self._offload_min = offload_min
        self._names: frozenset[str] | None = None  # the resources of the last write (None: none yet)
        self._last: float | None = None  # monotonic time of the last write
        self._dirty = False
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # one write at a time, so a later document is never overtaken
        self.writes = 0

    async def changed(self, devices: bool = True) -> None:
        """The resources or (unless devices=False) their healthy devices may have changed: a new
        set of resources is written now, changed devices within the interval."""
        if self._names != frozenset(self._state.resources):
            await self.flush()
            return
        if not devices:
            return
        self._dirty = True
        if self._task is not None:
            return  # the pending write will take the latest state
        now = self._clock.monotonic()
        delay = 0.0 if self._last is None else self._last + self._interval - now
        if delay <= 0:
            await self.flush()
            return
        self._task = asyncio.ensure_future(self._later(delay))

    async def _later(self, delay: float) -> None:
        try:
            await self._clock.sleep(delay)
            self._task = None
            if self._dirty:
                await self.flush()
        except asyncio.CancelledError:
            raise
        except Exception:  # a failed write must not end silently in a task nobody awaits
            logger.exception("writing the registered-devices checkpoint failed")
        finally:
            if self._task is asyncio.current_task():
                self._task = None

    async def flush(self) -> None:
        """Write the current state now (after any write already under way)."""
        async with self._lock:
            self._dirty = False
            # the kept healthy tuples themselves (never changed in place): taken now, read anywhere
            healthy = {name: rs.healthy if rs.connected else () for name, rs in self._state.resources.items()}
            self._names = frozenset(healthy)
            self._last = self._clock.monotonic()
            self.writes += 1
            if sum(len(devices) for devices in healthy.values()) > self._offload_min:
                await asyncio.to_thread(self._write, healthy)
            else:
                self._write(healthy)

    def _write(self, healthy: Mapping[str, Sequence[Device]]) -> None:
        self._checkpoint.save_registered({name: [d.id for d in devices] for name, devices in healthy.items()})

    async def close(self) -> None:
        """Cancel the pending write and write what it would have (the daemon is stopping)."""
        task, self._task = self._task, None
        await cancel_and_wait([task])
        if self._dirty:
            await self.flush()
