"""The cgroupfs driver against the real cgroup filesystem (root only).

Everything lives under a throwaway cgroupRoot /na-test-<random>, removed in the
fixture's finally even when a test fails. Skips (with the reason) when not root or
when the cgroup filesystem refuses mkdir.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeagent.cm.cgroups.cgroupfs import CgroupfsCgroups
from nodeagent.cm.cgroups.driver import CgroupError, fs_path
from nodeagent.cm.cgroups.limits import UNLIMITED, CgroupLimits
from nodeagent.cm.manager import ContainerManager
from nodeagent.config import parse_documents
from nodeagent.host.fake import FakeHost
from nodeagent.objects.pod.model import BEST_EFFORT, BURSTABLE, GUARANTEED, Container, Pod
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock

pytestmark = pytest.mark.linux

MOUNT = Path("/sys/fs/cgroup")
Gi = 1 << 30
Mi = 1 << 20


def _driver_or_skip(mount: Path) -> tuple[CgroupfsCgroups, str]:
    if os.geteuid() != 0:
        pytest.skip("real cgroups need root")
    if not mount.is_dir():
        pytest.skip(f"no cgroup filesystem at {mount}")
    driver = CgroupfsCgroups(mount)
    if not driver.v2 and not driver.controllers:
        pytest.skip(f"no cgroup v1 memory/cpu/pids hierarchies under {mount}")
    root = f"/na-test-{uuid.uuid4().hex[:8]}"
    try:
        driver.ensure(root, UNLIMITED)
    except (CgroupError, OSError) as err:
        driver.remove(root)
        pytest.skip(f"cannot create a cgroup under {mount}: {err}")
    return driver, root


@pytest.fixture
def cgroupfs() -> Iterator[tuple[CgroupfsCgroups, str]]:
    driver, root = _driver_or_skip(MOUNT)
    try:
        yield driver, root
    finally:
        driver.remove(root)
        assert not driver.exists(root)


def _file(driver: CgroupfsCgroups, controller: str, path: str, name: str) -> str:
    base = driver.root if driver.v2 else driver.root / controller
    return (fs_path(base, path) / name).read_text().strip()


def test_driver_sets_limits_and_removes_leaf_first(cgroupfs: tuple[CgroupfsCgroups, str]) -> None:
    driver, root = cgroupfs
    leaf = f"{root}/kubepods/burstable/podabc"
    limits = CgroupLimits(memory_max=256 * Mi, cpu_shares=512, cpu_quota=50000, pids_max=100)
    driver.ensure(leaf, limits)
    assert driver.exists(f"{root}/kubepods/burstable")
    got = driver.read(leaf)
    assert got.memory_max == 256 * Mi
    assert got.cpu_weight == limits.cpu_weight
    assert (got.cpu_quota, got.cpu_period) == (50000, 100000)
    if not driver.v2:
        assert _file(driver, "memory", leaf, "memory.limit_in_bytes") == str(256 * Mi)
        assert _file(driver, "cpu", leaf, "cpu.shares") == "512"
        assert _file(driver, "cpu", leaf, "cpu.cfs_quota_us") == "50000"
        assert _file(driver, "cpu", leaf, "cpu.cfs_period_us") == "100000"
        if "pids" in driver.controllers:
            assert _file(driver, "pids", leaf, "pids.max") == "100"
    driver.ensure(leaf, UNLIMITED)
    again = driver.read(leaf)
    assert (again.memory_max, again.cpu_quota, again.pids_max) == (None, None, None)
    driver.remove(f"{root}/kubepods")
    assert not driver.exists(leaf) and not driver.exists(f"{root}/kubepods")
    assert driver.exists(root)


def test_remove_refuses_a_cgroup_with_processes(cgroupfs: tuple[CgroupfsCgroups, str]) -> None:
    driver, root = cgroupfs
    leaf = f"{root}/busy"
    driver.ensure(leaf, UNLIMITED)
    proc = subprocess.Popen(["sleep", "30"])
    try:
        procs = (driver.root if driver.v2 else driver.root / driver.controllers[0])
        (fs_path(procs, leaf) / "cgroup.procs").write_text(str(proc.pid))
        assert driver.procs(leaf) == (proc.pid,)
        with pytest.raises(CgroupError, match="still has processes"):
            driver.remove(leaf)
    finally:
        proc.kill()
        proc.wait()
    driver.remove(leaf)
    assert not driver.exists(leaf)


def test_container_manager_builds_the_real_tree(
    cgroupfs: tuple[CgroupfsCgroups, str], tmp_path: Path
) -> None:
    driver, root = cgroupfs
    cfg = parse_documents([
        {"kind": "KubeletConfiguration", "cgroupRoot": root,
         "kubeReserved": {"memory": "1Gi", "cpu": "500m"}, "systemReserved": {"memory": "512Mi"},
         "evictionHard": {"memory.available": "100Mi"},
         "enforceNodeAllocatable": ["pods", "kube-reserved"], "kubeReservedCgroup": f"{root}/kube-reserved"},
        {"kind": "NodeAgentConfiguration", "nodeName": "n", "rootDir": str(tmp_path / "root"),
         "stateDir": str(tmp_path / "state"), "cgroupBackend": "cgroupfs",
         "nodeProfile": {"capacity": {"cpu": "4", "memory": "8Gi"}}},
    ])
    driver.ensure(f"{root}/kube-reserved", UNLIMITED)  # the kubelet never creates reserved cgroups
    cm = ContainerManager(cfg, FakeHost(), driver, StateDB.memory(), FakeClock())
    cm.start()
    kubepods = driver.read(f"{root}/kubepods")
    assert kubepods.memory_max == 8 * Gi - 1 * Gi - 512 * Mi
    assert kubepods.cpu_weight == CgroupLimits(cpu_shares=3584).cpu_weight
    assert driver.read(f"{root}/kubepods/besteffort").cpu_weight == 1
    assert driver.read(f"{root}/kube-reserved").memory_max == Gi
    g = {"cpu": 1000, "memory": 128 * Mi}
    gpod = Pod(uid="g1", name="g", containers=(Container("c", requests=g, limits=g),))
    bpod = Pod(uid="b1", name="b", containers=(Container("c", requests={"cpu": 2000}),))
    epod = Pod(uid="e1", name="e", containers=(Container("c"),))
    for pod, qos in ((gpod, GUARANTEED), (bpod, BURSTABLE), (epod, BEST_EFFORT)):
        cm.create_pod_cgroup(pod, qos)
    assert driver.read(f"{root}/kubepods/podg1").memory_max == 128 * Mi
    assert driver.read(f"{root}/kubepods/podg1").cpu_quota == 100000
    assert driver.read(f"{root}/kubepods/burstable").cpu_weight == CgroupLimits(cpu_shares=2048).cpu_weight
    for pod, qos in ((gpod, GUARANTEED), (bpod, BURSTABLE), (epod, BEST_EFFORT)):
        cm.remove_pod_cgroup(pod, qos)
    assert not driver.exists(f"{root}/kubepods/burstable/podb1")
    assert driver.read(f"{root}/kubepods/burstable").cpu_weight == 1


def test_unified_hierarchy_create_and_remove() -> None:
    """The cgroup2 mount of a hybrid host (or the root of a v2 host): tree made and removed."""
    mount = MOUNT / "unified" if (MOUNT / "unified/cgroup.controllers").is_file() else MOUNT
    if not (mount / "cgroup.controllers").is_file():
        pytest.skip("no cgroup2 mount on this host")
    driver, root = _driver_or_skip(mount)
    try:
        assert driver.v2
        driver.ensure(f"{root}/kubepods/podx", CgroupLimits(memory_max=64 * Mi))
        assert driver.exists(f"{root}/kubepods/podx")
        if "memory" in driver.controllers:
            assert driver.read(f"{root}/kubepods/podx").memory_max == 64 * Mi
    finally:
        driver.remove(root)
    assert not driver.exists(root)
