"""Wiping the node's ResourceSlices of DRA drivers that are gone, as the kubelet does.

A driver that dies without cleaning up leaves its ResourceSlices behind, and the scheduler keeps
sending pods to devices nobody can prepare. The kubelet (pkg/kubelet/cm/dra/plugin/
dra_plugin_manager.go, 1.34-1.37) therefore:
- at start, before any driver can register, deletes every ResourceSlice of its node
  (DeleteCollection, fieldSelector spec.nodeName=<node>): drivers republish theirs;
- after every change of a driver's plugins (registered, unregistered, connection gained or lost)
  asks whether the driver is usable, i.e. at least one of its plugins is connected. If not, the
  driver's slices of the node (spec.driver=<driver>,spec.nodeName=<node>) are deleted after
  `wipingDelay` (defaultWipingDelay, 30 s), unless it becomes usable again before: a driver
  restarting in place keeps its slices, a rolling update (two plugins) never loses them. A wipe
  already pending keeps its original deadline.
- retries a failed deletion with backoff (1 s doubling, capped at 5 min, 100 steps; upstream
  adds 20 % jitter, left out here so tests stay exact).

`WipeSchedule` is the decision (pure, no I/O); `SliceWiper` runs it on the injected Clock, so a
test with FakeClock measures the delay, and deletes through `delete(driver or None)`, which the
wiring binds to the object store in process (nodeagent.nodeapi.inprocess.delete_node_slices).
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping

from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

WIPING_DELAY = 30.0  # the kubelet's defaultWipingDelay
BACKOFF_START = 1.0
BACKOFF_FACTOR = 2.0
BACKOFF_CAP = 300.0
BACKOFF_STEPS = 100

# delete(driver): delete the node's slices of `driver` (None: of every driver); the number deleted.
SliceDeleter = Callable[[str | None], int | Awaitable[int]]
"""Deletes the node's slices (of one driver, or all for None): at once, or awaitable (over the network)."""


class Decision(enum.Enum):
    NOTHING = "nothing"  # usable and nothing pending
    SCHEDULE = "schedule"  # unusable: wipe at the returned deadline
    KEEP = "keep"  # unusable and already pending: the first deadline stands
    CANCEL = "cancel"  # usable again in time: drop the pending wipe


class WipeSchedule:
    """Which drivers' slices are to be wiped, and when (monotonic seconds)."""

    def __init__(self, delay: float = WIPING_DELAY) -> None:
        self.delay = delay
        self._due: dict[str, float] = {}

    def update(self, driver: str, usable: bool, now: float) -> Decision:
        if usable:
            return Decision.CANCEL if self._due.pop(driver, None) is not None else Decision.NOTHING
        if driver in self._due:
            return Decision.KEEP
        self._due[driver] = now + self.delay
        return Decision.SCHEDULE

    def due(self, driver: str) -> float | None:
        return self._due.get(driver)

    def done(self, driver: str) -> None:
        self._due.pop(driver, None)

    def clear(self) -> None:
        self._due.clear()

    @property
    def pending(self) -> Mapping[str, float]:
        return dict(self._due)


def field_selector(node: str, driver: str | None) -> str:
    """The DeleteCollection field selector the kubelet sends (fields.Set sorts its keys)."""
    return f"spec.nodeName={node}" if driver is None else f"spec.driver={driver},spec.nodeName={node}"


class SliceWiper:
    """Runs WipeSchedule: one task per pending driver, sleeping on the clock, then deleting."""

    def __init__(self, clock: Clock, node: str, delete: SliceDeleter, *, delay: float = WIPING_DELAY) -> None:
        self._clock = clock
        self._node = node
        self._delete = delete
        self._schedule = WipeSchedule(delay)
        self._tasks: dict[str | None, asyncio.Task[None]] = {}  # None: the start-up wipe's retries
        self._closed = False

    @property
    def pending(self) -> Mapping[str, float]:
        """Driver -> monotonic deadline of its wipe."""
        return self._schedule.pending

    def wipe_at_start(self) -> int:
        """Delete every slice of the node now (no driver is registered yet); on failure retry in the
        background. Returns the number deleted (0 when the first attempt failed)."""
        try:
            count = self._delete(None)
            if inspect.isawaitable(count):  # over the network: in the background, with the same retries
                self._tasks[None] = asyncio.get_running_loop().create_task(
                    self._first_then_retry(count), name="dra slices startup wipe")
                return 0
            logger.info("deleted ResourceSlices fieldSelector=%s count=%d", field_selector(self._node, None), count)
            return count
        except Exception as err:
            logger.warning("deleting ResourceSlices failed, retrying fieldSelector=%s err=%s",
                           field_selector(self._node, None), err)
            self._tasks[None] = asyncio.get_running_loop().create_task(
                self._retry(None, first_wait=BACKOFF_START), name="dra slices startup wipe")
            return 0

    def update(self, driver: str, usable: bool) -> None:
        """A driver's plugins changed; `usable`: at least one of them is connected."""
        if self._closed:
            return
        decision = self._schedule.update(driver, usable, self._clock.monotonic())
        if decision is Decision.CANCEL:
            task = self._tasks.pop(driver, None)
            if task is not None:
                task.cancel()
            logger.info("ResourceSlices cleanup canceled driver=%s: driver usable again", driver)
        elif decision is Decision.SCHEDULE:
            logger.info("ResourceSlices cleanup scheduled driver=%s node=%s in=%ss: no plugin connected",
                        driver, self._node, self._schedule.delay)
            self._tasks[driver] = asyncio.get_running_loop().create_task(
                self._wipe_later(driver), name=f"dra slices wipe {driver}")

    async def close(self) -> None:
        """Daemon shutdown: cancel every pending wipe (the kubelet's Stop)."""
        self._closed = True
        self._schedule.clear()
        tasks = list(self._tasks.values())
        self._tasks.clear()
        await cancel_and_wait(tasks)

    # -- internals -------------------------------------------------------------------------

    async def _wipe_later(self, driver: str) -> None:
        try:
            due = self._schedule.due(driver)
            if due is not None:
                await self._clock.sleep(due - self._clock.monotonic())
            await self._retry(driver, first_wait=0.0)
        finally:
            self._schedule.done(driver)
            if self._tasks.get(driver) is asyncio.current_task():
                del self._tasks[driver]

    async def _first_then_retry(self, first: Awaitable[int]) -> None:
        try:
            count = await first
            logger.info("deleted ResourceSlices fieldSelector=%s count=%d", field_selector(self._node, None), count)
        except Exception as err:
            logger.warning("deleting ResourceSlices failed, retrying fieldSelector=%s err=%s",
                           field_selector(self._node, None), err)
            await self._retry(None, first_wait=BACKOFF_START)

    async def _retry(self, driver: str | None, *, first_wait: float) -> None:
        wait = first_wait
        backoff = Backoff(BACKOFF_START, BACKOFF_CAP, BACKOFF_FACTOR)
        for _ in range(BACKOFF_STEPS):
            if wait > 0:
                await self._clock.sleep(wait)
            try:
                await self._delete_once(driver)
                return
            except Exception as err:
                logger.info("deleting ResourceSlices failed, retrying fieldSelector=%s err=%s",
                            field_selector(self._node, driver), err)
            wait = backoff.next_delay(wait)
        logger.error("deleting ResourceSlices gave up fieldSelector=%s", field_selector(self._node, driver))

    async def _delete_once(self, driver: str | None) -> int:
        result = self._delete(driver)
        count = await result if inspect.isawaitable(result) else result
        logger.info("deleted ResourceSlices fieldSelector=%s count=%d", field_selector(self._node, driver), count)
        return count
