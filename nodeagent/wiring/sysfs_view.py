"""Wiring of the sysfs view (cm/sysfsview.py): the node's simulated machine written as a sysfs root.

Written once at start (the machine does not change while the daemon runs) to
NodeAgentConfiguration.sysfsDir, by default STATE_DIR/host/sys, so that STATE_DIR/host is a host
root whose `sys` is the view (ghw's GHW_CHROOT, a container's /host-sys mount). The tree is built
in a sibling folder and renamed into place, replacing the previous start's: a reader never sees a
mix of two machines, and files of a machine that had more cpus do not linger.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from nodeagent.cm.capacity import HUGEPAGES_PREFIX
from nodeagent.cm.manager import ContainerManager
from nodeagent.cm.sysfsview import NodeMemory, Tree, render
from nodeagent.config import Config
from nodeagent.util import quantity

logger = logging.getLogger(__name__)


def path(cfg: Config) -> Path:
    """Where the node's view goes: sysfsDir, else STATE_DIR/host/sys."""
    return cfg.agent.sysfs_dir or cfg.agent.state_dir / "host" / "sys"


def tree(cm: ContainerManager) -> Tree:
    """The view of the container manager's machine: its CPU topology and NUMA memory."""
    memory = {}
    for node in cm.capacity_info.numa_nodes:
        hugepages = {int(quantity.parse(name[len(HUGEPAGES_PREFIX):])): size for name, size in node.hugepages}
        memory[node.id] = NodeMemory(node.memory, hugepages)
    if not memory and len(cm.topology.numa_nodes) == 1:  # NUMA layout unknown: one node, all memory
        memory[cm.topology.numa_nodes[0]] = NodeMemory(cm.capacity.get("memory", 0), {})
    return render(cm.topology, memory)


def holds(root: Path, view: Tree) -> bool:
    """Whether `root` is exactly `view` already: its files with their content, its links, nothing else."""
    entries: set[str] = set()
    try:
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                entries.add(name if rel_dir == "." else f"{rel_dir}/{name}")
        if entries != view.files.keys() | view.links.keys():
            return False
        return all(os.readlink(root / rel) == link for rel, link in view.links.items()) and all(
            (root / rel).read_text() == content + "\n" for rel, content in view.files.items())
    except (OSError, UnicodeDecodeError):
        return False


def write(root: Path, view: Tree) -> bool:
    """Build the tree beside `root`, then put it in `root`'s place; nothing when `root` holds it already;
    whether it wrote one.

    A restart finds the previous start's tree, the same machine's: reading it back costs a fraction of
    building a new one, renaming it in and removing the old one (0.3 s of the restart to ready on a
    loaded machine, issue 25), and a tree changed by hand is still replaced."""
    if root.is_dir() and not root.is_symlink() and holds(root, view):
        return False
    root.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    try:
        for rel, content in view.files.items():
            target = build / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content + "\n")
        for rel, link in view.links.items():
            target = build / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(link, target)
        build.chmod(0o755)
        old = root.with_name(f".{root.name}-old")
        if root.exists():
            shutil.rmtree(old, ignore_errors=True)
            root.rename(old)
        build.rename(root)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    return True


def start(cfg: Config, cm: ContainerManager) -> Path | None:
    """Write the node's view; its path, or None when it could not be written (logged)."""
    root = path(cfg)
    try:
        written = write(root, tree(cm))
    except OSError as err:
        logger.warning("sysfs view not written dir=%s err=%s", root, err)
        return None
    logger.info("sysfs view %s dir=%s cpus=%d numa_nodes=%d", "written" if written else "kept (unchanged)", root,
                cm.topology.num_cpus, cm.topology.num_numa_nodes)
    return root
