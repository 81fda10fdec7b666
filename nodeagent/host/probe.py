"""SystemProbe: the real HostProbe, reading sysfs, procfs and psutil.

The only module in nodeagent that imports psutil. The /sys and /proc roots are
constructor arguments so tests can point them at a fake tree; psutil's own process
queries (processes_named, process_usage) always read the live /proc, because psutil's
PROCFS_PATH is process-global state we must not change.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import stat
from collections.abc import Sequence
from pathlib import Path

import psutil

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

logger = logging.getLogger(__name__)

_HUGEPAGE_DIR = re.compile(r"hugepages-(\d+)kB")
_NODE_DIR = re.compile(r"node(\d+)")
# disk_usage stops after this many entries, so a scrape stays bounded whatever the tree holds.
DISK_USAGE_MAX_ENTRIES = 100_000


def parse_cpulist(text: str) -> tuple[int, ...]:
    """Kernel cpu list syntax ("0-3,8,10-11") to sorted ids; blank gives ()."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return tuple(sorted(cpus))


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _meminfo_kb(text: str, key: str) -> int | None:
    """Value of `key` in a meminfo file (global or per node), in bytes."""
    m = re.search(rf"\b{re.escape(key)}:\s+(\d+)\s*kB", text)
    return int(m.group(1)) * 1024 if m else None


def default_route_interfaces(route_table: str) -> tuple[str, ...]:
    """The interfaces of the default routes (destination and mask 0, RTF_UP) in /proc/net/route's
    text, lowest metric first."""
    found: list[tuple[int, str]] = []
    for line in route_table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        iface, dest, flags, metric, mask = fields[0], fields[1], fields[3], fields[6], fields[7]
        try:
            up = int(flags, 16) & 0x1
            if int(dest, 16) == 0 and int(mask, 16) == 0 and up:
                found.append((int(metric), iface))
        except ValueError:
            continue
    return tuple(dict.fromkeys(iface for _, iface in sorted(found)))


def _interface_addresses() -> tuple[tuple[str, str], ...]:
    """Every interface's IPv4 and IPv6 addresses (psutil), as (interface, IP)."""
    try:
        table = psutil.net_if_addrs()
    except OSError:
        return ()
    return tuple((name, a.address.split("%")[0]) for name, addrs in sorted(table.items()) for a in addrs
                 if a.family in (socket.AF_INET, socket.AF_INET6))


def interface_addresses() -> tuple[tuple[str, str], ...]:
    """Every interface's IPv4 and IPv6 addresses, as (interface, IP): what a wildcard bind is reached by."""
    return _interface_addresses()


# uname's machine names to Go's GOARCH, which the kubelet writes (runtime.GOARCH of its own build,
# the machine's for a native build): nodeInfo.architecture and the kubernetes.io/arch labels.
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i386": "386",
           "i486": "386", "i586": "386", "i686": "386", "armv6l": "arm", "armv7l": "arm", "armv8l": "arm",
           "ppc64le": "ppc64le", "ppc64": "ppc64", "s390x": "s390x", "riscv64": "riscv64",
           "loongarch64": "loong64", "mips64": "mips64", "mips64el": "mips64le"}


def goarch(machine: str) -> str:
    """uname -m as Go's GOARCH spells it (x86_64 -> amd64, aarch64 -> arm64); unknown names as given."""
    return _GOARCH.get(machine, machine)


_PRETTY_NAME = re.compile(r"PRETTY_NAME=(.*)")


def os_image(os_release: str | None) -> str:
    """nodeInfo.osImage from an os-release text as cadvisor's getOperatingSystem takes it: the
    first PRETTY_NAME's value with double quotes trimmed from both ends; "Linux" when the file
    has none; "Unknown" when there is no readable file (None)."""
    if os_release is None:
        return "Unknown"
    m = _PRETTY_NAME.search(os_release)
    return m.group(1).strip('"') if m else "Linux"


def _first_readable(paths: Sequence[Path], strip_nul: bool = False) -> str | None:
    """The first of `paths` that reads, whitespace-trimmed (cadvisor's getInfoFromFiles), else None."""
    for path in paths:
        text = _read(path)
        if text is not None:
            return (text.rstrip("\0") if strip_nul else text).strip()
    return None


