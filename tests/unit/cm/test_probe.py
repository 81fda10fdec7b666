"""SystemProbe over fake /sys and /proc trees (the roots are injected)."""

from __future__ import annotations

import os
from pathlib import Path

from nodeagent.host.model import HugePages, NumaInfo
from nodeagent.host.probe import SystemProbe, parse_cpulist


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
