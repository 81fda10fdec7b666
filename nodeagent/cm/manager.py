"""ContainerManager: the node's capacity, allocatable, cgroup tree and resource managers.

The kubelet's cm.ContainerManager for a fake node. It computes capacity (host probe or
node profile) and allocatable once at construction, creates the cgroup tree on
start() (kubepods, the QoS cgroups, enforced reserved cgroups), creates and removes
pod cgroups (keeping the burstable QoS shares current), owns the CPU manager, and
measures what the daemon exports: node eviction signals, the usage of the reserved
processes, and conditions from the eviction manager it builds.

Node signals on a fake node (a documented choice): when the node's memory (or
ephemeral-storage) capacity is not the host's, because the profile overrides it, the
host's free figures mean nothing for the node, so memory.available = memory capacity -
the pods' simulated usage (nodeagent.dev/usage-memory); likewise nodefs.available.
When the capacity is the host's, the host's available figure is the base and the pods'
simulated usage is still subtracted, so a pod declaring a huge usage triggers eviction
on any node. Values are clamped at 0.

Everything outside goes through ports: HostProbe (psutil/sysfs), CgroupDriver, StateDB,
Clock. Capacity does not change while the daemon runs; extended resources are merged
in by the daemon, not here.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nodeagent.cm import allocatable as alloc
from nodeagent.cm import resourcemanagers
from nodeagent.cm.capacity import CPU, EPHEMERAL_STORAGE, MEMORY, Capacity, node_capacity
from nodeagent.cm.cgroups import limits as cglimits
from nodeagent.cm.cgroups.driver import CgroupDriver, CgroupError
from nodeagent.cm.cgroups.names import CgroupNaming
from nodeagent.cm.cpumanager.manager import CPUManager
from nodeagent.cm.eviction.decision import INODES, Observation, pod_usage, thresholds_from_config
from nodeagent.cm.eviction.manager import EvictFn, EvictionManager
from nodeagent.cm.memorymanager.manager import MemoryManager
from nodeagent.cm.resourcemanagers import cpu_manager_options
from nodeagent.cm.topology.discover import machine_topology
from nodeagent.cm.topology.model import CPUTopology
from nodeagent.cm.topologymanager.manager import TopologyManager
from nodeagent.config import Config, NumaNode
from nodeagent.errors import StartupError
from nodeagent.host.model import HostFacts, HostProbe
from nodeagent.objects.pod.model import BEST_EFFORT, BURSTABLE, Pod
from nodeagent.pods.hints import HintProvider
from nodeagent.pods.ports import NodeResources
from nodeagent.state.db import StateDB
from nodeagent.util.clock import Clock

if TYPE_CHECKING:
    from nodeagent.metrics.instruments import Instruments

logger = logging.getLogger(__name__)

KUBE_RESERVED = "kube-reserved"
SYSTEM_RESERVED = "system-reserved"
PODS = "pods"


@dataclass(frozen=True)
class ReservedUsage:
    """Measured usage of one reserved group's processes."""

    group: str  # kube-reserved | system-reserved
    cgroup: str  # the reserved cgroup ("" when not configured)
    reservation: Mapping[str, int]  # what is reserved for the group (canonical units)
    processes: int
    cpu_seconds: float  # cumulative cpu time of the processes found now
    cpu_millicores: int | None  # rate since the previous measurement (None the first time)
    memory_bytes: int  # summed rss


@dataclass(frozen=True)
class ContainerSnapshot:
    """What metrics collectors and /stats/summary read; taken on demand."""

    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]
    reserved: Mapping[str, Mapping[str, int]]  # kube-reserved, system-reserved, eviction-hard
    reserved_usage: tuple[ReservedUsage, ...]
    signals: Mapping[str, Observation]
    conditions: tuple[str, ...]
    numa_nodes: tuple[NumaNode, ...]
    cgroup_driver: str
    taken_at: float  # wall clock seconds
    pod_cgroups: Mapping[str, str] = field(default_factory=dict)  # pod uid -> cgroup path


