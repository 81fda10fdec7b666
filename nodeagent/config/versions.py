"""The emulated Kubernetes version: feature-gate defaults and formats as a given release had them.

One responsibility: answer "what did Kubernetes 1.N do by default" for the feature gates
nodeagent's control plane and node follow, and for the allocation formats that changed between
releases, so a driver author can test against the release their users run
(`kubernetesVersion: "1.35"` in NodeAgentConfiguration). Explicit featureGates still override,
except what upstream refuses in that release (an unknown gate, a gate locked to its default, an
enabled gate whose dependencies are off), refused with upstream's words.

The versioned specs themselves are data in gatelist.py (upstream's kube_features.go and friends).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nodeagent.config import gatelist
from nodeagent.config.fields import raise_all
from nodeagent.config.model import NODEAGENT_READS
from nodeagent.errors import ConfigError

SUPPORTED = ("1.34", "1.35", "1.36", "1.37")
DEFAULT_VERSION = SUPPORTED[-1]
# The patch release whose behaviour nodeagent follows for each emulated minor (kubernetesVersion);
# a minor not listed answers .0.
PATCH_RELEASES = {"1.37": 2}


def release_version(kubernetes_version: str) -> str:
    """`v1.37.2` for "1.37": the upstream release whose behaviour nodeagent follows. A node's
    nodeInfo.kubeletVersion names it unmarked, as that release's kubelet writes it: clients
    (kubectl get nodes, version-skew checks, the scheduler's plugins) parse it as a version."""
    return f"v{kubernetes_version}.{PATCH_RELEASES.get(kubernetes_version, 0)}"

def minor(version: str, path: str = "NodeAgentConfiguration.kubernetesVersion") -> int:
    """The minor number of a supported "1.N" version; anything else is a ConfigError."""
    if version not in SUPPORTED:
        raise ConfigError(f'{path}: unsupported Kubernetes version "{version}" (supported: '
                          f"{', '.join(SUPPORTED)})")
    return int(version.split(".")[1])


def gate_defaults(version: str, gates: Iterable[str] = ()) -> dict[str, bool]:
    """The release's default of each named gate (every gate nodeagent reads when none is named; a gate
    the release does not have yet is off)."""
    at = minor(version)
    names = list(gates) or list(NODEAGENT_READS)
    return {g: gatelist.enabled(g, at, {}) for g in names}


def feature_gates(version: str, explicit: Mapping[str, bool], base: Mapping[str, bool],
                  path: str = "KubeletConfiguration.featureGates") -> dict[str, bool]:
    """The effective gates: each gate of `base` (the gates nodeagent reads) at the release's default
    (AllAlpha/AllBeta applied), under the explicit settings; raises ConfigError (every error at once)
    for what upstream's SetFromMap refuses at that release (gatelist.errors)."""
    at = minor(version)
    raise_all(gatelist.errors(explicit, at, path))
    defaults = {g: gatelist.enabled(g, at, explicit) for g in base if g not in gatelist.NODEAGENT_GATES}
    return {**base, **defaults, **explicit}


def step_rounding_keeps_step_format(version: str) -> bool:
    """From 1.37 roundUpRange builds a step-rounded consumed capacity in the step's Format
    (NewQuantity(v, validRange.Step.Format)); up to 1.36 in BinarySI (NewQuantity(v, BinarySI))."""
    return minor(version) >= 37


def config_covering_all_is_empty(version: str) -> bool:
    """From 1.37 an allocation config that applies to every request of the claim lists none
    (kubernetes#139731, #139814); up to 1.36 it lists them all."""
    return minor(version) >= 37
