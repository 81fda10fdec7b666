"""The simulated cgroup driver: a directory tree of cgroup v2 files under the state dir.

The default backend: no root, no kernel, but the same paths and file names a cgroup v2
host has (memory.max, cpu.weight, cpu.max, pids.max, cgroup.procs), so a user can look
at what the kubelet would have set. Files are written whole; there is nothing to
enforce. The tree is the daemon's own: a symlink in it (planted to redirect the writes out
of the state dir) is refused, never followed.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from nodeagent.cm.cgroups.driver import (
    V2_FILES,
    CgroupError,
    fs_path,
    parse_procs,
    read_text,
    v2_parse,
    v2_values,
)
from nodeagent.cm.cgroups.limits import UNLIMITED, CgroupLimits

logger = logging.getLogger(__name__)


def _put(file: str, content: str) -> None:
    """Write a whole file, never through a symlink (ELOOP instead)."""
    data = content.encode()
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def _current(file: str) -> str | None:
    """A file's content, or None when it cannot be read (missing, a symlink: then it is written)."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as src:
        return src.read()


def _symlink(path: str, directory: str) -> CgroupError:
    return CgroupError(f'cgroup "{path}": {directory} is a symlink; the simulated tree does not follow links')


class SimulatedCgroups:
    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def name(self) -> str:
        return "simulated"

    def _write(self, directory: str, limits: CgroupLimits, *, fresh: bool = False) -> None:
        """Write the limit files; in an existing directory only those whose content changed (a
        pod's cgroup is ensured again on every sync, and an unchanged rewrite is two syscalls and
        an inode update for nothing)."""
        for file, content in v2_values(limits).items():
            path = os.path.join(directory, file)
            text = content + "\n"
            if not fresh and _current(path) == text:
                continue
            _put(path, text)

    def _refuse_symlink(self, path: str, directory: Path) -> None:
        if directory.is_symlink():
            raise _symlink(path, str(directory))

    def _existing_dir(self, path: str, directory: str) -> bool:
        """Whether `directory` exists (a directory: anything else fails its mkdir); one lstat,
        which also refuses a symlink (CgroupError)."""
        try:
            mode = os.lstat(directory).st_mode
        except FileNotFoundError:
            return False
        if stat.S_ISLNK(mode):
            raise _symlink(path, directory)
        return stat.S_ISDIR(mode)

    def ensure(self, path: str, limits: CgroupLimits) -> None:
        """Create the cgroup (and missing ancestors, unlimited) with `limits`, or update its files.

        Plain string paths and one lstat per level: a pod's cgroup is ensured on its admission's
        path, where pathlib's joins and the separate symlink and directory checks showed."""
        target = fs_path(self.root, path)
        try:
            root = str(self.root)
            if not self._existing_dir(path, root):
                self.root.mkdir(parents=True, exist_ok=True)
            current = root
            created = False
            parts = target.relative_to(self.root).parts
            for depth, part in enumerate(parts, 1):
                current = os.path.join(current, part)
                created = not self._existing_dir(path, current)
                if created:
                    os.mkdir(current)
                    # a new directory gets its final content at once (the target its limits)
                    self._write(current, limits if depth == len(parts) else UNLIMITED, fresh=True)
                    _put(os.path.join(current, "cgroup.procs"), "")
            if not created:
                self._write(str(target), limits)
        except OSError as err:
            raise CgroupError(
                f'cgroup "{path}": cannot write simulated cgroup at {target}: {err.strerror}'
            ) from None
        logger.debug("cgroup ensured path=%s driver=simulated", path)

    def remove(self, path: str) -> None:
        target = fs_path(self.root, path)
        if target == self.root or not target.is_dir():
            return
        self._refuse_symlink(path, target)
        try:
            for dirpath, _dirs, files in os.walk(target, topdown=False):
                for file in files:
                    os.unlink(os.path.join(dirpath, file))
                os.rmdir(dirpath)
        except OSError as err:
            raise CgroupError(f'cgroup "{path}": cannot remove simulated cgroup: {err.strerror}') from None
        logger.debug("cgroup removed path=%s driver=simulated", path)

    def read(self, path: str) -> CgroupLimits:
        target = fs_path(self.root, path)
        if not target.is_dir():
            raise CgroupError(f'cgroup "{path}" does not exist')
        return v2_parse({f: read_text(target / f) for f in V2_FILES})

    def exists(self, path: str) -> bool:
        return fs_path(self.root, path).is_dir()

    def procs(self, path: str) -> tuple[int, ...]:
        return parse_procs(read_text(fs_path(self.root, path) / "cgroup.procs"))