class ContainerManager:
    def __init__(
        self,
        cfg: Config,
        host: HostProbe,
        cgroups: CgroupDriver,
        db: StateDB,
        clock: Clock,
        instruments: Instruments | None = None,
    ) -> None:
        self.cfg = cfg
        self._host = host
        self.cgroups = cgroups
        self._db = db
        self._clock = clock
        self._instruments = instruments
        k = cfg.kubelet
        self.facts: HostFacts = host.facts()
        root_fs = host.filesystem(cfg.agent.root_dir)
        self.capacity_info: Capacity = node_capacity(self.facts, root_fs, cfg.agent.node_profile, k.max_pods)
        if k.pods_per_core:
            pods = alloc.pods_capacity(k.max_pods, k.pods_per_core, len(self.capacity_info.cpus))
            self.capacity_info = dataclasses.replace(
                self.capacity_info, resources={**self.capacity_info.resources, PODS: pods})
        self.kube_reserved, self.system_reserved = alloc.effective_reservations(
            k.kube_reserved, k.system_reserved, k.reserved_system_cpus
        )
        self.eviction_reserved = (
            {} if cfg.agent.allocatable_ignore_eviction
            else alloc.hard_eviction_reservation(self.capacity, k.eviction_hard)
        )
        reservation = alloc.node_reservation(
            self.capacity, self.kube_reserved, self.system_reserved, k.eviction_hard,
            ignore_eviction=cfg.agent.allocatable_ignore_eviction,
        )
        alloc.validate_reservation(self.capacity, reservation)
        self.allocatable: Mapping[str, int] = alloc.allocatable(
            self.capacity, self.kube_reserved, self.system_reserved, k.eviction_hard,
            ignore_eviction=cfg.agent.allocatable_ignore_eviction,
        )
        self.naming = CgroupNaming(k.cgroup_driver, k.cgroup_root)
        self.topology: CPUTopology = machine_topology(
            cfg.agent.node_profile, self.facts, self.capacity_info.cpus, self.capacity_info.numa_nodes
        )
        self.cpu_manager = CPUManager(
            k.cpu_manager_policy,
            self.topology,
            db,
            reserved_system_cpus=k.reserved_system_cpus,
            reserved_milli=self.kube_reserved.get(CPU, 0) + self.system_reserved.get(CPU, 0),
            options=cpu_manager_options(k, self.topology),
        )
        self.memory_manager = MemoryManager(
            k.memory_manager_policy,
            {n.id: {MEMORY: n.memory, **dict(n.hugepages)} for n in self.capacity_info.numa_nodes if n.memory},
            db,
            reserved_memory=k.reserved_memory,
            node_reservation=reservation,
        )
        self._fake_memory = self.capacity.get(MEMORY) != self.facts.memory_total
        self._fake_storage = self.capacity.get(EPHEMERAL_STORAGE) != root_fs.capacity
        self._burstable_cpu: dict[str, int] = {}
        self._pod_cgroups: dict[str, str] = {}
        self._eviction: EvictionManager | None = None
        self._active_pods: Callable[[], Sequence[Pod]] = lambda: ()
        self._cpu_samples: dict[str, tuple[float, float]] = {}  # group -> (monotonic, cpu seconds)
        self._started = False
        logger.info(
            "node capacity computed cpu=%sm memory=%s ephemeral-storage=%s pods=%s numa_nodes=%d",
            self.capacity.get(CPU), self.capacity.get(MEMORY), self.capacity.get(EPHEMERAL_STORAGE),
            self.capacity.get(PODS), len(self.capacity_info.numa_nodes),
        )

    @property
    def capacity(self) -> Mapping[str, int]:
        return self.capacity_info.resources

    # ---------------------------------------------------------------- lifecycle

    def _enforced(self, key: str) -> bool:
        return key in self.cfg.kubelet.enforce_node_allocatable

    def start(self) -> None:
        """Create kubepods, the QoS cgroups and the enforced reserved cgroups with their limits."""
        k = self.cfg.kubelet
        if k.cgroups_per_qos:
            self.cgroups.ensure(self.naming.kubepods(), self.kubepods_limits())
            self.cgroups.ensure(self.naming.qos(BEST_EFFORT), cglimits.besteffort_limits())
            self._update_burstable()
        for key, cgroup, reservation in (
            (KUBE_RESERVED, k.kube_reserved_cgroup, self.kube_reserved),
            (SYSTEM_RESERVED, k.system_reserved_cgroup, self.system_reserved),
        ):
            if not self._enforced(key):
                continue
            if self.cgroups.name != "simulated" and not self.cgroups.exists(cgroup):
                # The kubelet enforces limits on reserved cgroups but never creates them.
                raise StartupError(
                    f'enforceNodeAllocatable: {key} is enforced but the cgroup "{cgroup}" does not exist'
                )
            self.cgroups.ensure(cgroup, cglimits.reserved_limits(reservation))
        self._started = True
        logger.info(
            "container manager started driver=%s naming=%s root=%s enforce=%s",
            self.cgroups.name, k.cgroup_driver, k.cgroup_root, ",".join(k.enforce_node_allocatable),
        )

    def stop(self) -> None:
        """Nothing to undo: like the kubelet, the tree stays for the next start."""
        self._started = False

    def kubepods_limits(self) -> cglimits.CgroupLimits:
        return cglimits.kubepods_limits(
            self.capacity, self.kube_reserved, self.system_reserved, self.facts.pid_max,
            enforce_pods=self._enforced(PODS),
        )

    # ---------------------------------------------------------------- node resources

    def node_resources(self) -> NodeResources:
        return NodeResources(capacity=dict(self.capacity), allocatable=dict(self.allocatable),
                             labels=self.node_labels(), conditions=self.conditions())

    def node_labels(self) -> dict[str, str]:
        """The Node object's labels, as the node status reports them (admission matches on them)."""
        return {"kubernetes.io/hostname": self.cfg.agent.node_name, "kubernetes.io/os": "linux",
                **self.cfg.agent.node_profile.labels}

    def numa_nodes(self) -> tuple[NumaNode, ...]:
        return self.capacity_info.numa_nodes

    def topology_manager(self, providers: Sequence[HintProvider]) -> TopologyManager:
        """The resource managers' admit handler over `providers` (CPU, memory, devices, in order)."""
        return resourcemanagers.topology_manager(self.cfg.kubelet, self.topology, providers, self._db)

    # ---------------------------------------------------------------- pod cgroups

    def _update_burstable(self) -> None:
        self.cgroups.ensure(
            self.naming.qos(BURSTABLE), cglimits.burstable_limits(self._burstable_cpu.values())
        )

    def create_pod_cgroup(self, pod: Pod, qos_class: str) -> None:
        if not self.cfg.kubelet.cgroups_per_qos:
            return
        path = self.naming.pod(pod.uid, qos_class)
        node_allocatable = self.cfg.kubelet.gate("DRANodeAllocatableResources")
        self.cgroups.ensure(path, cglimits.pod_cgroup_limits(pod, qos_class, node_allocatable=node_allocatable))
        self._pod_cgroups[pod.uid] = path
        if qos_class == BURSTABLE:
            self._burstable_cpu[pod.uid] = cglimits.pod_cgroup_requests(pod, node_allocatable).get(CPU, 0)
            self._update_burstable()
        logger.debug("pod cgroup created pod=%s uid=%s cgroup=%s", pod.key, pod.uid, path)

    def remove_pod_cgroup(self, pod: Pod, qos_class: str) -> None:
        """Remove the pod's cgroup; a failure is logged (the next removal retries), never raised."""
        if not self.cfg.kubelet.cgroups_per_qos:
            return
        path = self.naming.pod(pod.uid, qos_class)
        try:
            self.cgroups.remove(path)
        except CgroupError as err:
            logger.error("pod cgroup removal failed pod=%s uid=%s err=%s", pod.key, pod.uid, err)
            return
        self._pod_cgroups.pop(pod.uid, None)
        if self._burstable_cpu.pop(pod.uid, None) is not None:
            self._update_burstable()
        logger.debug("pod cgroup removed pod=%s uid=%s cgroup=%s", pod.key, pod.uid, path)

    # ---------------------------------------------------------------- signals and eviction

    def observe(self, pods: Sequence[Pod]) -> Mapping[str, Observation]:
        """Eviction signals now (see the module docstring for the fake-node rule)."""

        def used(resource: str) -> int:
            return sum(pod_usage(p, resource) for p in pods)

        mem_capacity = self.capacity.get(MEMORY, 0)
        mem_base = mem_capacity if self._fake_memory else self._host.memory().available
        fs = self._host.filesystem(self.cfg.agent.root_dir)
        fs_capacity = self.capacity.get(EPHEMERAL_STORAGE, 0)
        fs_base = fs_capacity if self._fake_storage else fs.available
        pids = self._host.pids()
        node_budget = alloc.reserved_absolute(self.capacity, self.kube_reserved, self.system_reserved)
        memory_used = used(MEMORY)
        storage = Observation(available=max(0, fs_base - used(EPHEMERAL_STORAGE)), capacity=fs_capacity)
        inodes = Observation(available=max(0, fs.inodes_free - used(INODES)), capacity=fs.inodes)
        return {
            "memory.available": Observation(max(0, mem_base - memory_used), mem_capacity),
            "allocatableMemory.available": Observation(
                max(0, node_budget.get(MEMORY, 0) - memory_used), node_budget.get(MEMORY, 0)
            ),
            "nodefs.available": storage,
            "nodefs.inodesFree": inodes,
            # No separate image filesystem: imagefs and containerfs are the nodefs, as on a
            # kubelet whose runtime shares the root dir's filesystem.
            "imagefs.available": storage,
            "imagefs.inodesFree": inodes,
            "containerfs.available": storage,
            "containerfs.inodesFree": inodes,
            "pid.available": Observation(max(0, pids.max - pids.running - used("pids")), pids.max),
        }

    def eviction_manager(
        self, active_pods: Callable[[], Sequence[Pod]], evict: EvictFn
    ) -> EvictionManager:
        """Build the eviction manager (once); the daemon runs its run() as a task."""
        k = self.cfg.kubelet
        self._active_pods = active_pods
        self._eviction = EvictionManager(
            thresholds_from_config(k),
            k.eviction_pressure_transition_period,
            self.cfg.agent.eviction_interval,
            self,
            active_pods,
            evict,
            self._clock,
            self._instruments,
        )
        return self._eviction

    def conditions(self) -> tuple[str, ...]:
        return self._eviction.conditions() if self._eviction else ()

    # ---------------------------------------------------------------- measurement

    def _reserved_pids(self, cgroup: str, names: Sequence[str]) -> tuple[int, ...]:
        pids: set[int] = set()
        if cgroup and self.cgroups.name == "cgroupfs" and self.cgroups.exists(cgroup):
            pids.update(self.cgroups.procs(cgroup))
        if names:
            pids.update(self._host.processes_named(names))
        return tuple(sorted(pids))

    def measure_reserved(self) -> tuple[ReservedUsage, ...]:
        """psutil (through the host probe) on the reserved cgroups' or named processes."""
        k, a = self.cfg.kubelet, self.cfg.agent
        out: list[ReservedUsage] = []
        now = self._clock.monotonic()
        for group, cgroup, names, reservation in (
            (KUBE_RESERVED, k.kube_reserved_cgroup, a.kube_reserved_processes, self.kube_reserved),
            (SYSTEM_RESERVED, k.system_reserved_cgroup, a.system_reserved_processes, self.system_reserved),
        ):
            usage = self._host.process_usage(self._reserved_pids(cgroup, names))
            rate: int | None = None
            previous = self._cpu_samples.get(group)
            if previous is not None and now > previous[0]:
                rate = max(0, round((usage.cpu_seconds - previous[1]) / (now - previous[0]) * 1000))
            self._cpu_samples[group] = (now, usage.cpu_seconds)
            out.append(
                ReservedUsage(
                    group=group, cgroup=cgroup, reservation=dict(reservation), processes=usage.processes,
                    cpu_seconds=usage.cpu_seconds, cpu_millicores=rate, memory_bytes=usage.memory_rss,
                )
            )
        return tuple(out)

    def snapshot(self) -> ContainerSnapshot:
        signals = self.observe(self._active_pods())
        return ContainerSnapshot(
            capacity=dict(self.capacity),
            allocatable=dict(self.allocatable),
            reserved={
                KUBE_RESERVED: dict(self.kube_reserved),
                SYSTEM_RESERVED: dict(self.system_reserved),
                "eviction-hard": dict(self.eviction_reserved),
            },
            reserved_usage=self.measure_reserved(),
            signals=dict(signals),
            conditions=self.conditions(),
            numa_nodes=self.capacity_info.numa_nodes,
            cgroup_driver=self.cgroups.name,
            taken_at=self._clock.now(),
            pod_cgroups=dict(self._pod_cgroups),
        )
