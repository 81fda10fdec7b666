"""The node's cgroup tree: names and limits (pure), and the drivers that write them."""

from __future__ import annotations

from pathlib import Path

from nodeagent.cm.cgroups.cgroupfs import CgroupfsCgroups
from nodeagent.cm.cgroups.driver import CgroupDriver, CgroupError
from nodeagent.cm.cgroups.limits import CgroupLimits
from nodeagent.cm.cgroups.simulated import SimulatedCgroups
from nodeagent.config import Config

__all__ = ["CgroupDriver", "CgroupError", "CgroupLimits", "CgroupfsCgroups", "SimulatedCgroups", "driver_for"]


def driver_for(cfg: Config, cgroupfs_root: Path | None = None) -> CgroupDriver:
    """The driver cfg.agent.cgroup_backend names: simulated (default) or cgroupfs."""
    if cfg.agent.cgroup_backend == "cgroupfs":
        return CgroupfsCgroups(cgroupfs_root or cfg.agent.cgroupfs_root)
    return SimulatedCgroups(cfg.cgroup_sim_root)
