"""The CgroupDriver port, plus the cgroup v2 file formats both drivers share.

A driver turns a cgroup path from names.py ("/kubepods/burstable/pod<uid>") into
directories and limit files. `simulated` (simulated.py) writes plain files under the
state dir; `cgroupfs` (cgroupfs.py) writes real cgroups, v1 or v2. The container
manager only sees this Protocol.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from nodeagent.cm.cgroups.limits import DEFAULT_SHARES, QUOTA_PERIOD, CgroupLimits, weight_to_shares
from nodeagent.errors import NodeAgentError


class CgroupError(NodeAgentError):
    """A cgroup operation failed; the message names the cgroup and the cause."""


class CgroupDriver(Protocol):
    @property
    def name(self) -> str:
        """"simulated" or "cgroupfs"."""
        ...

    def ensure(self, path: str, limits: CgroupLimits) -> None:
        """Create the cgroup (and its parents) if needed and set exactly these limits."""
        ...

    def remove(self, path: str) -> None:
        """Remove the cgroup and its descendants, deepest first; a no-op if absent."""
        ...

    def read(self, path: str) -> CgroupLimits:
        """The limits the cgroup has now (raises CgroupError if it does not exist)."""
        ...

    def exists(self, path: str) -> bool: ...

    def procs(self, path: str) -> tuple[int, ...]:
        """Pids in the cgroup (not its descendants); () if it does not exist."""
        ...


def fs_path(base: Path, path: str) -> Path:
    """`path` ("/a/b") below `base`; refuses relative components so nothing escapes `base`."""
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise CgroupError(f'cgroup "{path}": "." and ".." are not allowed in cgroup names')
    return base.joinpath(*parts)


# ---------------------------------------------------------------- cgroup v2 files

V2_FILES = ("memory.max", "cpu.weight", "cpu.max", "pids.max")


def v2_values(limits: CgroupLimits) -> dict[str, str]:
    """cgroup v2 file -> content for `limits`."""
    quota = "max" if limits.cpu_quota is None else str(limits.cpu_quota)
    return {
        "memory.max": "max" if limits.memory_max is None else str(limits.memory_max),
        "cpu.weight": str(limits.cpu_weight),
        "cpu.max": f"{quota} {limits.cpu_period}",
        "pids.max": "max" if limits.pids_max is None else str(limits.pids_max),
    }


def _max_or_int(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    return None if text in ("max", "") else int(text)


def v2_parse(files: dict[str, str | None]) -> CgroupLimits:
    """Limits from cgroup v2 file contents (absent files give defaults).

    cpu.weight loses precision, so cpu_shares is the smallest shares value with that
    weight: compare cpu_weight, not cpu_shares, after a round trip through v2.
    """
    weight = files.get("cpu.weight")
    quota: int | None = None
    period = QUOTA_PERIOD
    cpu_max = files.get("cpu.max")
    if cpu_max:
        q, _, p = cpu_max.strip().partition(" ")
        quota = _max_or_int(q)
        period = int(p) if p else QUOTA_PERIOD
    return CgroupLimits(
        memory_max=_max_or_int(files.get("memory.max")),
        cpu_shares=weight_to_shares(int(weight)) if weight and weight.strip() else DEFAULT_SHARES,
        cpu_quota=quota,
        cpu_period=period,
        pids_max=_max_or_int(files.get("pids.max")),
    )


def read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def parse_procs(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    return tuple(int(line) for line in text.split() if line.strip().isdigit())
