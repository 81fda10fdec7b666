"""FakeHost: a HostProbe whose answers are plain attributes tests set and change.

Ships in the package (not under tests/) so integration tests and virtual nodes can use
it too. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nodeagent.host.model import (
    CpuInfo,
    FsStats,
    HostFacts,
    HugePages,
    MemoryStats,
    NumaInfo,
    PidStats,
    ProcessUsage,
    SystemInfo,
)

GiB = 1 << 30


@dataclass
class FakeHost:
    """A 4-cpu, 16Gi machine on one filesystem of 100Gi unless told otherwise."""

    cpus: tuple[int, ...] = (0, 1, 2, 3)
    memory_total: int = 16 * GiB
    memory_available: int = 12 * GiB
    hugepages: tuple[HugePages, ...] = ()
    numa_nodes: tuple[NumaInfo, ...] = ()
    cpu_info: tuple[CpuInfo, ...] = ()
    pid_max: int = 4194304
    pids_running: int = 200
    # the network as host/address.py reads it: no default route unless told (the node IP falls back)
    default_route_interfaces: tuple[str, ...] = ()
    interface_addresses: tuple[tuple[str, str], ...] = ()
    system: SystemInfo = field(default_factory=lambda: SystemInfo(
        machine_id="0123456789abcdef0123456789abcdef", system_uuid="4c4c4544-0042-3010-8052-b4c04f564433",
        boot_id="6f3c2a0e-1b2d-4c5e-8f90-a1b2c3d4e5f6", os_image="Debian GNU/Linux 12 (bookworm)",
        kernel_version="6.1.0-fake", architecture="amd64",
    ))
    fs: FsStats = field(
        default_factory=lambda: FsStats(capacity=100 * GiB, available=60 * GiB, inodes=6_000_000,
                                        inodes_free=5_000_000)
    )
    # name -> pids for processes_named; pid -> usage for process_usage.
    named: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    usage: Mapping[int, ProcessUsage] = field(default_factory=dict)
    fs_queries: list[Path] = field(default_factory=list)
    # path -> bytes for disk_usage (a path not listed holds nothing)
    disk_used: Mapping[Path, int] = field(default_factory=dict)
    node_cpu_seconds: float = 0.0

    def facts(self) -> HostFacts:
        return HostFacts(
            cpus=self.cpus,
            memory_total=self.memory_total,
            hugepages=self.hugepages,
            numa_nodes=self.numa_nodes,
            pid_max=self.pid_max,
            cpu_info=self.cpu_info,
            default_route_interfaces=self.default_route_interfaces,
            interface_addresses=self.interface_addresses,
            system=self.system,
        )

    def memory(self) -> MemoryStats:
        return MemoryStats(total=self.memory_total, available=self.memory_available)

    def filesystem(self, path: Path) -> FsStats:
        self.fs_queries.append(path)
        return self.fs

    def disk_usage(self, paths: Sequence[Path]) -> int:
        return sum(self.disk_used.get(p, 0) for p in paths)

    def pids(self) -> PidStats:
        return PidStats(max=self.pid_max, running=self.pids_running)

    def processes_named(self, names: Sequence[str]) -> tuple[int, ...]:
        out: list[int] = []
        for name in names:
            out.extend(self.named.get(name, ()))
        return tuple(sorted(set(out)))

    def cpu_seconds(self) -> float:
        return self.node_cpu_seconds

    def process_usage(self, pids: Sequence[int]) -> ProcessUsage:
        found = [self.usage[p] for p in pids if p in self.usage]
        return ProcessUsage(
            processes=len(found),
            cpu_seconds=sum(u.cpu_seconds for u in found),
            memory_rss=sum(u.memory_rss for u in found),
        )
