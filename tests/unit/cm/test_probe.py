"""SystemProbe over fake /sys and /proc trees (the roots are injected)."""

from __future__ import annotations

import os
from pathlib import Path

from nodeagent.host.model import HugePages, NumaInfo
from nodeagent.host.probe import SystemProbe, goarch, os_image, parse_cpulist


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_facts_from_fake_sysfs(tmp_path: Path) -> None:
    sys_root, proc_root = tmp_path / "sys", tmp_path / "proc"
    write(sys_root / "devices/system/cpu/online", "0-3\n")
    write(sys_root / "devices/system/node/node0/cpulist", "0-1\n")
    write(sys_root / "devices/system/node/node0/meminfo",
          "Node 0 MemTotal:       1024 kB\nNode 0 MemFree: 1 kB\n")
    write(sys_root / "devices/system/node/node1/cpulist", "2,3\n")
    write(sys_root / "devices/system/node/node1/meminfo", "Node 1 MemTotal:       2048 kB\n")
    write(sys_root / "devices/system/node/online", "0-1\n")
    write(sys_root / "kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "4\n")
    write(sys_root / "kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "3\n")
    write(sys_root / "kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", "0\n")
    write(proc_root / "meminfo", "MemTotal:       8192 kB\nMemFree: 10 kB\nMemAvailable:   4096 kB\n")
    write(proc_root / "sys/kernel/pid_max", "32768\n")
    write(proc_root / "1/stat", "")
    write(proc_root / "42/stat", "")

    probe = SystemProbe(sys_root=sys_root, proc_root=proc_root)
    facts = probe.facts()
    assert facts.cpus == (0, 1, 2, 3)
    assert facts.memory_total == 8192 * 1024
    assert facts.numa_nodes == (NumaInfo(0, (0, 1), 1024 * 1024), NumaInfo(1, (2, 3), 2048 * 1024))
    assert facts.hugepages == (HugePages(2 << 20, 4, 3), HugePages(1 << 30, 0, 0))
    assert facts.pid_max == 32768
    assert probe.memory().available == 4096 * 1024
    pids = probe.pids()
    assert (pids.max, pids.running) == (32768, 2)


def test_missing_numa_is_unknown(tmp_path: Path) -> None:
    write(tmp_path / "sys/devices/system/cpu/online", "0\n")
    facts = SystemProbe(sys_root=tmp_path / "sys", proc_root=tmp_path / "proc").facts()
    assert facts.numa_nodes == () and facts.hugepages == () and facts.cpus == (0,)
    assert facts.memory_total > 0  # falls back to psutil


def test_filesystem_walks_up_to_an_existing_dir(tmp_path: Path) -> None:
    fs = SystemProbe().filesystem(tmp_path / "not" / "yet")
    assert fs.capacity > 0 and 0 <= fs.available <= fs.capacity and fs.inodes >= fs.inodes_free


def test_own_process_usage() -> None:
    probe = SystemProbe()
    usage = probe.process_usage([os.getpid(), 2**22 + 7])  # the second pid cannot exist
    assert usage.processes == 1 and usage.memory_rss > 0 and usage.cpu_seconds > 0


def test_parse_cpulist() -> None:
    assert parse_cpulist("0-2,5,7-8\n") == (0, 1, 2, 5, 7, 8)
    assert parse_cpulist("") == ()


def test_system_info_read_where_the_kubelet_reads_it(tmp_path: Path) -> None:
    """nodeInfo's machineID, systemUUID, bootID and osImage come from the files cadvisor reads
    (trailing newlines dropped, PRETTY_NAME unquoted), the architecture in GOARCH spelling."""
    sys_root, proc_root, root = tmp_path / "sys", tmp_path / "proc", tmp_path / "root"
    write(proc_root / "meminfo", "MemTotal:       8192 kB\n")
    write(proc_root / "sys/kernel/random/boot_id", "6f3c2a0e-1b2d-4c5e-8f90-a1b2c3d4e5f6\n")
    write(sys_root / "class/dmi/id/product_uuid", "4C4C4544-0042-3010-8052-B4C04F564433\n")
    write(root / "var/lib/dbus/machine-id", "dbus0123456789abcdef0123456789ab\n")
    write(root / "etc/os-release", 'NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n')
    system = SystemProbe(sys_root=sys_root, proc_root=proc_root, root=root).facts().system
    assert system.boot_id == "6f3c2a0e-1b2d-4c5e-8f90-a1b2c3d4e5f6"
    assert system.system_uuid == "4C4C4544-0042-3010-8052-B4C04F564433"
    assert system.machine_id == "dbus0123456789abcdef0123456789ab"  # no /etc/machine-id: the dbus one
    assert system.os_image == "Debian GNU/Linux 12 (bookworm)"
    assert system.kernel_version == os.uname().release
    assert system.architecture == goarch(os.uname().machine)
    write(root / "etc/machine-id", "etc0123456789abcdef0123456789abc\n")
    (sys_root / "class/dmi/id/product_uuid").unlink()
    (root / "etc/os-release").unlink()
    system = SystemProbe(sys_root=sys_root, proc_root=proc_root, root=root).facts().system
    assert system.machine_id == "etc0123456789abcdef0123456789abc"  # /etc/machine-id first
    # no readable DMI uuid (not root) nor device tree: cadvisor's last fallback, /etc/machine-id
    assert system.system_uuid == "etc0123456789abcdef0123456789abc"
    assert system.os_image == "Unknown"  # no os-release at all
    write(root / "usr/lib/os-release", "NAME=Clear\n")
    (root / "etc/machine-id").unlink()
    (root / "var/lib/dbus/machine-id").unlink()
    system = SystemProbe(sys_root=sys_root, proc_root=proc_root, root=root).facts().system
    assert system.os_image == "Linux"  # /usr/lib/os-release without PRETTY_NAME: cadvisor's default
    assert (system.machine_id, system.system_uuid) == ("", "")


def test_goarch_and_os_image() -> None:
    assert [goarch(m) for m in ("x86_64", "aarch64", "armv7l", "i686", "ppc64le", "s390x", "riscv64")] == [
        "amd64", "arm64", "arm", "386", "ppc64le", "s390x", "riscv64"]
    assert os_image('PRETTY_NAME="Ubuntu 24.04 LTS"\n') == "Ubuntu 24.04 LTS"
    assert os_image("PRETTY_NAME='Ubuntu'\n") == "'Ubuntu'"  # cadvisor trims double quotes only
    assert os_image("PRETTY_NAME=Alpine\n") == "Alpine"
    assert os_image("NAME=x\n") == "Linux"
