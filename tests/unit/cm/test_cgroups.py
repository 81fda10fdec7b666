"""Cgroup names, limits as the kubelet sets them, and the simulated driver."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from nodeagent.cm.cgroups import limits as L
from nodeagent.cm.cgroups.driver import CgroupError
from nodeagent.cm.cgroups.names import CgroupNaming
from nodeagent.cm.cgroups.simulated import SimulatedCgroups
from nodeagent.errors import ConfigError
from nodeagent.objects.pod.model import BEST_EFFORT, BURSTABLE, GUARANTEED, Container, Pod

Gi = 1 << 30
Mi = 1 << 20
UID = "1234-abcd"


@pytest.mark.parametrize(
    ("driver", "root", "qos", "expected"),
    [
        ("cgroupfs", "/", GUARANTEED, "/kubepods/pod1234-abcd"),
        ("cgroupfs", "/", BURSTABLE, "/kubepods/burstable/pod1234-abcd"),
        ("cgroupfs", "/", BEST_EFFORT, "/kubepods/besteffort/pod1234-abcd"),
        ("cgroupfs", "/na-test", BURSTABLE, "/na-test/kubepods/burstable/pod1234-abcd"),
        ("systemd", "/", GUARANTEED, "/kubepods.slice/kubepods-pod1234_abcd.slice"),
        ("systemd", "/", BURSTABLE,
         "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice"),
        ("systemd", "/", BEST_EFFORT,
         "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234_abcd.slice"),
    ],
)
def test_pod_cgroup_names(driver: str, root: str, qos: str, expected: str) -> None:
    assert CgroupNaming(driver, root).pod(UID, qos) == expected


def test_qos_and_kubepods_names() -> None:
    fs = CgroupNaming("cgroupfs", "/")
    assert fs.kubepods() == "/kubepods"
    assert fs.qos(BURSTABLE) == "/kubepods/burstable"
    assert fs.qos(GUARANTEED) == "/kubepods"
    sd = CgroupNaming("systemd", "/")
    assert sd.kubepods() == "/kubepods.slice"
    assert sd.qos(BEST_EFFORT) == "/kubepods.slice/kubepods-besteffort.slice"


def test_bad_driver_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cgroupDriver"):
        CgroupNaming("nope", "/")


@pytest.mark.parametrize(
    ("milli", "shares"),
    [(0, 2), (1, 2), (100, 102), (250, 256), (1000, 1024), (3500, 3584), (10**9, 262144)],
)
def test_milli_to_shares(milli: int, shares: int) -> None:
    assert L.milli_to_shares(milli) == shares


@pytest.mark.parametrize(
    ("shares", "weight"), [(2, 1), (1024, 39), (102, 4), (262144, 10000), (3584, 137)]
)
def test_shares_to_weight(shares: int, weight: int) -> None:
    assert L.shares_to_weight(shares) == weight
    assert L.shares_to_weight(L.weight_to_shares(weight)) == weight


@pytest.mark.parametrize(("milli", "quota"), [(0, 0), (1, 1000), (500, 50000), (2000, 200000)])
def test_milli_to_quota(milli: int, quota: int) -> None:
    assert L.milli_to_quota(milli) == quota


def _pod(*containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod(uid=UID, name="p", containers=containers, init_containers=init)


def test_pod_limits_guaranteed() -> None:
    c = {"cpu": 1500, "memory": 512 * Mi}
    pod = _pod(Container("a", requests=c, limits=c), Container("b", requests=c, limits=c))
    got = L.pod_cgroup_limits(pod, GUARANTEED)
    assert got == L.CgroupLimits(memory_max=1024 * Mi, cpu_shares=3072, cpu_quota=300000, cpu_period=100000)


def test_pod_limits_burstable_partial_limits() -> None:
    pod = _pod(
        Container("a", requests={"cpu": 250, "memory": Mi}, limits={"cpu": 500, "memory": 2 * Mi}),
        Container("b", requests={"cpu": 250}),
    )
    got = L.pod_cgroup_limits(pod, BURSTABLE)
    assert got.cpu_shares == 512
    assert got.memory_max is None  # not every container has a memory limit
    assert got.cpu_quota is None


def test_pod_limits_burstable_all_limited() -> None:
    pod = _pod(Container("a", requests={"cpu": 100}, limits={"cpu": 200, "memory": 64 * Mi}))
    got = L.pod_cgroup_limits(pod, BURSTABLE)
    assert (got.cpu_shares, got.cpu_quota, got.memory_max) == (102, 20000, 64 * Mi)


def test_pod_limits_init_container_peak() -> None:
    pod = _pod(
        Container("app", requests={"cpu": 100}),
        init=(Container("init", requests={"cpu": 2000}),),
    )
    assert L.pod_cgroup_limits(pod, BURSTABLE).cpu_shares == 2048


def test_pod_limits_with_node_allocatable_claim_statuses() -> None:
    """ResourceConfigForPod with DRANodeAllocatableResources: the claim's mapped memory and cpu
    overheads join the pod's requests (shares) and the limits the containers declare (quota,
    memory.max); with the gate off they do not."""
    c = {"cpu": 1000, "memory": 512 * Mi}
    status = {"nodeAllocatableResourceClaimStatuses": [{
        "resourceClaimName": "p-gpu", "containers": ["a"], "mapping": [{"name": "memory", "quantity": "1Gi"}],
        "overhead": [{"name": "cpu", "perPod": "500m", "perContainer": "250m"}]}]}
    pod = dataclasses.replace(_pod(Container("a", requests=c, limits=c)), manifest={"status": status})
    assert L.pod_cgroup_limits(pod, GUARANTEED, node_allocatable=True) == L.CgroupLimits(
        memory_max=1536 * Mi, cpu_shares=1792, cpu_quota=175000, cpu_period=100000)
    assert L.pod_cgroup_limits(pod, GUARANTEED) == L.CgroupLimits(
        memory_max=512 * Mi, cpu_shares=1024, cpu_quota=100000, cpu_period=100000)
    burstable = dataclasses.replace(_pod(Container("a", requests={"cpu": 100})), manifest={"status": status})
    got = L.pod_cgroup_limits(burstable, BURSTABLE, node_allocatable=True)
    assert (got.cpu_shares, got.cpu_quota, got.memory_max) == (870, None, None)  # no limits declared: none added


def test_pod_limits_besteffort() -> None:
    assert L.pod_cgroup_limits(_pod(Container("a")), BEST_EFFORT) == L.CgroupLimits(cpu_shares=2)


def test_kubepods_limits_enforced_is_capacity_minus_reserved() -> None:
    capacity = {"cpu": 4000, "memory": 32 * Gi}
    got = L.kubepods_limits(capacity, {"memory": 2 * Gi, "cpu": 500}, {"memory": Gi, "pid": 100}, 32768,
                            enforce_pods=True)
    assert got.memory_max == 29 * Gi  # allocatable (31033655296 with 100Mi eviction) + 100Mi
    assert got.cpu_shares == L.milli_to_shares(3500)
    assert got.pids_max == 32668


def test_kubepods_limits_not_enforced_is_capacity() -> None:
    got = L.kubepods_limits({"cpu": 4000, "memory": 8 * Gi}, {"memory": Gi}, {}, 32768, enforce_pods=False)
    assert (got.memory_max, got.cpu_shares, got.pids_max) == (8 * Gi, 4096, None)


def test_qos_and_reserved_limits() -> None:
    assert L.besteffort_limits().cpu_shares == 2
    assert L.burstable_limits([]).cpu_shares == 2
    assert L.burstable_limits([500, 1500]).cpu_shares == 2048
    got = L.reserved_limits({"cpu": 500, "memory": Gi})
    assert (got.cpu_shares, got.memory_max, got.pids_max) == (512, Gi, None)


# ---------------------------------------------------------------- simulated driver


def test_simulated_driver_writes_v2_files(tmp_path: Path) -> None:
    drv = SimulatedCgroups(tmp_path / "cg")
    limits = L.CgroupLimits(memory_max=Gi, cpu_shares=1024, cpu_quota=50000, pids_max=100)
    drv.ensure("/kubepods/burstable/podx", limits)
    leaf = tmp_path / "cg/kubepods/burstable/podx"
    assert (leaf / "memory.max").read_text() == f"{Gi}\n"
    assert (leaf / "cpu.weight").read_text() == "39\n"
    assert (leaf / "cpu.max").read_text() == "50000 100000\n"
    assert (leaf / "pids.max").read_text() == "100\n"
    parent = tmp_path / "cg/kubepods/burstable"
    assert (parent / "memory.max").read_text() == "max\n"
    assert (parent / "cpu.max").read_text() == "max 100000\n"
    got = drv.read("/kubepods/burstable/podx")
    assert (got.memory_max, got.cpu_weight, got.cpu_quota, got.pids_max) == (Gi, 39, 50000, 100)
    assert drv.exists("/kubepods/burstable")
    assert drv.procs("/kubepods/burstable/podx") == ()


def test_simulated_driver_update_and_remove(tmp_path: Path) -> None:
    drv = SimulatedCgroups(tmp_path)
    drv.ensure("/kubepods/podx", L.CgroupLimits(memory_max=Gi))
    drv.ensure("/kubepods/podx", L.UNLIMITED)
    assert drv.read("/kubepods/podx").memory_max is None
    drv.ensure("/kubepods/podx/child", L.UNLIMITED)
    drv.remove("/kubepods/podx")
    assert not drv.exists("/kubepods/podx")
    assert drv.exists("/kubepods")
    drv.remove("/kubepods/podx")  # idempotent
    with pytest.raises(CgroupError, match="does not exist"):
        drv.read("/kubepods/podx")


def test_simulated_driver_refuses_escape(tmp_path: Path) -> None:
    with pytest.raises(CgroupError, match=r"\.\."):
        SimulatedCgroups(tmp_path).ensure("/kubepods/../../etc", L.UNLIMITED)


def test_pod_uid_with_slash_is_not_a_cgroup_name() -> None:
    """issue 15: static pod uid "a/b/c" made nested cgroup folders; the kubelet refuses "/" in a component."""
    with pytest.raises(ValueError, match="invalid character"):
        CgroupNaming("cgroupfs", "/").pod("a/b/c", BURSTABLE)


def test_simulated_driver_never_follows_symlinks(tmp_path: Path) -> None:
    """issue 15: the simulated tree followed a planted link out of the state dir."""
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "cg"
    root.mkdir()
    (root / "kubepods").symlink_to(outside)
    drv = SimulatedCgroups(root)
    with pytest.raises(CgroupError, match="is a symlink"):
        drv.ensure("/kubepods/burstable", L.UNLIMITED)
    with pytest.raises(CgroupError, match="is a symlink"):
        drv.remove("/kubepods")
    assert list(outside.iterdir()) == []
    (root / "kubepods").unlink()
    drv.ensure("/kubepods", L.UNLIMITED)
    (root / "kubepods" / "memory.max").unlink()
    (root / "kubepods" / "memory.max").symlink_to(outside / "planted")
    with pytest.raises(CgroupError):
        drv.ensure("/kubepods", L.UNLIMITED)
    assert list(outside.iterdir()) == []
    linked_root = SimulatedCgroups(tmp_path / "linked")
    (tmp_path / "linked").symlink_to(outside)
    with pytest.raises(CgroupError, match="is a symlink"):
        linked_root.ensure("/kubepods", L.UNLIMITED)


def test_simulated_driver_rewrites_only_changed_files(tmp_path: Path) -> None:
    """issue 10: a pod's cgroup ensured again rewrote every file; only changed ones are written."""
    drv = SimulatedCgroups(tmp_path)
    limits = L.CgroupLimits(memory_max=Gi, cpu_shares=1024, pids_max=100)
    drv.ensure("/kubepods/podx", limits)
    leaf = tmp_path / "kubepods/podx"
    files = ("memory.max", "cpu.weight", "cpu.max", "pids.max")
    for name in files:
        os.utime(leaf / name, ns=(1_000_000_000, 1_000_000_000))  # an old mtime: a rewrite would move it
    drv.ensure("/kubepods/podx", limits)
    assert {n: (leaf / n).stat().st_mtime_ns for n in files} == dict.fromkeys(files, 1_000_000_000)
    drv.ensure("/kubepods/podx", L.CgroupLimits(memory_max=2 * Gi, cpu_shares=1024, pids_max=100))
    assert (leaf / "memory.max").read_text() == f"{2 * Gi}\n"
    assert (leaf / "memory.max").stat().st_mtime_ns != 1_000_000_000
    assert (leaf / "pids.max").stat().st_mtime_ns == 1_000_000_000
    (leaf / "cpu.max").unlink()  # a missing file is written again
    drv.ensure("/kubepods/podx", L.CgroupLimits(memory_max=2 * Gi, cpu_shares=1024, pids_max=100))
    assert (leaf / "cpu.max").read_text() == "max 100000\n"
    drv.ensure("/", L.UNLIMITED)  # the root itself: its files are written too
    assert (tmp_path / "memory.max").read_text() == "max\n"
