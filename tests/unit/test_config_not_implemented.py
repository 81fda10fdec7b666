"""Alpha gates nodeagent does not implement are refused when enabled, with a message saying so,
instead of being accepted and doing nothing (DRANodeAllocatableResources once was)."""

from __future__ import annotations

import pytest

from nodeagent.config import gatelist
from nodeagent.config.file import parse_documents
from nodeagent.errors import ConfigError
from tests.rpc.test_resource_round_trip import NOT_IMPLEMENTED as DROPPED_FIELDS


def kubelet(gates: dict[str, bool]) -> list[object]:
    return [{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "featureGates": gates}]


@pytest.mark.parametrize("gate", sorted(gatelist.NOT_IMPLEMENTED))
def test_enabling_is_refused(gate: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_documents(kubelet({gate: True}))
    assert f"feature gate {gate} is not supported by nodeagent, which does not implement" in str(err.value)
    assert not parse_documents(kubelet({gate: False})).kubelet.gate(gate)


def test_node_allocatable_resources_is_accepted() -> None:
    """DRANodeAllocatableResources is implemented (issue 22): alpha, off by default, accepted on."""
    assert "DRANodeAllocatableResources" not in gatelist.NOT_IMPLEMENTED
    assert not parse_documents(kubelet({})).kubelet.gate("DRANodeAllocatableResources")
    assert parse_documents(kubelet({"DRANodeAllocatableResources": True})).kubelet.gate("DRANodeAllocatableResources")


def test_every_gate_whose_fields_are_dropped_is_refused() -> None:
    """The round-trip test may expect a gate's fields dropped only because that gate cannot be on."""
    assert set(DROPPED_FIELDS) == set(gatelist.NOT_IMPLEMENTED)
