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
from pathlib import Path
from typing import Protocol

from asyncinotify import Inotify, Mask, Watch

from nodeagent.clock import Clock

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
    change = asyncio.ensure_future(watch.changed())
    tick = asyncio.ensure_future(clock.sleep(timeout))
    try:
        done, _ = await asyncio.wait({change, tick}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (change, tick):
            task.cancel()
        await asyncio.gather(change, tick, return_exceptions=True)
    return change in done and not change.cancelled()


class InotifyWatch:
    """DirWatch over inotify (asyncinotify), read on the running event loop."""

    def __init__(self, path: Path, *, recursive: bool = False, retry: float = RETRY) -> None:
        self.path = Path(path)
        self._recursive = recursive
        self._retry = retry
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def changed(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"inotify {self.path}")
        await self._dirty.wait()
        self._dirty.clear()

    def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()

    async def _run(self) -> None:
        missing_logged = False
        while True:
            try:
                with Inotify() as inotify:
                    root = inotify.add_watch(self.path, _MASK)
                    if self._recursive:
                        self._add_below(inotify, self.path)
                    missing_logged = False
                    self._dirty.set()  # anything may have changed while we were not watching
                    await self._read(inotify, root)
            except OSError as err:
                if not missing_logged:
                    logger.info("directory not watched yet path=%s err=%s retry=%ss", self.path, err.strerror,
                                self._retry)
                    missing_logged = True
            await asyncio.sleep(self._retry)

    async def _read(self, inotify: Inotify, root: Watch) -> None:
        async for event in inotify:
            self._dirty.set()
            if event.watch is root and event.mask & _ROOT_GONE:
                logger.info("watched directory gone path=%s", self.path)
                return
            if (self._recursive and event.mask & Mask.ISDIR and event.mask & (Mask.CREATE | Mask.MOVED_TO)
                    and event.path is not None):
                with contextlib.suppress(OSError):
                    inotify.add_watch(event.path, _MASK | Mask.DONT_FOLLOW)
                    self._add_below(inotify, event.path)

    def _add_below(self, inotify: Inotify, top: Path) -> None:
        """Watch every directory under `top` (not through symlinks); one gone meanwhile is skipped."""
        for folder, dirs, _ in os.walk(top):
            for name in dirs:
                with contextlib.suppress(OSError):
                    inotify.add_watch(Path(folder) / name, _MASK | Mask.DONT_FOLLOW)


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
