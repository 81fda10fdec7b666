"""NodeAgentConfiguration.cluster and .node: a node alone (no embedded control plane, no API
server), a control plane alone, and the combinations that leave nothing sensible to run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodeagent.config.agent import parse_agent, render_agent
from nodeagent.errors import ConfigError

BASE = {"apiVersion": "nodeagent.dev/v1alpha1", "kind": "NodeAgentConfiguration", "nodeName": "n1"}


def _parse(**doc: Any) -> Any:
    return parse_agent({**BASE, **doc}, Path("/etc/nodeagent"))


def test_a_node_alone_runs_no_control_plane() -> None:
    a = _parse(cluster={"kubeconfig": "node-kubeconfig", "requestTimeout": "3s"},
               node={"leaseDurationSeconds": 8, "statusUpdateFrequency": "2s"})
    assert a.cluster.kubeconfig == Path("/etc/nodeagent/node-kubeconfig") and a.cluster.request_timeout == 3.0
    assert not a.control_plane.enabled and a.control_plane.api_server.bind_address == ""
    assert (a.node.lease_duration_seconds, a.node.status_update_frequency) == (8, 2.0)
    rendered = render_agent(a)
    assert rendered["cluster"]["kubeconfig"] == "/etc/nodeagent/node-kubeconfig"
    assert parse_agent({**BASE, "cluster": rendered["cluster"]}).cluster == a.cluster


def test_defaults_and_a_control_plane_alone() -> None:
    a = _parse()
    assert a.cluster.kubeconfig is None and a.node.enabled and a.node.lease_duration_seconds == 40
    assert a.control_plane.node_monitor_grace_period == 50.0
    cp = _parse(node={"enabled": False}, controlPlane={"nodeMonitorGracePeriod": "4s"})
    assert not cp.node.enabled and cp.control_plane.enabled and cp.control_plane.node_monitor_grace_period == 4.0


def test_virtual_nodes_alone_in_a_node_process() -> None:
    """`node.enabled: false` with `cluster`: the process serves its virtualNodes (nodeapi/virtual.py)."""
    a = _parse(cluster={"kubeconfig": "k"}, node={"enabled": False}, virtualNodes=[{"name": "vn-0"}])
    assert not a.node.enabled and not a.control_plane.enabled and a.cluster.kubeconfig == Path("/etc/nodeagent/k")
    assert [v.name for v in a.virtual_nodes] == ["vn-0"]


@pytest.mark.parametrize(("doc", "message"), [
    ({"cluster": {"kubeconfig": "k"}, "controlPlane": {"enabled": True}},
     "NodeAgentConfiguration.controlPlane.enabled: Invalid value: true: a node that joins a cluster"),
    ({"cluster": {"kubeconfig": "k"}, "node": {"enabled": False}},
     "NodeAgentConfiguration.node.enabled: Invalid value: false: with NodeAgentConfiguration.cluster"),
    ({"node": {"enabled": False}, "controlPlane": {"enabled": False}},
     "NodeAgentConfiguration.node.enabled: Invalid value: false: a control plane alone needs"),
    ({"node": {"leaseDurationSeconds": 0}}, "NodeAgentConfiguration.node.leaseDurationSeconds"),
    ({"cluster": {"kubeconfig": "k", "token": "x"}}, "NodeAgentConfiguration.cluster"),
])
def test_bad_combinations_name_the_field(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        _parse(**doc)
