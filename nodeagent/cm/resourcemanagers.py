"""The resource managers' configuration as the kubelet reads it, and the topology manager's assembly.

Kept apart from cm/manager.py so that the container manager only calls two functions:
`cpu_manager_options` (cpuManagerPolicyOptions through the policy's option checks, with the
kubelet's errors at startup) and `topology_manager` (the admit handler over the hint
providers the wiring passes in, in the kubelet's order: CPU, memory, devices).
"""

from __future__ import annotations

from collections.abc import Sequence

from nodeagent.cm.cpumanager import policy as cpupolicy
from nodeagent.cm.cpumanager.policy import StaticOptions
from nodeagent.cm.topology.model import CPUTopology
from nodeagent.cm.topologymanager.manager import TopologyManager
from nodeagent.cm.topologymanager.policy import NUMAInfo, parse_policy_options
from nodeagent.config import KubeletConfig
from nodeagent.errors import ConfigError
from nodeagent.pods.hints import HintProvider
from nodeagent.state.db import StateDB

CPU_OPTIONS_PATH = "KubeletConfiguration.cpuManagerPolicyOptions"
TOPOLOGY_OPTIONS_PATH = "KubeletConfiguration.topologyManagerPolicyOptions"


def _go_map(values: dict[str, str]) -> str:
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(values.items())) + "]"


def cpu_manager_options(k: KubeletConfig, topology: CPUTopology) -> StaticOptions:
    """cpuManagerPolicyOptions checked as the kubelet's NewStaticPolicy / NewNonePolicy do."""
    raw = dict(k.cpu_manager_policy_options)
    if k.cpu_manager_policy != cpupolicy.STATIC:
        if raw:
            raise ConfigError(f"{CPU_OPTIONS_PATH}: None policy: received unsupported options={_go_map(raw)}")
        return StaticOptions()
    try:
        opts = cpupolicy.parse_static_options(
            raw,
            alpha=k.feature_gates.get("CPUManagerPolicyAlphaOptions", False),
            beta=k.feature_gates.get("CPUManagerPolicyBetaOptions", True),
        )
        cpupolicy.validate_static_options(opts, topology, k.topology_manager_policy)
    except ConfigError as err:
        raise ConfigError(f"{CPU_OPTIONS_PATH}: {err}") from None
    return opts


def topology_manager(k: KubeletConfig, topology: CPUTopology, providers: Sequence[HintProvider],
                     db: StateDB | None = None) -> TopologyManager:
    """The topology manager over `providers` (CPU, memory, devices, in that order); `db`, the
    providers' database, gets one commit per admission."""
    try:
        options = parse_policy_options(
            k.topology_manager_policy_options,
            alpha=k.feature_gates.get("TopologyManagerPolicyAlphaOptions", False),
            beta=k.feature_gates.get("TopologyManagerPolicyBetaOptions", True),
        )
    except ConfigError as err:
        raise ConfigError(f"{TOPOLOGY_OPTIONS_PATH}: {err}") from None
    return TopologyManager(
        providers,
        policy=k.topology_manager_policy,
        scope=k.topology_manager_scope,
        numa=NUMAInfo(topology.numa_nodes, topology.distances()),
        options=options,
        db=db,
    )
