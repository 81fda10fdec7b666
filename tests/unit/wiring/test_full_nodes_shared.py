"""What the full virtual nodes share: the machine's facts read once, and imports only some configs need.

A thousand nodes in one process are one machine (wiring/machine.py); and a daemon that serves no
Kubernetes API and joins no cluster does not import the API server, kubernetes_asyncio or CEL
(half the baseline RSS of bench/nodes.py).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from nodeagent.host.model import FsStats, HostFacts, MemoryStats, PidStats, ProcessUsage
from nodeagent.wiring.machine import MachineOnce


class CountingProbe:
    """A HostProbe that counts what it was asked."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.memory_available = 1 << 30

    def facts(self) -> HostFacts:
        self.calls.append("facts")
        return HostFacts(cpus=(0, 1, 2, 3), memory_total=8 << 30)

    def memory(self) -> MemoryStats:
        self.calls.append("memory")
        return MemoryStats(total=8 << 30, available=self.memory_available)

    def filesystem(self, path: Path) -> FsStats:
        self.calls.append(f"filesystem {path}")
        return FsStats(capacity=100, available=50, inodes=10, inodes_free=5)

    def disk_usage(self, paths: Sequence[Path]) -> int:
        self.calls.append("disk_usage")
        return 7

    def pids(self) -> PidStats:
        self.calls.append("pids")
        return PidStats(max=4194304, running=12)

    def processes_named(self, names: Sequence[str]) -> tuple[int, ...]:
        self.calls.append("processes_named")
        return (1,)

    def process_usage(self, pids: Sequence[int]) -> ProcessUsage:
        self.calls.append("process_usage")
        return ProcessUsage(processes=len(pids), cpu_seconds=1.5, memory_rss=1024)

    def cpu_seconds(self) -> float:
        self.calls.append("cpu_seconds")
        return 3.0


def test_machine_facts_read_once_usage_read_every_time() -> None:
    probe = CountingProbe()
    shared = MachineOnce(probe)
    first = shared.facts()
    assert [shared.facts() for _ in range(999)] == [first] * 999
    assert probe.calls.count("facts") == 1
    assert shared.memory().available == 1 << 30
    probe.memory_available = 2 << 30
    assert shared.memory().available == 2 << 30  # usage is live, not kept
    assert shared.filesystem(Path("/x")).available == 50
    assert shared.disk_usage([Path("/x")]) == 7
    assert shared.pids().running == 12
    assert shared.processes_named(["containerd"]) == (1,)
    assert shared.process_usage([1, 2]).processes == 2
    assert shared.cpu_seconds() == 3.0
    assert probe.calls[1:] == ["memory", "memory", "filesystem /x", "disk_usage", "pids", "processes_named",
                               "process_usage", "cpu_seconds"]


def test_daemon_imports_no_api_server_remote_client_or_cel() -> None:
    heavy = ["kubernetes_asyncio", "cel", "nodeagent.apiserver.server", "nodeagent.nodeapi.remote"]
    code = f"import sys, nodeagent.daemon; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
