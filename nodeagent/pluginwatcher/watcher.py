"""Watches ROOT/plugins_registry and keeps the plugin handlers in step with its sockets.

Like the kubelet's plugin watcher, the directory is watched with inotify (the DirWatch port
of nodeagent.util.fswatch, recursive) and a pass runs as soon as anything under it changes, so a
registration socket is seen within milliseconds; a pass also runs every `period` on the
injected Clock as a resync (a lost event, a backoff that ran out). Without a watch the
period alone drives it, as a poll (150 ms by default). Each pass builds the
desired world (sockets only; names starting with '.' are ignored, files and
directories alike), asks reconcile.plan for operations and starts them as tasks, at
most one per socket path, skipping paths that are backing off after a failure.
Sockets present at start are handled by the first pass in `start()`. The loop never
raises: a failed operation is logged and retried later.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry

from nodeagent.pluginwatcher import reconcile
from nodeagent.pluginwatcher.executor import RegistrationExecutor
from nodeagent.pluginwatcher.metrics import PluginManagerCollector
from nodeagent.pluginwatcher.model import Backoff, RegisteredPlugin, SocketFile, WorldSnapshot
from nodeagent.pluginwatcher.ports import PluginHandler
from nodeagent.util.clock import Clock
from nodeagent.util.fswatch import DirWatch, InotifyWatch, wait_change
from nodeagent.util.logtext import untrusted
from nodeagent.util.tasks import cancel_and_wait
from nodeagent.util.ticker import Ticker

logger = logging.getLogger(__name__)

POLL_PERIOD = 0.15  # without a watch
RESYNC_PERIOD = 1.0  # with a watch: the kubelet's reconciler also runs every second
# With a watch, the directory is scanned when it reports a change, and every RESCAN_EVERY-th pass
# regardless (a lost or overflowed event); the other passes only plan (retries after backoff),
# as the kubelet's reconciler compares its desired and actual worlds in memory.
RESCAN_EVERY = 10


def scan(root: Path) -> dict[str, SocketFile]:
    """Every unix socket under `root` (recursively), skipping names that start with '.'."""
    found: dict[str, SocketFile] = {}
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # removed while walking, or unreadable: seen again next pass
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                    continue
                st = entry.stat()
            except OSError:
                continue
            if stat.S_ISSOCK(st.st_mode):
                found[entry.path] = SocketFile(entry.path, (st.st_ino, st.st_ctime_ns))
    return found


class PluginWatcher:
    """The kubelet's plugin manager: registration sockets -> handlers, by plugin type."""

    def __init__(
        self,
        registry_dir: Path,
        handlers: Mapping[str, PluginHandler],
        clock: Clock,
        *,
        registry: CollectorRegistry | None = None,
        period: float = POLL_PERIOD,
        executor: RegistrationExecutor | None = None,
        backoff: Backoff | None = None,
        watch: DirWatch | None = None,
        ticker: Ticker | None = None,
    ) -> None:
        self.registry_dir = registry_dir
        # Shared by many nodes (with an inotify watch): it wakes the passes, no timer of our own.
        self._ticker = ticker
        self._clock = clock
        self._period = period
        self._watch = watch
        self._executor = executor or RegistrationExecutor(handlers)
        self._backoff = backoff or Backoff()
        self._desired: dict[str, SocketFile] = {}
        self._actual: dict[str, RegisteredPlugin] = {}
        self._inflight: dict[str, asyncio.Task[None]] = {}
        self._deferred: set[str] = set()
        """Sockets a pass left alone because an operation on them was running: planned again when it
        ends (a socket removed while its registration ran was otherwise noticed only by the next
        periodic pass, the kubelet's reconciler runs every second)."""
        self._loop_task: asyncio.Task[None] | None = None
        if registry is not None:
            registry.register(PluginManagerCollector(self.snapshot))

    async def start(self) -> None:
        self.registry_dir.mkdir(mode=0o750, parents=True, exist_ok=True)
        await self.sync()
        self._loop_task = asyncio.create_task(self._run(), name="pluginwatcher")
        logger.info("plugin watcher started dir=%s period=%s inotify=%s",
                    self.registry_dir, self._period, self._watch is not None)

    async def stop(self) -> None:
        """Stop watching; registered plugins stay registered (the kubelet does not deregister on exit)."""
        task, self._loop_task = self._loop_task, None
        await cancel_and_wait([task, *self._inflight.values()])
        self._inflight.clear()
        if self._watch is not None:
            self._watch.close()

    async def _run(self) -> None:
        if self._ticker is not None and isinstance(self._watch, InotifyWatch):
            await self._run_ticked(self._ticker, self._watch)
            return
        passes = 0
        while True:
            changed = await wait_change(self._watch, self._clock, self._period)
            passes += 1
            try:
                await self.sync(rescan=changed or self._watch is None or passes % RESCAN_EVERY == 0)
            except Exception:  # the loop must survive anything; the next pass retries
                logger.exception("plugin watcher pass failed dir=%s", self.registry_dir)

    async def _run_ticked(self, ticker: Ticker, watch: InotifyWatch) -> None:
        """_run with a shared ticker: a pass on a change, and one every `period` (every n-th tick)."""
        every = max(1, round(self._period / ticker.interval))
        ticks = 0

        def check() -> None:
            nonlocal ticks
            ticks += 1
            if ticks % every == 0:
                watch.poke()

        remove = ticker.add(check)
        passes = 0
        try:
            while True:
                changed = await watch.next_change()
                passes += 1
                try:
                    await self.sync(rescan=changed or passes % RESCAN_EVERY == 0)
                except Exception:  # the loop must survive anything; the next pass retries
                    logger.exception("plugin watcher pass failed dir=%s", self.registry_dir)
        finally:
            remove()

    async def sync(self, *, rescan: bool = True) -> None:
        """One pass: scan (unless not `rescan`), plan, start the operations that are due. Does not
        wait for them."""
        if rescan:
            self._desired = scan(self.registry_dir)
        self._plan()

    def _plan(self) -> None:
        """Start the operations that the desired and actual worlds call for and that are due."""
        self._backoff.forget_except(self._desired)
        self._deferred.update(self._inflight)  # this pass's view may differ from what they end with
        now = self._clock.monotonic()
        for op in reconcile.plan(self._desired, self._actual):
            key = op.key
            if key in self._inflight:
                continue
            if isinstance(op, reconcile.Register) and not self._backoff.ready(key, now):
                continue
            self._inflight[key] = asyncio.create_task(self._apply(op), name=f"pluginwatcher {key}")

    async def wait_idle(self) -> None:
        """Wait until no operation is running (tests, and shutdown ordering)."""
        while self._inflight:
            await asyncio.gather(*self._inflight.values(), return_exceptions=True)

    async def _apply(self, op: reconcile.Operation) -> None:
        key = op.key
        try:
            if isinstance(op, reconcile.Unregister):
                self._actual.pop(key, None)
                await self._executor.unregister(op.plugin)
            else:
                self._actual[key] = await self._executor.register(op.socket)
                self._backoff.succeeded(key)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            delay = self._backoff.failed(key, self._clock.monotonic())
            logger.warning("plugin operation failed socket=%s op=%s retry_in=%.1fs err=%s",
                           untrusted(key), type(op).__name__, delay, untrusted(str(err), 1024))
        finally:
            self._inflight.pop(key, None)
            if key in self._deferred and self._loop_task is not None:
                self._deferred.discard(key)
                self._plan()  # what changed while this ran (no rescan: the pass that saw it scanned)

    async def forget(self) -> None:
        """Forget every registered plugin and scan again now, without telling the handlers (a simulated
        kubelet restart: the new process knows no plugin and registers each socket it finds afresh)."""
        await cancel_and_wait(list(self._inflight.values()))
        self._inflight.clear()
        self._actual.clear()
        self._backoff = Backoff()
        await self.sync()

    def snapshot(self) -> WorldSnapshot:
        return WorldSnapshot(desired=tuple(sorted(self._desired)), actual=tuple(sorted(self._actual)))

    def registered(self) -> dict[str, RegisteredPlugin]:
        return dict(self._actual)
