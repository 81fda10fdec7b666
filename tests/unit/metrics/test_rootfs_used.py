"""fs.usedBytes of /stats/summary: the node's rootfs as the kubelet counts it, never a blanket 0.

The demo reported usedBytes 0: it was capacity - available of the eviction signal, and on a
node whose disk size comes from the profile that is just the pods' simulated usage.
"""

from __future__ import annotations

import os
from pathlib import Path

from nodeagent.host.model import FsStats
from nodeagent.host.probe import SystemProbe
from nodeagent.metrics import summary as sm
from nodeagent.util.clock import FakeClock

GiB = 1 << 30


def test_used_is_capacity_minus_free_as_cadvisor() -> None:
    """Root-reserved blocks are free, not used: statvfs capacity - f_bfree, not capacity - f_bavail."""
    assert FsStats(capacity=100 * GiB, available=55 * GiB, inodes=10, inodes_free=5, free=60 * GiB).used == 40 * GiB
    assert FsStats(capacity=100, available=60, inodes=1, inodes_free=1).used == 40  # free unknown


def test_probe_reports_free_blocks(tmp_path: Path) -> None:
    # other writers on the disk move f_bfree between two readings: compare with a reading the probe's
    # own falls between, taken when nothing changed around it
    for _ in range(50):
        before = os.statvfs(tmp_path)
        fs = SystemProbe().filesystem(tmp_path)
        st = os.statvfs(tmp_path)
        if (before.f_bfree, before.f_blocks) == (st.f_bfree, st.f_blocks):
            break
    assert fs.free == st.f_bfree * st.f_frsize
    assert fs.used == (st.f_blocks - st.f_bfree) * st.f_frsize


def test_disk_usage_as_du(tmp_path: Path) -> None:
    probe = SystemProbe()
    root, state, outside = tmp_path / "root", tmp_path / "state", tmp_path / "outside"
    for d in (root / "plugins", state, outside):
        d.mkdir(parents=True)
    (root / "plugins" / "blob").write_bytes(os.urandom(256 * 1024))
    (state / "state.db").write_bytes(os.urandom(64 * 1024))
    (outside / "big").write_bytes(os.urandom(1024 * 1024))
    os.link(state / "state.db", root / "hardlink.db")  # one inode, counted once
    (root / "link").symlink_to(outside)  # not followed
    only_root = probe.disk_usage([root])
    both = probe.disk_usage([root, state])
    assert 256 * 1024 + 64 * 1024 <= only_root < 1024 * 1024
    assert both == only_root + os.lstat(state).st_blocks * 512  # state.db already counted through the link
    assert probe.disk_usage([tmp_path / "missing"]) == 0


def test_rootfs_used_bytes() -> None:
    # the node is on the host's disk: everything on it, plus the pods' simulated usage
    assert sm.rootfs_used_bytes(500 * GiB, 500 * GiB, 120 * GiB, 5, 2 * GiB) == 122 * GiB
    # a profile disk: what the node wrote plus the pods' simulated usage
    assert sm.rootfs_used_bytes(100 * GiB, 500 * GiB, 120 * GiB, 3 << 20, GiB) == GiB + (3 << 20)
    # clamped to the capacity
    assert sm.rootfs_used_bytes(100 * GiB, 500 * GiB, 0, 0, 300 * GiB) == 100 * GiB


def test_summary_uses_the_providers_used_bytes() -> None:
    class Provider:
        def node_stats(self) -> sm.NodeStats:
            fs = sm.FsStats(capacity_bytes=100, available_bytes=100, inodes=5, inodes_free=4, used_bytes=7)
            return sm.NodeStats(sm.CPUStats(0.0), sm.MemoryStats(1), fs)

    doc = sm.SummaryBuilder("n", Provider(), lambda: (0.0, 0), FakeClock()).summary()
    assert doc["node"]["fs"]["usedBytes"] == 7
