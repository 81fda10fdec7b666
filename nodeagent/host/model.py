"""Host facts as frozen dataclasses, and the HostProbe port through which they are read.

The container manager never touches psutil, /proc or /sys itself: it asks a HostProbe
(nodeagent.host.probe.SystemProbe in the daemon, nodeagent.host.fake.FakeHost in tests)
and gets these plain values back. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class HugePages:
    """One hugepage pool (/sys/kernel/mm/hugepages/hugepages-<size>kB)."""

    size: int  # bytes per page
    total: int  # pages (nr_hugepages)
    free: int = 0  # pages (free_hugepages)


@dataclass(frozen=True)
class NumaInfo:
    """One NUMA node as sysfs describes it (/sys/devices/system/node/node<id>)."""

    id: int
    cpus: tuple[int, ...]
    memory: int  # bytes (MemTotal of the node)
    distances: tuple[int, ...] = ()  # node<id>/distance: to every node, in node id order
    # node<id>/hugepages/hugepages-<size>kB/nr_hugepages: (page size in bytes, pages) of every size the
    # kernel offers, none pre-allocated included (cadvisor's Topology[].HugePages)
    hugepages: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class CpuInfo:
    """One online logical cpu as /sys/devices/system/cpu/cpu<id>/topology and cache describe it."""

    id: int
    package: int  # physical_package_id (socket)
    siblings: tuple[int, ...]  # thread_siblings_list (this cpu included)
    l3: tuple[int, ...] = ()  # cache/index3/shared_cpu_list (empty: no L3 reported)


@dataclass(frozen=True)
class SystemInfo:
    """The machine's identity as the kubelet writes it into Node.status.nodeInfo (through cadvisor's
    MachineInfo and VersionInfo): "" where the host does not say. Every node a nodeagent process
    runs on one machine (simulated nodes included) reports these same values, as nodes of one
    machine would: they name the machine and its boot, not the node."""

    machine_id: str = ""  # /etc/machine-id, else /var/lib/dbus/machine-id
    system_uuid: str = ""  # /sys/class/dmi/id/product_uuid (root only), else cadvisor's fallbacks
    boot_id: str = ""  # /proc/sys/kernel/random/boot_id
    os_image: str = ""  # PRETTY_NAME of /etc/os-release ("Linux" without one, as cadvisor)
    kernel_version: str = ""  # uname -r
    architecture: str = ""  # GOARCH spelling (amd64, arm64) of uname -m
    running_in_user_namespace: bool = False  # userns.RunningInUserNS: /proc/self/uid_map maps a part only


@dataclass(frozen=True)
class HostFacts:
    """What does not change while the daemon runs: the machine's shape."""

    cpus: tuple[int, ...]  # online logical cpu ids
    memory_total: int  # bytes
    hugepages: tuple[HugePages, ...] = ()
    numa_nodes: tuple[NumaInfo, ...] = ()  # empty: NUMA layout unknown
    pid_max: int = 4194304  # /proc/sys/kernel/pid_max
    cpu_info: tuple[CpuInfo, ...] = ()  # empty: core/socket layout unknown
    # The interfaces that hold a default route (/proc/net/route, lowest metric first) and every
    # interface's addresses as (interface, IP): the node's InternalIP is chosen from them (host/address.py).
    default_route_interfaces: tuple[str, ...] = ()
    interface_addresses: tuple[tuple[str, str], ...] = ()
    system: SystemInfo = field(default_factory=SystemInfo)


@dataclass(frozen=True)
class MemoryStats:
    total: int  # bytes
    available: int  # bytes (MemAvailable)


@dataclass(frozen=True)
class FsStats:
    """A filesystem as statvfs sees it."""

    capacity: int  # bytes
    available: int  # bytes available to unprivileged users
    inodes: int
    inodes_free: int
    free: int | None = None  # bytes free, the root-reserved blocks included (f_bfree); None: unknown

    @property
    def used(self) -> int:
        """Bytes in use as cadvisor (so the kubelet's summary) counts them: capacity - free. Blocks
        reserved for root are free, not used, so this is not capacity - available."""
        free = self.available if self.free is None else self.free
        return max(0, self.capacity - free)


@dataclass(frozen=True)
class PidStats:
    max: int  # pid_max
    running: int  # processes (threads are not counted)


@dataclass(frozen=True)
class ProcessUsage:
    """Summed usage of a set of processes at one instant."""

    processes: int
    cpu_seconds: float  # cumulative user+system cpu time
    memory_rss: int  # bytes


NO_USAGE = ProcessUsage(processes=0, cpu_seconds=0.0, memory_rss=0)


class HostProbe(Protocol):
    """The container manager's port to the machine."""

    def facts(self) -> HostFacts: ...

    def memory(self) -> MemoryStats: ...

    def filesystem(self, path: Path) -> FsStats:
        """Statistics of the filesystem holding `path` (its nearest existing ancestor)."""
        ...

    def disk_usage(self, paths: Sequence[Path]) -> int:
        """Bytes the files under `paths` occupy on disk (as `du -sx`: allocated blocks, each inode
        once, symlinks not followed, no other filesystem entered); a missing path counts 0."""
        ...

    def pids(self) -> PidStats: ...

    def processes_named(self, names: Sequence[str]) -> tuple[int, ...]:
        """Pids of processes whose name (comm) or executable basename is one of `names`."""
        ...

    def process_usage(self, pids: Sequence[int]) -> ProcessUsage:
        """Summed cpu time and rss of `pids`; processes that vanished are skipped."""
        ...

    def cpu_seconds(self) -> float:
        """Cumulative busy cpu time of the whole node (user+system+..., not idle/iowait)."""
        ...
