"""The cgroupfs driver: real cgroups under a mount root, cgroup v2 or v1 detected.

v2 (unified): `cgroup.controllers` exists in the root; one tree, files memory.max,
cpu.weight, cpu.max, pids.max; before a child is made, the parent's
cgroup.subtree_control gets +memory +cpu +pids (those the parent offers).
v1 (legacy or hybrid): one hierarchy per controller, root/memory, root/cpu,
root/pids, files memory.limit_in_bytes, cpu.shares, cpu.cfs_period_us,
cpu.cfs_quota_us and pids.max; every cgroup is made in each hierarchy.

A controller the host does not offer is skipped with one warning (its limits are not
set and read back as defaults), as a kubelet on such a host could not set them either.
Removal is rmdir only, deepest first: the kernel refuses to remove a cgroup that still
has processes, and that refusal surfaces as CgroupError.
"""

from __future__ import annotations

import errno
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
from nodeagent.cm.cgroups.limits import DEFAULT_SHARES, QUOTA_PERIOD, CgroupLimits

logger = logging.getLogger(__name__)

CONTROLLERS = ("memory", "cpu", "pids")
_V1_UNLIMITED_MEMORY = 1 << 62  # the kernel reports "unlimited" as a page-rounded 2^63-1


class CgroupfsCgroups:
    def __init__(self, root: Path = Path("/sys/fs/cgroup")) -> None:
        self.root = root
        self.v2 = (root / "cgroup.controllers").is_file()
        if self.v2:
            offered = (read_text(root / "cgroup.controllers") or "").split()
            self.controllers = tuple(c for c in CONTROLLERS if c in offered)
        else:
            self.controllers = tuple(c for c in CONTROLLERS if (root / c).is_dir())
        self._warned: set[str] = set()
        missing = [c for c in CONTROLLERS if c not in self.controllers]
        if missing:
            logger.warning(
                "cgroup controllers unavailable, their limits are not set root=%s version=%s missing=%s",
                root, "v2" if self.v2 else "v1", ",".join(missing),
            )

    @property
    def name(self) -> str:
        return "cgroupfs"

    @property
    def version(self) -> int:
        return 2 if self.v2 else 1

    # ---------------------------------------------------------------- helpers

    def _dirs(self, path: str) -> list[Path]:
        """The cgroup's directory in every hierarchy it lives in."""
        if self.v2:
            return [fs_path(self.root, path)]
        return [fs_path(self.root / c, path) for c in self.controllers]

    def _write(self, file: Path, content: str, path: str) -> None:
        # cgroupfs cannot create files: a missing one (controller not enabled, or no
        # CFS bandwidth support) is skipped with one warning per file name.
        if not file.exists():
            if file.name not in self._warned:
                self._warned.add(file.name)
                logger.warning("cgroup file missing, limit not set cgroup=%s file=%s", path, file.name)
            return
        try:
            with open(file, "w") as f:
                f.write(content)
        except OSError as err:
            raise CgroupError(
                f'cgroup "{path}": cannot write {file.name}={content}: {err.strerror}'
            ) from None

    def _mkdirs(self, base: Path, target: Path, path: str) -> None:
        current = base
        for part in target.relative_to(base).parts:
            if self.v2:
                self._enable_controllers(current, path)
            current = current / part
            try:
                current.mkdir()
            except FileExistsError:
                pass
            except OSError as err:
                raise CgroupError(f'cgroup "{path}": cannot create {current}: {err.strerror}') from None

    def _enable_controllers(self, parent: Path, path: str) -> None:
        offered = (read_text(parent / "cgroup.controllers") or "").split()
        enabled = (read_text(parent / "cgroup.subtree_control") or "").split()
        for c in self.controllers:
            if c in offered and c not in enabled:
                try:
                    with open(parent / "cgroup.subtree_control", "w") as f:
                        f.write(f"+{c}")
                except OSError as err:
                    logger.warning("cannot enable cgroup controller cgroup=%s parent=%s controller=%s err=%s",
                                   path, parent, c, err.strerror)

    # ---------------------------------------------------------------- the port

    def ensure(self, path: str, limits: CgroupLimits) -> None:
        if self.v2:
            target = fs_path(self.root, path)
            self._mkdirs(self.root, target, path)
            for file, content in v2_values(limits).items():
                self._write(target / file, content, path)
        else:
            for c in self.controllers:
                base = self.root / c
                target = fs_path(base, path)
                self._mkdirs(base, target, path)
                if c == "memory":
                    memory = -1 if limits.memory_max is None else limits.memory_max
                    self._write(target / "memory.limit_in_bytes", str(memory), path)
                elif c == "cpu":
                    shares = DEFAULT_SHARES if limits.cpu_shares is None else limits.cpu_shares
                    self._write(target / "cpu.shares", str(shares), path)
                    self._write(target / "cpu.cfs_period_us", str(limits.cpu_period), path)
                    quota = -1 if limits.cpu_quota is None else limits.cpu_quota
                    self._write(target / "cpu.cfs_quota_us", str(quota), path)
                elif c == "pids":
                    pids = "max" if limits.pids_max is None else str(limits.pids_max)
                    self._write(target / "pids.max", pids, path)
        logger.debug("cgroup ensured path=%s driver=cgroupfs version=%d", path, self.version)

    def remove(self, path: str) -> None:
        for target in self._dirs(path):
            if target in (self.root, *(self.root / c for c in CONTROLLERS)) or not target.is_dir():
                continue
            for dirpath, _dirs, _files in os.walk(target, topdown=False):
                try:
                    os.rmdir(dirpath)
                except FileNotFoundError:
                    continue
                except OSError as err:
                    why = "it still has processes" if err.errno == errno.EBUSY else err.strerror
                    raise CgroupError(f'cgroup "{path}": cannot remove {dirpath}: {why}') from None
        logger.debug("cgroup removed path=%s driver=cgroupfs", path)

    def read(self, path: str) -> CgroupLimits:
        if not self.exists(path):
            raise CgroupError(f'cgroup "{path}" does not exist')
        if self.v2:
            target = fs_path(self.root, path)
            return v2_parse({f: read_text(target / f) for f in V2_FILES})

        def v1(controller: str, file: str) -> str | None:
            if controller not in self.controllers:
                return None
            text = read_text(fs_path(self.root / controller, path) / file)
            return text.strip() if text is not None else None

        memory = v1("memory", "memory.limit_in_bytes")
        shares = v1("cpu", "cpu.shares")
        quota = v1("cpu", "cpu.cfs_quota_us")
        period = v1("cpu", "cpu.cfs_period_us")
        pids = v1("pids", "pids.max")
        return CgroupLimits(
            memory_max=None if memory is None or int(memory) >= _V1_UNLIMITED_MEMORY else int(memory),
            cpu_shares=int(shares) if shares else DEFAULT_SHARES,
            cpu_quota=None if quota is None or int(quota) < 0 else int(quota),
            cpu_period=int(period) if period else QUOTA_PERIOD,
            pids_max=None if pids in (None, "max") else int(pids),
        )

    def exists(self, path: str) -> bool:
        dirs = self._dirs(path)
        return bool(dirs) and all(d.is_dir() for d in dirs)

    def procs(self, path: str) -> tuple[int, ...]:
        dirs = self._dirs(path)
        if not dirs:
            return ()
        return parse_procs(read_text(dirs[0] / "cgroup.procs"))
