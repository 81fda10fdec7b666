"""Directory change notification: the DirWatch port, its inotify adapter and a fake for tests.

Why: the kubelet watches staticPodPath and plugins_registry with inotify and reacts at
once, keeping a periodic pass only as a resync. The watchers here do the same: a DirWatch
only says "something under this directory changed" (events coalesced, no paths), and the
owner runs its ordinary full pass, so the pure reconcile code never sees inotify and a
lost or overflowed event costs nothing but the wait for the next resync.

The adapter uses asyncinotify: the inotify fd is read on the event loop itself (no thread,
no debounce delay, nothing but ctypes over libc), which suits a Linux-only asyncio daemon
better than watchfiles (a Rust thread per watch, batching with a debounce, anyio on top).
A directory that does not exist yet, or is removed and recreated, is watched again once it
appears (checked every `retry` seconds); each (re)start of the watch counts as a change.
With `recursive`, directories created below the root are watched too (not through symlinks).
Must not: parse, list or decide anything about the files themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from asyncinotify import Event, Inotify, Mask, Watch

from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

# CLOSE_WRITE rather than MODIFY: a file is looked at once its writer closed it, not halfway.
_MASK = (
    Mask.CREATE | Mask.DELETE | Mask.MOVED_FROM | Mask.MOVED_TO | Mask.CLOSE_WRITE | Mask.ATTRIB
    | Mask.DELETE_SELF | Mask.MOVE_SELF | Mask.ONLYDIR
)
_ROOT_GONE = Mask.IGNORED | Mask.DELETE_SELF | Mask.MOVE_SELF
RETRY = 1.0


class DirWatch(Protocol):
    async def changed(self) -> None:
        """Return once something under the directory changed since the previous return."""
        ...

    def close(self) -> None:
        """Stop watching; a later `changed()` starts again."""
        ...


async def wait_change(watch: DirWatch | None, clock: Clock, timeout: float) -> bool:
    """Wait for a change or `timeout` seconds on `clock`, whichever comes first; True on a change."""
    if watch is None:
        await clock.sleep(timeout)
        return False
    if isinstance(watch, InotifyWatch):
        return await watch.changed_within(clock, timeout)
    change = asyncio.ensure_future(watch.changed())
    tick = asyncio.ensure_future(clock.sleep(timeout))
    try:
        done, _ = await asyncio.wait({change, tick}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait((change, tick), ignore_errors=True)
    return change in done and not change.cancelled()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class InotifyHub:
    """One inotify instance shared by many InotifyWatches, its fd read by one task.

    Why: the kernel allows few inotify instances per user (fs.inotify.max_user_instances, 128 by
    default, root included) but many watches per instance (max_user_watches, 8192 or more). A
    process with many full virtual nodes (each watching its own plugins_registry) would run out
    of instances at node 128 and fall back to the periodic resync; one instance with a watch per
    directory does not. Events are routed to their watch's owner; the owner decides what they mean.
    """

    def __init__(self) -> None:
        self._inotify: Inotify | None = None
        self._reader: asyncio.Task[None] | None = None
        self._routes: dict[Watch, Callable[[Event], None]] = {}

    def add_watch(self, path: Path, mask: Mask, route: Callable[[Event], None]) -> Watch:
        """Watch `path`; its events go to `route` until `rm_watch` (OSError when it cannot be watched)."""
        if self._inotify is None:
            self._inotify = Inotify()
        watch = self._inotify.add_watch(path, mask)
        self._routes[watch] = route
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._read(self._inotify), name="inotify")
        return watch

    def rm_watch(self, watch: Watch) -> None:
        if self._routes.pop(watch, None) is not None and self._inotify is not None:
            with contextlib.suppress(OSError, ValueError, KeyError):
                self._inotify.rm_watch(watch)

    def close(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
        inotify, self._inotify = self._inotify, None
        self._routes.clear()
        if inotify is not None:
            inotify.close()

    async def _read(self, inotify: Inotify) -> None:
        async for event in inotify:
            watch = event.watch
            route = self._routes.get(watch) if watch is not None else None
            if route is not None:
                route(event)
            if watch is not None and event.mask & Mask.IGNORED:  # the kernel dropped the watch
                self._routes.pop(watch, None)


class InotifyWatch:
    """DirWatch over inotify (asyncinotify), read on the running event loop; through a shared
    InotifyHub when given one (many watchers in one process), else through one of its own."""

    def __init__(self, path: Path, *, recursive: bool = False, retry: float = RETRY,
                 hub: InotifyHub | None = None) -> None:
        self.path = Path(path)
        self._recursive = recursive
        self._retry = retry
        self._own_hub = hub is None
        self._hub = hub if hub is not None else InotifyHub()
        # "Something changed since the last return" and who waits for it: a flag and futures made
        # only while waiting, not asyncio.Events (860 bytes each, a thousand nodes' watchers).
        self._dirty = False
        self._waiters: list[asyncio.Future[None]] = []
        self._gone: asyncio.Future[None] | None = None
        self._root: Watch | None = None
        self._watches: list[Watch] = []
        self._task: asyncio.Task[None] | None = None

    async def changed(self) -> None:
        self._start()
        while not self._dirty:
            await self._wait(None)
        self._dirty = False

    async def changed_within(self, clock: Clock, timeout: float) -> bool:
        """wait_change for this watch: a change, or `timeout` seconds on `clock`; True on a change.
        Only the timer is a task (not also the wait for the change, as for any DirWatch)."""
        self._start()
        if not self._dirty:
            await self._wait(asyncio.ensure_future(clock.sleep(timeout)))
        changed, self._dirty = self._dirty, False
        return changed

    async def next_change(self) -> bool:
        """Until a change or a `poke`; True on a change. No timer of its own: a shared ticker
        pokes (the plugin watchers of many nodes, pluginwatcher/watcher.py)."""
        self._start()
        if not self._dirty:
            await self._wait(None)
        changed, self._dirty = self._dirty, False
        return changed

    def poke(self) -> None:
        """Wake who waits in next_change without a change."""
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _wake(waiter)

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"inotify {self.path}")

    async def _wait(self, timer: asyncio.Future[None] | None) -> None:
        """Until a change is marked, or `timer` is done."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        if timer is not None:
            timer.add_done_callback(lambda _: _wake(waiter))
        try:
            await waiter
        finally:
            if timer is not None:
                timer.cancel()
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    def _mark_dirty(self) -> None:
        self._dirty = True
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _wake(waiter)

    def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        self._unwatch()
        if self._own_hub:
            self._hub.close()

    async def _run(self) -> None:
        missing_logged = False
        while True:
            try:
                self._gone = asyncio.get_running_loop().create_future()
                self._root = self._add(self.path, _MASK)
                if self._recursive:
                    self._add_below(self.path)
                missing_logged = False
                self._mark_dirty()  # anything may have changed while we were not watching
                await self._gone
            except OSError as err:
                if not missing_logged:
                    logger.info("directory not watched yet path=%s err=%s retry=%ss", self.path, err.strerror,
                                self._retry)
                    missing_logged = True
            finally:
                self._unwatch()
            await asyncio.sleep(self._retry)

    def _add(self, path: Path, mask: Mask) -> Watch:
        watch = self._hub.add_watch(path, mask, self._event)
        self._watches.append(watch)
        return watch

    def _unwatch(self) -> None:
        watches, self._watches, self._root = self._watches, [], None
        for watch in watches:
            self._hub.rm_watch(watch)

    def _event(self, event: Event) -> None:
        self._mark_dirty()
        if event.watch is self._root and event.mask & _ROOT_GONE:
            logger.info("watched directory gone path=%s", self.path)
            if self._gone is not None:
                _wake(self._gone)
            return
        if (self._recursive and event.mask & Mask.ISDIR and event.mask & (Mask.CREATE | Mask.MOVED_TO)
                and event.path is not None):
            with contextlib.suppress(OSError):
                self._add(event.path, _MASK | Mask.DONT_FOLLOW)
                self._add_below(event.path)

    def _add_below(self, top: Path) -> None:
        """Watch every directory under `top` (not through symlinks); one gone meanwhile is skipped."""
        for folder, dirs, _ in os.walk(top):
            for name in dirs:
                with contextlib.suppress(OSError):
                    self._add(Path(folder) / name, _MASK | Mask.DONT_FOLLOW)


class FakeWatch:
    """DirWatch for tests: `trigger()` stands for an inotify event."""

    def __init__(self) -> None:
        self._dirty = asyncio.Event()
        self.closed = False

    def trigger(self) -> None:
        self._dirty.set()

    async def changed(self) -> None:
        await self._dirty.wait()
        self._dirty.clear()

    def close(self) -> None:
        self.closed = True
