"""The host probe shared by the full virtual nodes, with the machine's facts read once.

Exists because every node's container manager starts by reading the machine (CPUs and their
topology, memory, hugepages: some twenty files under /proc and /sys), and a thousand nodes in
one process are one machine: reading it a thousand times cost 2 ms a node of the start
(bench/nodes.py). The kubelet, likewise, reads cadvisor's MachineInfo once at start. What
changes while the daemon runs (memory and filesystem usage, pids, process usage, cpu time) is
still asked of the probe on every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nodeagent.host.model import FsStats, HostFacts, HostProbe, MemoryStats, PidStats, ProcessUsage


class MachineOnce:
    """A HostProbe over `probe` whose facts() is read on first use and then kept."""

    def __init__(self, probe: HostProbe) -> None:
        self._probe = probe
        self._facts: HostFacts | None = None

    def facts(self) -> HostFacts:
        if self._facts is None:
            self._facts = self._probe.facts()
        return self._facts

    def memory(self) -> MemoryStats:
        return self._probe.memory()

    def filesystem(self, path: Path) -> FsStats:
        return self._probe.filesystem(path)

    def disk_usage(self, paths: Sequence[Path]) -> int:
        return self._probe.disk_usage(paths)

    def pids(self) -> PidStats:
        return self._probe.pids()

    def processes_named(self, names: Sequence[str]) -> tuple[int, ...]:
        return self._probe.processes_named(names)

    def process_usage(self, pids: Sequence[int]) -> ProcessUsage:
        return self._probe.process_usage(pids)

    def cpu_seconds(self) -> float:
        return self._probe.cpu_seconds()