class SystemProbe:
    def __init__(self, sys_root: Path = Path("/sys"), proc_root: Path = Path("/proc"),
                 root: Path = Path("/")) -> None:
        self.sys_root = sys_root
        self.proc_root = proc_root
        self.root = root  # where /etc/machine-id, /etc/os-release and /var/lib/dbus are read

    # ---------------------------------------------------------------- static facts

    def facts(self) -> HostFacts:
        mem = self.memory()
        pid_text = _read(self.proc_root / "sys/kernel/pid_max")
        return HostFacts(
            cpus=self._online_cpus(),
            memory_total=mem.total,
            hugepages=self._hugepages(),
            numa_nodes=self._numa_nodes(),
            pid_max=int(pid_text) if pid_text and pid_text.strip().isdigit() else 4194304,
            cpu_info=self._cpu_info(),
            default_route_interfaces=default_route_interfaces(_read(self.proc_root / "net/route") or ""),
            interface_addresses=_interface_addresses(),
            system=self._system_info(),
        )

    def _system_info(self) -> SystemInfo:
        """Node.status.nodeInfo's machine identity, read where cadvisor (so the kubelet) reads it:
        machineID from the first readable of /etc/machine-id and /var/lib/dbus/machine-id;
        systemUUID from the DMI product uuid, else the device tree's (ppc64) ids, else
        /etc/machine-id (cadvisor's s390x fallback, which applies on any machine), else "";
        bootID from the kernel; osImage from /etc/os-release (/usr/lib/os-release if absent)."""
        etc, dev_tree = self.root / "etc", self.proc_root / "device-tree"
        os_release = _read(etc / "os-release")
        if os_release is None and not (etc / "os-release").exists():
            os_release = _read(self.root / "usr/lib/os-release")
        system_uuid = _first_readable([self.sys_root / "class/dmi/id/product_uuid"])
        if system_uuid is None:
            system_uuid = _first_readable([dev_tree / "system-id", dev_tree / "vm,uuid"], strip_nul=True)
        if system_uuid is None:
            system_uuid = _first_readable([etc / "machine-id"])
        uname = os.uname()
        return SystemInfo(
            machine_id=_first_readable([etc / "machine-id", self.root / "var/lib/dbus/machine-id"]) or "",
            system_uuid=system_uuid or "",
            boot_id=_first_readable([self.proc_root / "sys/kernel/random/boot_id"]) or "",
            os_image=os_image(os_release),
            kernel_version=uname.release,
            architecture=goarch(uname.machine),
            running_in_user_namespace=running_in_user_namespace(self.proc_root / "self/uid_map"),
        )

    def _cpu_info(self) -> tuple[CpuInfo, ...]:
        """Socket, thread siblings and L3 group of every online cpu; () if any is unreadable."""
        base = self.sys_root / "devices/system/cpu"
        out: list[CpuInfo] = []
        for cpu in self._online_cpus():
            topo = base / f"cpu{cpu}/topology"
            package = _read(topo / "physical_package_id")
            siblings = _read(topo / "thread_siblings_list")
            if package is None or siblings is None or not package.strip().lstrip("-").isdigit():
                logger.debug("cpu topology unreadable cpu=%d", cpu)
                return ()
            l3 = _read(base / f"cpu{cpu}/cache/index3/shared_cpu_list") or ""
            out.append(CpuInfo(id=cpu, package=max(0, int(package)), siblings=parse_cpulist(siblings),
                               l3=parse_cpulist(l3)))
        return tuple(out)

    def _online_cpus(self) -> tuple[int, ...]:
        text = _read(self.sys_root / "devices/system/cpu/online")
        if text:
            return parse_cpulist(text)
        return tuple(range(psutil.cpu_count(logical=True) or 1))

    def _hugepages(self) -> tuple[HugePages, ...]:
        base = self.sys_root / "kernel/mm/hugepages"
        out: list[HugePages] = []
        try:
            entries = sorted(base.iterdir())
        except OSError:
            return ()
        for entry in entries:
            m = _HUGEPAGE_DIR.fullmatch(entry.name)
            if m is None:
                continue
            total = _read(entry / "nr_hugepages")
            free = _read(entry / "free_hugepages")
            out.append(
                HugePages(
                    size=int(m.group(1)) * 1024,
                    total=int(total) if total and total.strip().isdigit() else 0,
                    free=int(free) if free and free.strip().isdigit() else 0,
                )
            )
        return tuple(sorted(out, key=lambda h: h.size))

    def _numa_nodes(self) -> tuple[NumaInfo, ...]:
        base = self.sys_root / "devices/system/node"
        try:
            entries = list(base.iterdir())
        except OSError:
            return ()
        out: list[NumaInfo] = []
        for entry in entries:
            m = _NODE_DIR.fullmatch(entry.name)
            if m is None:
                continue
            cpus = parse_cpulist(_read(entry / "cpulist") or "")
            memory = _meminfo_kb(_read(entry / "meminfo") or "", "MemTotal") or 0
            distance = (_read(entry / "distance") or "").split()
            distances = tuple(int(d) for d in distance) if all(d.isdigit() for d in distance) else ()
            out.append(NumaInfo(id=int(m.group(1)), cpus=cpus, memory=memory, distances=distances,
                                hugepages=_node_hugepages(entry / "hugepages")))
        return tuple(sorted(out, key=lambda n: n.id))

    # ---------------------------------------------------------------- live figures

    def memory(self) -> MemoryStats:
        text = _read(self.proc_root / "meminfo")
        if text:
            total = _meminfo_kb(text, "MemTotal")
            available = _meminfo_kb(text, "MemAvailable")
            if total is not None and available is not None:
                return MemoryStats(total=total, available=available)
        vm = psutil.virtual_memory()
        return MemoryStats(total=int(vm.total), available=int(vm.available))

    def filesystem(self, path: Path) -> FsStats:
        probe = path
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        st = os.statvfs(probe)
        return FsStats(
            capacity=st.f_blocks * st.f_frsize,
            available=st.f_bavail * st.f_frsize,
            inodes=st.f_files,
            inodes_free=st.f_ffree,
            free=st.f_bfree * st.f_frsize,
        )

    def disk_usage(self, paths: Sequence[Path]) -> int:
        seen: set[tuple[int, int]] = set()
        total = 0
        budget = DISK_USAGE_MAX_ENTRIES
        for top in paths:
            try:
                device = top.lstat().st_dev
            except OSError:
                continue
            stack = [str(top)]
            while stack and budget > 0:
                path = stack.pop()
                try:
                    st = os.lstat(path)
                except OSError:
                    continue  # gone while walking
                budget -= 1
                if st.st_dev != device or (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
                if stat.S_ISDIR(st.st_mode):  # lstat: a symlink to a directory is not entered
                    try:
                        with os.scandir(path) as entries:
                            stack.extend(e.path for e in entries)
                    except OSError:
                        continue
            if budget <= 0:
                logger.debug("disk usage walk stopped after %d entries", DISK_USAGE_MAX_ENTRIES)
                break
        return total

    def pids(self) -> PidStats:
        pid_text = _read(self.proc_root / "sys/kernel/pid_max")
        pid_max = int(pid_text) if pid_text and pid_text.strip().isdigit() else 4194304
        try:
            running = sum(1 for e in os.scandir(self.proc_root) if e.name.isdigit())
        except OSError:
            running = len(psutil.pids())
        return PidStats(max=pid_max, running=running)

    def processes_named(self, names: Sequence[str]) -> tuple[int, ...]:
        wanted = set(names)
        if not wanted:
            return ()
        found: list[int] = []
        for proc in psutil.process_iter(["name", "exe"]):
            info = proc.info
            exe = info.get("exe") or ""
            if info.get("name") in wanted or (exe and os.path.basename(exe) in wanted):
                found.append(proc.pid)
        return tuple(sorted(found))

    def cpu_seconds(self) -> float:
        t = psutil.cpu_times()
        return float(t.user + t.system + getattr(t, "nice", 0.0) + getattr(t, "irq", 0.0)
                     + getattr(t, "softirq", 0.0) + getattr(t, "steal", 0.0))

    def process_usage(self, pids: Sequence[int]) -> ProcessUsage:
        count, cpu, rss = 0, 0.0, 0
        for pid in pids:
            try:
                proc = psutil.Process(pid)
                with proc.oneshot():
                    times = proc.cpu_times()
                    mem = proc.memory_info()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            count += 1
            cpu += times.user + times.system
            rss += int(mem.rss)
        return ProcessUsage(processes=count, cpu_seconds=cpu, memory_rss=rss)


def running_in_user_namespace(uid_map: Path) -> bool:
    """moby/sys/userns.RunningInUserNS: false when the map cannot be read or is the initial
    namespace's full identity mapping ("0 0 4294967295"), true otherwise."""
    try:
        text = uid_map.read_text()
    except OSError:
        return False
    lines = [line.split() for line in text.splitlines() if line.strip()]
    return not (len(lines) == 1 and lines[0] == ["0", "0", "4294967295"])


def _node_hugepages(base: Path) -> tuple[tuple[int, int], ...]:
    """(page size in bytes, pages) of each hugepages-<size>kB pool of one NUMA node, by size; a
    pool whose count cannot be read counts 0 pages (cadvisor's GetNodesInfo reads the same files)."""
    try:
        entries = list(base.iterdir())
    except OSError:
        return ()
    out: list[tuple[int, int]] = []
    for entry in entries:
        m = _HUGEPAGE_DIR.fullmatch(entry.name)
        if m is None:
            continue
        text = (_read(entry / "nr_hugepages") or "").strip()
        out.append((int(m.group(1)) * 1024, int(text) if text.isdigit() else 0))
    return tuple(sorted(out))
