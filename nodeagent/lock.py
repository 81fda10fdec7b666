"""One daemon per root dir: an flock on ROOT/nodeagent.lock, held for the daemon's life.

A second nodeagent pointed at the same root dir would fight over kubelet.sock and the
plugins' registrations; it is refused at start with a StartupError naming the holder.
The lock disappears with the process (even on SIGKILL), so no stale-lock cleanup exists.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from nodeagent.errors import StartupError


class RootLock:
    def __init__(self, root_dir: Path) -> None:
        self.path = root_dir / "nodeagent.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o640)
        except OSError as err:
            raise StartupError(f"root dir {self.path.parent}: cannot create lock file: {err.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StartupError(
                f"root dir {self.path.parent} is locked by another running nodeagent (pid {holder})"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
