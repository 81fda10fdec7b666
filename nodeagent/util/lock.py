"""One daemon per owned place: flocks on the root dir, the state dir and the admin socket, held for life.

A second nodeagent that shares any of them with a running one would do harm: on the same
root dir it fights over kubelet.sock and the plugins' registrations; on the same state dir
it opens the same databases and undoes the first one's allocations; on the same admin
socket it unlinks the first one's socket, binds its own and removes it on exit, leaving the
first daemon unreachable. So each is locked before anything is touched, and a conflict is
refused with a StartupError (exit 2) naming what is locked and the holder's pid.

Lock files: ROOT/nodeagent.lock, STATE/nodeagent.lock and ADMIN_SOCKET.lock (beside the
socket, so two daemons may keep admin sockets of different names in one folder). When two
of them are the same file (stateDir == rootDir), it is locked once: flock conflicts between
two descriptions of one file even within a process. The locks disappear with the process
(even on SIGKILL), so no stale-lock cleanup exists. A lock file that is a symlink is
refused (O_NOFOLLOW), so a planted link can never make us truncate another file.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nodeagent.errors import StartupError

LOCK_NAME = "nodeagent.lock"


@dataclass(frozen=True)
class Owned:
    """One place a daemon owns: its lock file and how to name it in a refusal ("root dir /x")."""

    lock_path: Path
    what: str
    # the mode of the folder when the lock creates it: what hardening keeps it at (rootDir 0750,
    # stateDir 0700), so a first start has nothing to tighten and logs no warning about it
    dir_mode: int = 0o750


def owned_places(root_dir: Path, state_dir: Path, admin_socket: Path) -> list[Owned]:
    """Everything one daemon owns exclusively, as lock files (the HTTP bind is exclusive by the OS)."""
    return [
        Owned(root_dir / LOCK_NAME, f"root dir {root_dir}"),
        Owned(state_dir / LOCK_NAME, f"state dir {state_dir}", dir_mode=0o700),
        Owned(admin_socket.with_name(admin_socket.name + ".lock"), f"admin socket {admin_socket}"),
    ]


class FileLock:
    """An exclusive, non-blocking flock on one file, which holds the holder's pid."""

    def __init__(self, place: Owned) -> None:
        self.place = place
        self.path = place.lock_path
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(mode=self.place.dir_mode, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
        except OSError as err:
            reason = "it is a symlink" if err.errno == errno.ELOOP else err.strerror
            raise StartupError(f"{self.place.what}: cannot create lock file {self.path}: {reason}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StartupError(
                f"{self.place.what} is locked by another running nodeagent (pid {holder}, lock file {self.path})"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class DaemonLocks:
    """All of a daemon's locks: taken in order, all or none; released together."""

    def __init__(self, places: Sequence[Owned]) -> None:
        self._locks: list[FileLock] = []
        seen: set[Path] = set()
        for place in places:
            key = _identity(place.lock_path)
            if key not in seen:
                seen.add(key)
                self._locks.append(FileLock(place))

    def acquire(self) -> None:
        taken: list[FileLock] = []
        try:
            for lock in self._locks:
                lock.acquire()
                taken.append(lock)
        except BaseException:
            for lock in reversed(taken):
                lock.release()
            raise

    def release(self) -> None:
        for lock in reversed(self._locks):
            lock.release()


def _identity(path: Path) -> Path:
    """The lock file's canonical path: its folder resolved (symlinks, ..), its own name kept."""
    return path.parent.resolve() / path.name

