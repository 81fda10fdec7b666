"""Feature gates as the emulated release has them: upstream's list, its refusals, nodeagent's own switch apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeagent.config import DEFAULT_FEATURE_GATES, effective, gatelist, load, parse_documents
from nodeagent.errors import ConfigError
from tests.unit.config import upstream_gates

CONFIGS = Path(__file__).parents[3] / "configs"
K = "KubeletConfiguration"


def parse(gates: dict[str, Any], version: str | None = None, **agent: Any) -> Any:
    return parse_documents([
        {"kind": K, "featureGates": gates},
        {"kind": "NodeAgentConfiguration", "nodeName": "n1", **({"kubernetesVersion": version} if version else {}),
         **agent},
    ])


@pytest.mark.skipif(not upstream_gates.available(), reason="k8s.io/kubernetes@v1.37.2 not in the Go module cache")
def test_the_gate_list_is_the_v1_37_kubelets() -> None:
    ours = "\n".join(line for line in gatelist._TABLE.strip().splitlines()
                     if line.split()[0] not in (gatelist.ALL_ALPHA, gatelist.ALL_BETA))
    assert ours == upstream_gates.table()
    assert gatelist._DEPENDENCIES.strip() == upstream_gates.dependency_table()


def test_an_unknown_gate_is_refused_with_upstreams_message() -> None:
    with pytest.raises(ConfigError, match=r"^KubeletConfiguration.featureGates.NoSuchGate: unrecognized feature gate: "
                                          r"NoSuchGate$"):
        parse({"NoSuchGate": True})


def test_classic_dras_old_gate_is_refused_naming_its_new_place() -> None:
    with pytest.raises(ConfigError) as err:
        parse({"DRAControlPlaneController": True})
    assert str(err.value) == ("KubeletConfiguration.featureGates.DRAControlPlaneController: unrecognized feature gate: "
                              "DRAControlPlaneController (not a Kubernetes feature gate: it is "
                              "NodeAgentConfiguration.classicDRA in nodeagent)")


def test_classic_dra_is_a_nodeagent_field_never_shown_as_a_kubelet_gate() -> None:
    cfg = parse({}, classicDRA=True)
    assert cfg.agent.classic_dra and cfg.kubelet.gate("DRAControlPlaneController")
    assert not parse({}).kubelet.gate("DRAControlPlaneController")
    shown = effective(cfg)
    assert "DRAControlPlaneController" not in shown["kubeletconfig"]["featureGates"]
    assert shown["nodeagentconfig"]["classicDRA"] is True


@pytest.mark.parametrize(("version", "gate"), [("1.36", "DRAOptionalNodeOperations"), ("1.35", "DRAListTypeAttributes"),
                                               ("1.34", "DRADeviceTaintRules")])
def test_a_gate_newer_than_the_emulated_release_is_unknown_there(version: str, gate: str) -> None:
    parse({gate: True})  # 1.37 has it
    with pytest.raises(ConfigError, match=rf"featureGates.{gate}: unrecognized feature gate: {gate}$"):
        parse({gate: True}, version)


def test_an_enabled_gate_needs_its_dependencies_on() -> None:
    with pytest.raises(ConfigError, match=r"KubeletConfiguration.featureGates: DRAFractionalCapacityRange is enabled, "
                                          r"but depends on features that are disabled: \[DRAConsumableCapacity\]"):
        parse({"DRAFractionalCapacityRange": True, "DRAConsumableCapacity": False})


def test_every_gate_error_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as err:
        parse({"A1": True, "DRAAdminAccess": False, "B2": False})
    text = str(err.value)
    assert text.startswith("3 configuration errors:")
    assert "unrecognized feature gate: A1" in text and "unrecognized feature gate: B2" in text
    assert "cannot set feature gate DRAAdminAccess to false, feature is locked to true" in text


def test_all_alpha_turns_on_the_alpha_gates_left_unset() -> None:
    # as upstream: the alpha gates AllAlpha turns on need the beta GenericWorkload (off by default) too
    with pytest.raises(ConfigError, match=r"CompositePodGroup is enabled, but depends on features that are disabled: "
                                          r"\[GenericWorkload\]"):
        parse({"AllAlpha": True})
    # the alpha gates nodeagent does not implement are refused on (gatelist.NOT_IMPLEMENTED): set off
    cfg = parse({"AllAlpha": True, "GenericWorkload": True, "DRAListTypeAttributes": False,
                 **dict.fromkeys(gatelist.NOT_IMPLEMENTED, False)})
    assert cfg.kubelet.gate("DRAOptionalNodeOperations") and cfg.kubelet.gate("CPUManagerPolicyAlphaOptions")
    assert not cfg.kubelet.gate("DRAListTypeAttributes")


def test_defaults_and_shipped_configs_name_only_gates_of_the_release() -> None:
    release = gatelist.known(37)
    assert set(DEFAULT_FEATURE_GATES) - set(gatelist.NODEAGENT_GATES) <= release
    for path in sorted(CONFIGS.glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        if not any(doc.get("kind") == K for doc in docs):
            continue
        for doc in docs:
            if doc.get("kind") == K:
                assert set(doc.get("featureGates") or {}) <= release, path.name
        load(path)  # and the file loads


def test_defaults_follow_upstream_at_each_release() -> None:
    assert gatelist.enabled("DRAPartitionableDevices", 35, {}) is False
    assert gatelist.enabled("DRAPartitionableDevices", 36, {}) is True
    # a spec that holds only with a minimum compatibility version of 1.37 (not 1.36, the 1.37 kubelet's)
    assert gatelist.enabled("DRAFractionalCapacityRange", 37, {}) is False


def test_configz_shows_only_gates_the_emulated_release_has() -> None:
    gates = effective(parse({}, "1.35"))["kubeletconfig"]["featureGates"]
    assert "DRAOptionalNodeOperations" not in gates and "DRAListTypeAttributes" not in gates  # 1.37, 1.36 gates
    assert gates["DRAPartitionableDevices"] is False and gates["DynamicResourceAllocation"] is True
    assert set(gates) <= gatelist.known(35)
