"""The emulated Kubernetes version: feature-gate defaults and formats as a given release had them.

One responsibility: answer "what did Kubernetes 1.N do by default" for the DRA feature gates
nodeagent's control plane and node follow, and for the allocation formats that changed between
releases, so a driver author can test against the release their users run
(`kubernetesVersion: "1.35"` in NodeAgentConfiguration). Explicit featureGates still override,
except a gate upstream locks to its default in that release (the same refusal upstream gives).

The ladders are upstream's versioned feature specs (pkg/features/kube_features.go): each entry is
the release from which a default holds, and whether the gate is locked there.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodeagent.errors import ConfigError

SUPPORTED = ("1.34", "1.35", "1.36", "1.37")
DEFAULT_VERSION = SUPPORTED[-1]

# gate -> ((minor from which it holds, default, locked to default), ...) in release order
LADDERS: Mapping[str, tuple[tuple[int, bool, bool], ...]] = {
    "DynamicResourceAllocation": ((26, False, False), (34, True, False), (35, True, True)),
    "DRAAdminAccess": ((32, False, False), (34, True, False), (36, True, True)),
    "DRAResourceClaimDeviceStatus": ((32, False, False), (33, True, False), (37, True, True)),
    "DRAPrioritizedList": ((33, False, False), (34, True, False), (37, True, True)),
    "DRAPartitionableDevices": ((33, False, False), (36, True, False)),
    "DRADeviceTaints": ((33, False, False), (36, True, False)),
    "DRADeviceTaintRules": ((35, False, False), (37, True, False)),
    "DRAConsumableCapacity": ((34, False, False), (36, True, False)),
    "DRADeviceBindingConditions": ((34, False, False), (36, True, False)),
    "DRAExtendedResource": ((34, False, False), (36, True, False), (37, True, True)),
    "DRASchedulerFilterTimeout": ((34, True, False),),
    "DRAListTypeAttributes": ((36, False, False),),
    "DRANodeAllocatableResources": ((36, False, False),),
    "DRAOptionalNodeOperations": ((37, False, False),),
}


def minor(version: str, path: str = "NodeAgentConfiguration.kubernetesVersion") -> int:
    """The minor number of a supported "1.N" version; anything else is a ConfigError."""
    if version not in SUPPORTED:
        raise ConfigError(f'{path}: unsupported Kubernetes version "{version}" (supported: '
                          f"{', '.join(SUPPORTED)})")
    return int(version.split(".")[1])


def _step(gate: str, at: int) -> tuple[int, bool, bool] | None:
    found = None
    for step in LADDERS[gate]:
        if step[0] <= at:
            found = step
    return found


def gate_defaults(version: str) -> dict[str, bool]:
    """Every laddered gate's default in that release (a gate not there yet is off)."""
    at = minor(version)
    out = {}
    for gate in LADDERS:
        step = _step(gate, at)
        out[gate] = step[1] if step is not None else False
    return out


def feature_gates(version: str, explicit: Mapping[str, bool], base: Mapping[str, bool],
                  path: str = "KubeletConfiguration.featureGates") -> dict[str, bool]:
    """base (nodeagent's own gates) < the release's defaults < explicit settings; refuses what
    upstream refuses: changing a gate the release locks to its default."""
    at = minor(version)
    for gate, value in explicit.items():
        step = _step(gate, at) if gate in LADDERS else None
        if step is not None and step[2] and value != step[1]:
            raise ConfigError(f"{path}.{gate}: cannot set feature gate {gate} to {str(value).lower()}, "
                              f"feature is locked to {str(step[1]).lower()}")
    return {**base, **gate_defaults(version), **explicit}


def config_covering_all_is_empty(version: str) -> bool:
    """From 1.37 an allocation config that applies to every request of the claim lists none
    (kubernetes#139731, #139814); up to 1.36 it lists them all."""
    return minor(version) >= 37
