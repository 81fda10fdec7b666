"""The simulated cgroup driver: a directory tree of cgroup v2 files under the state dir.

The default backend: no root, no kernel, but the same paths and file names a cgroup v2
host has (memory.max, cpu.weight, cpu.max, pids.max, cgroup.procs), so a user can look
at what the kubelet would have set. Files are written whole; there is nothing to
enforce.
"""

from __future__ import annotations

import logging
import os
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


class SimulatedCgroups:
    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def name(self) -> str:
        return "simulated"

    def _write(self, directory: Path, limits: CgroupLimits) -> None:
        for file, content in v2_values(limits).items():
            (directory / file).write_text(content + "\n")

    def ensure(self, path: str, limits: CgroupLimits) -> None:
        target = fs_path(self.root, path)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            current = self.root
            for part in target.relative_to(self.root).parts:
                current = current / part
                if not current.is_dir():
                    current.mkdir()
                    self._write(current, UNLIMITED)
                    (current / "cgroup.procs").write_text("")
            self._write(target, limits)
        except OSError as err:
            raise CgroupError(
                f'cgroup "{path}": cannot write simulated cgroup at {target}: {err.strerror}'
            ) from None
        logger.debug("cgroup ensured path=%s driver=simulated", path)

    def remove(self, path: str) -> None:
        target = fs_path(self.root, path)
        if target == self.root or not target.is_dir():
            return
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
