"""ContainerManager on a FakeHost with the simulated cgroup driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodeagent.cm.cgroups.simulated import SimulatedCgroups
from nodeagent.cm.manager import ContainerManager
from nodeagent.config import Config, parse_documents
from nodeagent.errors import StartupError
from nodeagent.host.fake import FakeHost
from nodeagent.host.model import ProcessUsage
from nodeagent.objects.pod.model import BEST_EFFORT, BURSTABLE, GUARANTEED, Container, Pod
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock

Gi = 1 << 30
Mi = 1 << 20


def config(tmp: Path, kubelet: dict[str, Any] | None = None, agent: dict[str, Any] | None = None) -> Config:
    return parse_documents([
        {"kind": "KubeletConfiguration", **(kubelet or {})},
        {"kind": "NodeAgentConfiguration", "nodeName": "n1", "rootDir": str(tmp / "root"),
         "stateDir": str(tmp / "state"), **(agent or {})},
    ])


def manager(cfg: Config, host: FakeHost | None = None, clock: FakeClock | None = None) -> ContainerManager:
    return ContainerManager(cfg, host or FakeHost(), SimulatedCgroups(cfg.cgroup_sim_root), StateDB.memory(),
                            clock or FakeClock())


def read(cfg: Config, path: str, file: str) -> str:
    return (cfg.cgroup_sim_root / path.lstrip("/") / file).read_text().strip()


def test_node_resources_from_profile(tmp_path: Path) -> None:
    cfg = config(
        tmp_path,
        {"kubeReserved": {"memory": "2Gi", "cpu": "500m"}, "systemReserved": {"memory": "1Gi"},
         "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"}},
        {"nodeProfile": {"capacity": {"cpu": "8", "memory": "32Gi", "ephemeral-storage": "100Gi"}}},
    )
    res = manager(cfg).node_resources()
    assert res.capacity["memory"] == 32 * Gi
    assert res.allocatable["memory"] == 31033655296
    assert res.allocatable["cpu"] == 7500
    # the kubelet's 10% is a float32: 10737418400 bytes of 100Gi are held back, not 10Gi
    assert res.allocatable["ephemeral-storage"] == 100 * Gi - 10737418400
    assert res.allocatable["pods"] == 110


def test_start_creates_tree_with_kubelet_limits(tmp_path: Path) -> None:
    cfg = config(
        tmp_path,
        {"kubeReserved": {"memory": "2Gi", "cpu": "1"}, "systemReserved": {"memory": "1Gi"},
         "evictionHard": {"memory.available": "100Mi"},
         "enforceNodeAllocatable": ["pods", "kube-reserved"], "kubeReservedCgroup": "/kube-reserved"},
        {"nodeProfile": {"capacity": {"cpu": "4", "memory": "32Gi"}}},
    )
    cm = manager(cfg)
    cm.start()
    assert read(cfg, "/kubepods", "memory.max") == str(29 * Gi)  # allocatable + hard eviction
    assert read(cfg, "/kubepods", "cpu.weight") == "118"  # shares 3072: 1 + 3070 * 9999 // 262142
    assert read(cfg, "/kubepods/besteffort", "cpu.weight") == "1"
    assert read(cfg, "/kubepods/burstable", "cpu.weight") == "1"
    assert read(cfg, "/kube-reserved", "memory.max") == str(2 * Gi)
    assert read(cfg, "/kube-reserved", "cpu.weight") == "39"
    assert not (cfg.cgroup_sim_root / "system-reserved").exists()


def test_pod_cgroups_and_burstable_shares(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    cm = manager(cfg)
    cm.start()
    g = {"cpu": 2000, "memory": 256 * Mi}
    gpod = Pod(uid="g-1", name="g", containers=(Container("c", requests=g, limits=g),))
    bpod = Pod(uid="b-1", name="b", containers=(Container("c", requests={"cpu": 1500}),))
    epod = Pod(uid="e-1", name="e", containers=(Container("c"),))
    cm.create_pod_cgroup(gpod, GUARANTEED)
    cm.create_pod_cgroup(bpod, BURSTABLE)
    cm.create_pod_cgroup(epod, BEST_EFFORT)
    assert read(cfg, "/kubepods/podg-1", "memory.max") == str(256 * Mi)
    assert read(cfg, "/kubepods/podg-1", "cpu.max") == "200000 100000"
    assert read(cfg, "/kubepods/burstable/podb-1", "cpu.max") == "max 100000"
    assert read(cfg, "/kubepods/burstable", "cpu.weight") == str(1 + (1536 - 2) * 9999 // 262142)
    assert read(cfg, "/kubepods/besteffort/pode-1", "cpu.weight") == "1"
    assert cm.snapshot().pod_cgroups == {"g-1": "/kubepods/podg-1", "b-1": "/kubepods/burstable/podb-1",
                                         "e-1": "/kubepods/besteffort/pode-1"}
    cm.remove_pod_cgroup(bpod, BURSTABLE)
    assert not (cfg.cgroup_sim_root / "kubepods/burstable/podb-1").exists()
    assert read(cfg, "/kubepods/burstable", "cpu.weight") == "1"
    cm.remove_pod_cgroup(bpod, BURSTABLE)  # idempotent


def test_systemd_naming(tmp_path: Path) -> None:
    cfg = config(tmp_path, {"cgroupDriver": "systemd"})
    cm = manager(cfg)
    cm.start()
    cm.create_pod_cgroup(Pod(uid="a-b", name="p", containers=(Container("c"),)), BEST_EFFORT)
    assert (cfg.cgroup_sim_root / "kubepods.slice/kubepods-besteffort.slice/"
            "kubepods-besteffort-poda_b.slice/memory.max").is_file()


def test_no_qos_cgroups_when_disabled(tmp_path: Path) -> None:
    cfg = config(tmp_path, {"cgroupsPerQOS": False, "enforceNodeAllocatable": []})
    cm = manager(cfg)
    cm.start()
    cm.create_pod_cgroup(Pod(uid="x", name="x"), BEST_EFFORT)
    assert not (cfg.cgroup_sim_root / "kubepods").exists()


def test_cgroupfs_reserved_cgroup_must_exist(tmp_path: Path) -> None:
    cfg = config(tmp_path, {"enforceNodeAllocatable": ["pods", "system-reserved"],
                            "systemReservedCgroup": "/system.slice", "systemReserved": {"memory": "1Gi"}})

    class NotSimulated(SimulatedCgroups):
        @property
        def name(self) -> str:
            return "cgroupfs"

    cm = ContainerManager(cfg, FakeHost(), NotSimulated(tmp_path / "cg"), StateDB.memory(), FakeClock())
    with pytest.raises(StartupError, match=r'"/system\.slice" does not exist'):
        cm.start()


def test_signals_on_fake_node_subtract_simulated_usage(tmp_path: Path) -> None:
    cfg = config(tmp_path, {"evictionHard": {"memory.available": "100Mi"}},
                 {"nodeProfile": {"capacity": {"memory": "1Gi", "ephemeral-storage": "10Gi"}}})
    cm = manager(cfg)
    pods = [Pod(uid="a", name="a", annotations={"nodeagent.dev/usage-memory": "600Mi",
                                                 "nodeagent.dev/usage-ephemeral-storage": "1Gi"}),
            Pod(uid="b", name="b", annotations={"nodeagent.dev/usage-memory": "1Gi"})]
    obs = cm.observe(pods)
    assert obs["memory.available"].available == 0  # clamped
    assert obs["memory.available"].capacity == Gi
    assert obs["nodefs.available"].available == 9 * Gi
    assert obs["imagefs.available"] == obs["nodefs.available"]
    assert obs["nodefs.inodesFree"].available == 5_000_000
    assert obs["pid.available"].available == 4194304 - 200


def test_signals_on_host_capacity_use_host_available(tmp_path: Path) -> None:
    host = FakeHost(memory_available=3 * Gi)
    cm = manager(config(tmp_path), host)
    pods = [Pod(uid="a", name="a", annotations={"nodeagent.dev/usage-memory": "1Gi"})]
    assert cm.observe(pods)["memory.available"].available == 2 * Gi
    assert cm.observe(pods)["memory.available"].capacity == 16 * Gi


async def test_eviction_through_the_manager(tmp_path: Path, fake_clock: FakeClock) -> None:
    cfg = config(tmp_path, {"evictionHard": {"memory.available": "100Mi"}},
                 {"nodeProfile": {"capacity": {"memory": "1Gi"}}})
    cm = manager(cfg, clock=fake_clock)
    pods = [Pod(uid="a", name="hog", annotations={"nodeagent.dev/usage-memory": "1000Mi"},
                containers=(Container("x"),))]
    evicted: list[str] = []

    async def evict(pod: Pod, *, reason: str, message: str) -> None:
        evicted.append(message)

    em = cm.eviction_manager(lambda: pods, evict)
    victim = await em.synchronize()
    assert victim is not None and victim.pod.name == "hog"
    assert evicted == ["The node was low on resource: memory. Threshold quantity: 100Mi, available: 24Mi. "
                       "Container x was using 1000Mi, request is 0, has larger consumption of memory."]
    snap = cm.snapshot()
    assert snap.conditions == ("MemoryPressure",)
    assert snap.signals["memory.available"].available == 24 * Mi


def test_reserved_usage_measured_by_name(tmp_path: Path, fake_clock: FakeClock) -> None:
    host = FakeHost(named={"containerd": (10, 11)},
                    usage={10: ProcessUsage(1, 2.0, 100 * Mi), 11: ProcessUsage(1, 1.0, 50 * Mi)})
    cfg = config(tmp_path, {"kubeReserved": {"cpu": "500m"}}, {"kubeReservedProcesses": ["containerd"]})
    cm = manager(cfg, host, fake_clock)
    first = cm.snapshot().reserved_usage
    kube = next(u for u in first if u.group == "kube-reserved")
    got = (kube.processes, kube.memory_bytes, kube.cpu_seconds, kube.cpu_millicores)
    assert got == (2, 150 * Mi, 3.0, None)
    assert kube.reservation == {"cpu": 500}
    host.usage = {10: ProcessUsage(1, 4.0, 100 * Mi), 11: ProcessUsage(1, 2.0, 50 * Mi)}
    fake_clock.advance(10.0)
    kube = next(u for u in cm.snapshot().reserved_usage if u.group == "kube-reserved")
    assert kube.cpu_millicores == 300  # 3 cpu-seconds over 10 s
    system = next(u for u in cm.snapshot().reserved_usage if u.group == "system-reserved")
    assert system.processes == 0


def test_cpu_manager_wired_with_reservation(tmp_path: Path) -> None:
    cfg = config(tmp_path, {"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "1"}})
    cm = manager(cfg)
    assert cm.cpu_manager.allocatable_cpus() == (1, 2, 3)
    cfg2 = config(tmp_path, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "3"})
    cm2 = manager(cfg2)
    assert cm2.cpu_manager.allocatable_cpus() == (0, 1, 2)
    assert cm2.node_resources().allocatable["cpu"] == 3000
