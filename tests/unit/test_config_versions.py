"""kubernetesVersion: the emulated release picks feature-gate defaults and formats; explicit gates win."""

from __future__ import annotations

import pytest

from nodeagent.config import versions
from nodeagent.config.file import parse_documents
from nodeagent.controlplane.loop import allocator_features
from nodeagent.errors import ConfigError

KUBELET = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}
AGENT = {"apiVersion": "nodeagent.dev/v1alpha1", "kind": "NodeAgentConfiguration", "nodeName": "n1"}


def load(version: str | None = None, gates: dict[str, bool] | None = None):  # type: ignore[no-untyped-def]
    agent = {**AGENT, **({"kubernetesVersion": version} if version else {})}
    kubelet = {**KUBELET, **({"featureGates": gates} if gates else {})}
    return parse_documents([kubelet, agent])


@pytest.mark.parametrize(
    ("version", "gate", "default"),
    [
        # upstream's versioned specs (kube_features.go)
        ("1.34", "DRAAdminAccess", True), ("1.34", "DRAPrioritizedList", True),
        ("1.34", "DRAPartitionableDevices", False), ("1.35", "DRAPartitionableDevices", False),
        ("1.36", "DRAPartitionableDevices", True), ("1.35", "DRAConsumableCapacity", False),
        ("1.36", "DRAConsumableCapacity", True), ("1.35", "DRADeviceTaints", False), ("1.36", "DRADeviceTaints", True),
        ("1.35", "DRAExtendedResource", False), ("1.36", "DRAExtendedResource", True),
        ("1.35", "DRADeviceBindingConditions", False), ("1.36", "DRADeviceBindingConditions", True),
        ("1.36", "DRADeviceTaintRules", False), ("1.37", "DRADeviceTaintRules", True),
        ("1.36", "DRAOptionalNodeOperations", False), ("1.34", "DRAResourceClaimDeviceStatus", True),
        ("1.37", "DRAListTypeAttributes", False),
    ],
)
def test_gate_defaults_follow_the_release(version: str, gate: str, default: bool) -> None:
    assert load(version).kubelet.gate(gate) is default


def test_default_is_the_newest_release_and_matches_the_documented_defaults() -> None:
    cfg = load()
    assert cfg.agent.kubernetes_version == versions.DEFAULT_VERSION == "1.37"
    assert all(cfg.kubelet.gate(g) is v for g, v in versions.gate_defaults("1.37").items())


def test_explicit_gates_override_the_release() -> None:
    cfg = load("1.35", {"DRAPartitionableDevices": True, "DRAAdminAccess": False})
    assert cfg.kubelet.gate("DRAPartitionableDevices") and not cfg.kubelet.gate("DRAAdminAccess")
    assert not allocator_features(cfg).admin_access


def test_a_gate_locked_in_the_release_cannot_be_changed() -> None:
    with pytest.raises(ConfigError, match=r"KubeletConfiguration.featureGates.DRAAdminAccess: cannot set feature gate "
                                          r"DRAAdminAccess to false, feature is locked to true"):
        load("1.36", {"DRAAdminAccess": False})


def test_unsupported_version_is_refused_with_its_path() -> None:
    with pytest.raises(ConfigError, match=r'NodeAgentConfiguration.kubernetesVersion: unsupported Kubernetes version '
                                          r'"1.30" \(supported: 1.34, 1.35, 1.36, 1.37\)'):
        load("1.30")


@pytest.mark.parametrize(("version", "empty"), [("1.35", False), ("1.36", False), ("1.37", True)])
def test_the_config_format_follows_the_release(version: str, empty: bool) -> None:
    assert allocator_features(load(version)).config_covering_all_is_empty is empty
