"""Keeps the kubelet's state files in step with nodeagent's managers: written when their state moves.

Why: node agents (NFD's nfd-topology-updater, the resource-topology-exporter) watch
ROOT/cpu_manager_state, ROOT/memory_manager_state and ROOT/device-plugins/kubelet_internal_checkpoint
with inotify to know when to read pod-resources again, and tools read them (and
ROOT/dra_manager_state) with the kubelet's own code. nodeagent's state database stays the source
of truth: these files are exports, rewritten from the managers whenever a manager's generation
moves, never read back.

Each file is one `StateFile`: a generation (cheap: a counter the manager bumps on every change)
and a render (the file's bytes, or None for "do not create it yet"). `due` compares generations
only, so it may run on every tick of a shared ticker; `sync` renders on the event loop (the
managers are not thread-safe) and writes in a thread, each file as the kubelet's filestore does:
a hidden temporary file in the same folder, fsync, rename over the old one, so a reader sees the
old file or the new one, never half of one. A failed write is logged and tried again on the
next pass. Nothing here knows what a file holds (formats.py) or which manager feeds it (wiring).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)


def write_atomic(path: Path, data: bytes) -> None:
    """pkg/kubelet/util/store writeFile: a `.`-prefixed temporary file beside `path` (mode 0600,
    as os.CreateTemp makes it), written, fsynced, closed and renamed over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@dataclass(frozen=True)
class StateFile:
    path: Path
    generation: Callable[[], Hashable]
    render: Callable[[], bytes | None]


class KubeletStateFiles:
    """The state files of one node; `sync` writes those whose generation moved (and content changed)."""

    def __init__(self, files: Sequence[StateFile], *, write: Callable[[Path, bytes], None] = write_atomic) -> None:
        self._files = tuple(files)
        self._write = write
        self._written: dict[Path, Hashable] = {}  # generation each file was last rendered at
        self._content: dict[Path, bytes] = {}  # what is in the file now (as far as we wrote it)
        self._task: asyncio.Task[int] | None = None
        self.writes = 0  # files written so far (tests, status)

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(f.path for f in self._files)

    def due(self) -> bool:
        """Whether any file's generation moved since it was last rendered."""
        return any(f.generation() != self._written.get(f.path, _NEVER) for f in self._files)

    def _changes(self) -> list[tuple[StateFile, Hashable, bytes]]:
        out = []
        for f in self._files:
            generation = f.generation()
            if generation == self._written.get(f.path, _NEVER):
                continue
            data = f.render()
            if data is None or data == self._content.get(f.path):
                self._written[f.path] = generation
                continue
            out.append((f, generation, data))
        return out

    def _commit(self, f: StateFile, generation: Hashable, data: bytes, err: BaseException | None) -> None:
        if err is not None:
            logger.warning("kubelet state file not written, retried on the next pass file=%s err=%s", f.path, err)
            return
        self._written[f.path] = generation
        self._content[f.path] = data
        self.writes += 1

    def sync_now(self) -> int:
        """Render and write every changed file in this thread; the number written (start, tests)."""
        before = self.writes
        for f, generation, data in self._changes():
            try:
                self._write(f.path, data)
            except OSError as err:
                self._commit(f, generation, data, err)
            else:
                self._commit(f, generation, data, None)
        return self.writes - before

    async def sync(self) -> int:
        """Render on the loop, write in a thread; the number written."""
        before = self.writes
        changes = self._changes()
        if changes:
            results = await asyncio.to_thread(self._write_all, [(f.path, data) for f, _, data in changes])
            for (f, generation, data), err in zip(changes, results, strict=True):
                self._commit(f, generation, data, err)
        return self.writes - before

    def _write_all(self, items: Sequence[tuple[Path, bytes]]) -> list[OSError | None]:
        out: list[OSError | None] = []
        for path, data in items:
            try:
                self._write(path, data)
                out.append(None)
            except OSError as err:
                out.append(err)
        return out

    def tick(self) -> None:
        """For a shared ticker: start a sync when something moved and none is running."""
        if (self._task is None or self._task.done()) and self.due():
            self._task = asyncio.get_running_loop().create_task(self.sync(), name="kubelet-state-files")

    async def run(self, clock: Clock, interval: float) -> None:
        """Check every `interval` seconds until cancelled."""
        while True:
            if self.due():
                await self.sync()
            await clock.sleep(interval)

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])


class _Never:
    """A generation no manager returns: every file is due before its first render."""


_NEVER = _Never()
