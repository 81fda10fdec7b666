"""Wiring of the kubelet's state files of one node (nodeagent/kubeletstate): which manager feeds which file.

Exists because each file reads a different manager (cpu, memory, device, DRA) and turns its model
into the kubelet's (a cpuset string, memory tables, the plugin's Allocate answer as protobuf
bytes, prepared claims): that conversion touches protobuf (devices/convert.py), so it lives at
the edge, here, not in the pure formats module. The files are written once at start (the kubelet
writes its cpu, memory and DRA checkpoints when its managers start; kubelet_internal_checkpoint
only once there is a device or an allocation to record), then whenever a manager's generation
moves: on the node's own loop for the daemon's node, on the shared ticker for full virtual nodes.
"""

from __future__ import annotations

import logging
from pathlib import Path

from nodeagent.cm.cpumanager.manager import CPUManager
from nodeagent.cm.cpumanager.policy import STATIC, format_cpuset
from nodeagent.cm.memorymanager.manager import MemoryManager
from nodeagent.config import Config
from nodeagent.devices.convert import allocation_to_pb
from nodeagent.devices.manager import DeviceManager
from nodeagent.dra import extended
from nodeagent.dra.manager import DRAManager
from nodeagent.dra.model import ClaimEntry
from nodeagent.kubeletstate import formats
from nodeagent.kubeletstate.exporter import KubeletStateFiles, StateFile
from nodeagent.util.clock import Clock
from nodeagent.util.ticker import Ticker
from nodeagent.wiring.running import Running, closer

logger = logging.getLogger(__name__)

INTERVAL = 0.1
"""Seconds between two looks at the managers' generations on the daemon's own node."""


def cpu_state(cpu: CPUManager) -> formats.CPUState:
    if cpu.policy != STATIC:  # the none policy never sets a default cpuset
        return formats.CPUState(cpu.policy, "")
    entries = {uid: {c: format_cpuset(cpus) for c, cpus in containers.items()}
               for uid, containers in cpu.assignments().items()}
    return formats.CPUState(cpu.policy, format_cpuset(cpu.shared_pool()), entries)


def memory_state(memory: MemoryManager) -> formats.MemoryState:
    machine = {node: formats.NUMANodeState(
        s.number_of_assignments,
        {name: formats.MemoryTable(t.total, t.system_reserved, t.allocatable, t.reserved, t.free)
         for name, t in s.memory_map.items()},
        tuple(s.cells)) for node, s in memory.machine_state().items()}
    entries = {uid: {c: [formats.MemoryBlock(b.numa_affinity, b.type, b.size) for b in blocks]
                     for c, blocks in containers.items()}
               for uid, containers in memory.assignments().items()}
    return formats.MemoryState(memory.policy, machine, entries)


def device_checkpoint(devices: DeviceManager) -> formats.DeviceCheckpoint:
    held, registered = devices.checkpoint_data()
    entries = []
    for uid, container, alloc in held:
        per_numa: dict[int, list[str]] = {}
        for device in alloc.device_ids:
            for node in alloc.numa.get(device) or (formats.NODE_WITHOUT_TOPOLOGY,):
                per_numa.setdefault(node, []).append(device)
        answer = allocation_to_pb(alloc.response).SerializeToString(deterministic=True)
        entries.append(formats.PodDevicesEntry(uid, container, alloc.resource, per_numa, answer))
    return formats.DeviceCheckpoint(entries, registered)


def claim_state(entry: ClaimEntry) -> formats.ClaimState:
    drivers = {}
    for driver in entry.drivers:
        skipped = entry.skipped.get(driver, frozenset())
        prepared = entry.prepared.get(driver)
        if prepared is None or extended.SKIP_PREPARE in skipped:  # never prepared by the driver
            devices = None
        else:
            devices = tuple(formats.DRADevice(d.pool_name, d.device_name, d.share_id, d.request_names,
                                              d.cdi_device_ids) for d in prepared)
        drivers[driver] = formats.DriverState(devices, tuple(sorted(skipped)))
    return formats.ClaimState(entry.uid, entry.name, entry.namespace, entry.pods, drivers)


def state_files(cfg: Config, cpu: CPUManager, memory: MemoryManager, devices: DeviceManager,
                dra: DRAManager) -> KubeletStateFiles:
    root = cfg.agent.root_dir
    device_file = cfg.device_plugins_dir / formats.DEVICES_FILE

    def render_devices() -> bytes | None:
        cp = device_checkpoint(devices)
        if not cp.entries and not cp.registered and not device_file.exists():
            return None  # the kubelet writes it on the first device update or allocation
        return formats.device_manager_checkpoint(cp)

    def render_dra() -> bytes:
        claims = dra.claims()
        return formats.dra_manager_state([claim_state(claims[uid]) for uid in sorted(claims)])

    return KubeletStateFiles([
        StateFile(root / formats.CPU_FILE, cpu.generation,
                  lambda: formats.cpu_manager_state(cpu_state(cpu))),
        StateFile(root / formats.MEMORY_FILE, memory.generation,
                  lambda: formats.memory_manager_state(memory_state(memory))),
        StateFile(device_file, devices.generation, render_devices),
        StateFile(root / formats.DRA_FILE, dra.generation, render_dra),
    ])


def start(cfg: Config, clock: Clock, files: KubeletStateFiles, running: Running, ticker: Ticker | None) -> None:
    """Keep the files in step: on `ticker` if given (its first pass writes them), else written now
    and then by a loop of the node's own."""
    if ticker is not None:
        remove = ticker.add(files.tick)

        async def stop() -> None:
            remove()
            await files.close()

        running.closers.append(stop)
    else:
        files.sync_now()  # OSError: logged inside, tried again by the loop
        running.spawn(files.run(clock, INTERVAL), f"kubelet-state-files {cfg.agent.node_name}")
    # the state at shutdown, as the kubelet leaves it (its writes are synchronous)
    running.closers.append(closer(lambda: _final(files)))


def _final(files: KubeletStateFiles) -> None:
    try:
        files.sync_now()
    except Exception:
        logger.exception("kubelet state files: final write failed")


def paths(cfg: Config) -> tuple[Path, ...]:
    """Where the node's kubelet state files are (README, tests)."""
    root = cfg.agent.root_dir
    return (root / formats.CPU_FILE, root / formats.MEMORY_FILE, cfg.device_plugins_dir / formats.DEVICES_FILE,
            root / formats.DRA_FILE)
