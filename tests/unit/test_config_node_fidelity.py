"""Node fidelity settings (issue 11): the node IP (--node-ip, nodeIP) and the addresses it gives,
the KubeletConfiguration heartbeat fields with NodeAgentConfiguration.node as overrides, and each
full virtual node's own kubeconfig in cluster mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodeagent.config import parse_documents, with_overrides
from nodeagent.config.nodes import expand
from nodeagent.errors import ConfigError
from nodeagent.host.address import default_node_ip, node_addresses, resolve_node_ips
from nodeagent.host.fake import FakeHost
from nodeagent.host.probe import default_route_interfaces


def _cfg(kubelet: dict[str, Any] | None = None, **agent: Any) -> Any:
    return parse_documents([
        {"kind": "KubeletConfiguration", **(kubelet or {})},
        {"kind": "NodeAgentConfiguration", "nodeName": "local", "rootDir": "/r", "stateDir": "/s", **agent},
    ])


# --- node IP -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "ips"), [
    ("", ()),
    ("10.0.0.5", ("10.0.0.5",)),
    (" 10.0.0.5 ", ("10.0.0.5",)),
    ("127.0.0.2", ("127.0.0.2",)),  # loopback allowed: fake nodes on one machine
    ("10.0.0.5,fd00::5", ("10.0.0.5", "fd00::5")),
    ("fd00:0::5,10.0.0.5", ("fd00::5", "10.0.0.5")),
])
def test_node_ip_accepted(text: str, ips: tuple[str, ...]) -> None:
    assert _cfg(nodeIP=text).agent.node_ips == ips


@pytest.mark.parametrize(("text", "message"), [
    ("10.0.0", 'NodeAgentConfiguration.nodeIP: Invalid value: "10.0.0": could not parse "10.0.0"'),
    ("node-1", 'could not parse "node-1"'),
    ("0.0.0.0", "nodeIP can't be an all zeros address"),
    ("::", "nodeIP can't be an all zeros address"),
    ("224.0.0.1", "nodeIP can't be a multicast address"),
    ("169.254.1.1", "nodeIP can't be a link-local unicast address"),
    ("fe80::1", "nodeIP can't be a link-local unicast address"),
    ("10.0.0.1,10.0.0.2", "must contain either a single IP or a dual-stack pair of IPs"),
    ("10.0.0.1,fd00::1,10.0.0.2", "must contain either a single IP or a dual-stack pair of IPs"),
])
def test_node_ip_refused_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=r"NodeAgentConfiguration\.nodeIP: ") as err:
        _cfg(nodeIP=text)
    assert message in str(err.value)


def test_node_ip_flag_overrides_and_is_checked() -> None:
    cfg = _cfg(nodeIP="10.0.0.5")
    assert with_overrides(cfg, node_ip="10.0.0.9").agent.node_ips == ("10.0.0.9",)
    assert with_overrides(cfg).agent.node_ips == ("10.0.0.5",)
    with pytest.raises(ConfigError, match='--node-ip: Invalid value: "x": could not parse'):
        with_overrides(cfg, node_ip="x")


def test_node_ip_not_a_string() -> None:
    with pytest.raises(ConfigError, match=r"NodeAgentConfiguration\.nodeIP"):
        _cfg(nodeIP=["10.0.0.1"])


ROUTES = """Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth1\t00000000\t010200C0\t0003\t0\t0\t200\t00000000\t0\t0\t0
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
wg0\t00000000\t00000000\t0000\t0\t0\t0\t00000000\t0\t0\t0
bad\tzz\t0\t0003\t0\t0\t0\t00000000\t0\t0\t0
"""


def test_default_route_interfaces_lowest_metric_first_only_up() -> None:
    assert default_route_interfaces(ROUTES) == ("eth0", "eth1")
    assert default_route_interfaces("") == ()


@pytest.mark.parametrize(("routes", "addresses", "want"), [
    (("eth0",), (("eth0", "fe80::1"), ("eth0", "192.0.2.7"), ("eth1", "10.0.0.1")), "192.0.2.7"),
    (("eth0", "eth1"), (("eth0", "fd00::1"), ("eth0", "169.254.3.3"), ("eth1", "10.0.0.1")), "10.0.0.1"),
    ((), (("eth0", "192.0.2.7"),), "127.0.0.1"),  # no default route
    (("eth0",), (("lo", "127.0.0.1"),), "127.0.0.1"),  # the route's interface has no IPv4
    (("eth0",), (("eth0", "not-an-ip"),), "127.0.0.1"),
])
def test_default_node_ip_from_the_default_route(routes: tuple[str, ...], addresses: tuple[tuple[str, str], ...],
                                                want: str) -> None:
    facts = FakeHost(default_route_interfaces=routes, interface_addresses=addresses).facts()
    assert default_node_ip(facts) == want


class _NoFacts(FakeHost):
    def facts(self) -> Any:
        raise AssertionError("facts read although the node IP is configured")


def test_node_addresses_internal_ips_then_hostname() -> None:
    host = FakeHost(default_route_interfaces=("eth0",), interface_addresses=(("eth0", "192.0.2.7"),))
    assert node_addresses(resolve_node_ips((), host), "n1") == [
        {"type": "InternalIP", "address": "192.0.2.7"}, {"type": "Hostname", "address": "n1"}]
    assert node_addresses(resolve_node_ips(("10.0.0.5", "fd00::5"), _NoFacts()), "n1") == [
        {"type": "InternalIP", "address": "10.0.0.5"}, {"type": "InternalIP", "address": "fd00::5"},
        {"type": "Hostname", "address": "n1"}]


# --- heartbeat: KubeletConfiguration fields, NodeAgentConfiguration.node overrides ---------------

def _beat(cfg: Any) -> tuple[int, float, float]:
    n = cfg.agent.node
    return n.lease_duration_seconds, n.status_update_frequency, n.status_report_frequency


@pytest.mark.parametrize(("kubelet", "node", "want"), [
    ({}, None, (40, 10.0, 300.0)),
    ({"nodeLeaseDurationSeconds": 20}, None, (20, 10.0, 300.0)),
    ({"nodeLeaseDurationSeconds": 0}, None, (40, 10.0, 300.0)),  # 0: unset, the default
    # an explicit nodeStatusUpdateFrequency is also the report frequency when that is unset (upstream defaulting)
    ({"nodeStatusUpdateFrequency": "4s"}, None, (40, 4.0, 4.0)),
    ({"nodeStatusUpdateFrequency": "4s", "nodeStatusReportFrequency": "1m"}, None, (40, 4.0, 60.0)),
    ({"nodeStatusReportFrequency": "30s"}, None, (40, 10.0, 30.0)),
    ({"nodeLeaseDurationSeconds": 20}, {"leaseDurationSeconds": 8}, (8, 10.0, 300.0)),
    ({"nodeStatusUpdateFrequency": "4s"}, {"statusUpdateFrequency": "2s"}, (40, 2.0, 4.0)),
    ({}, {"statusReportFrequency": "1m"}, (40, 10.0, 60.0)),
    ({"nodeLeaseDurationSeconds": 20}, {"enabled": True}, (20, 10.0, 300.0)),
])
def test_heartbeat_from_kubelet_config_with_overrides(kubelet: dict[str, Any], node: dict[str, Any] | None,
                                                      want: tuple[int, float, float]) -> None:
    cfg = _cfg(kubelet, **({"node": node} if node is not None else {}))
    assert _beat(cfg) == want
    assert cfg.kubelet.node_lease_duration_seconds == (kubelet.get("nodeLeaseDurationSeconds") or 40)


@pytest.mark.parametrize(("kubelet", "node", "message"), [
    ({"nodeLeaseDurationSeconds": -1}, None, "KubeletConfiguration.nodeLeaseDurationSeconds: invalid configuration: "
                                             "nodeLeaseDurationSeconds must be greater than 0"),
    ({"nodeLeaseDurationSeconds": "40"}, None, "KubeletConfiguration.nodeLeaseDurationSeconds"),
    ({"nodeStatusUpdateFrequency": "-5s"}, None, "KubeletConfiguration.nodeStatusUpdateFrequency"),
    ({"nodeStatusReportFrequency": "soon"}, None, "KubeletConfiguration.nodeStatusReportFrequency"),
    ({}, {"statusReportFrequency": 0}, "NodeAgentConfiguration.node.statusReportFrequency: must be positive"),
    ({}, {"leaseDurationSeconds": 0}, "NodeAgentConfiguration.node.leaseDurationSeconds"),
])
def test_heartbeat_bad_input_names_the_field(kubelet: dict[str, Any], node: dict[str, Any] | None,
                                             message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _cfg(kubelet, **({"node": node} if node is not None else {}))
    assert message in str(err.value)


# --- each full virtual node's own kubeconfig ------------------------------------------------------

def _cluster_nodes(tmp_path: Path, nodes: Any) -> Any:
    shared = tmp_path / "cluster.kubeconfig"
    shared.write_text("apiVersion: v1\nkind: Config\n")
    return _cfg(cluster={"kubeconfig": str(shared)}, node={"enabled": True}, nodes=nodes)


def test_each_node_gets_its_own_kubeconfig(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"vn-{i}.kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    cfg = _cluster_nodes(tmp_path, [{"name": "vn-{index}", "count": 3, "kubeconfig": f"{tmp_path}/{{node}}.kubeconfig"},
                                    {"name": "plain"}])
    nodes = expand(cfg)
    assert [n.agent.cluster.kubeconfig for n in nodes] == [
        tmp_path / "vn-0.kubeconfig", tmp_path / "vn-1.kubeconfig", tmp_path / "vn-2.kubeconfig",
        tmp_path / "cluster.kubeconfig"]
    assert nodes[0].agent.cluster.request_timeout == cfg.agent.cluster.request_timeout


def test_a_missing_node_kubeconfig_is_named(tmp_path: Path) -> None:
    (tmp_path / "n0.kubeconfig").write_text("x")
    cfg = _cluster_nodes(tmp_path, [{"name": "vn-{index}", "count": 2,
                                     "kubeconfig": f"{tmp_path}/n{{index}}.kubeconfig"}])
    with pytest.raises(ConfigError) as err:
        expand(cfg)
    assert str(err.value) == (f'NodeAgentConfiguration.nodes[0].kubeconfig: Invalid value: "{tmp_path}/n1.kubeconfig": '
                              'no such file (the kubeconfig of node "vn-1")')


@pytest.mark.parametrize(("entry", "message"), [
    ({"name": "vn-{index}", "count": 2, "kubeconfig": "/k/{bad}.kubeconfig"},
     'NodeAgentConfiguration.nodes[0].kubeconfig: unknown placeholder "{bad}"'),
    ({"name": "vn", "kubeconfig": "k/vn.kubeconfig"},
     'NodeAgentConfiguration.nodes[0].kubeconfig: must be an absolute path, got "k/vn.kubeconfig"'),
    ({"name": "vn-{index}", "count": 2, "kubeconfig": "/k/shared.kubeconfig"},
     'NodeAgentConfiguration.nodes[0].kubeconfig: Invalid value: "/k/shared.kubeconfig": with count 2 every node'),
])
def test_node_kubeconfig_template_errors(tmp_path: Path, entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _cluster_nodes(tmp_path, [entry])
    assert message in str(err.value)


def test_node_kubeconfig_needs_cluster_mode(tmp_path: Path) -> None:
    (tmp_path / "vn.kubeconfig").write_text("x")
    cfg = _cfg(nodes=[{"name": "vn", "kubeconfig": f"{tmp_path}/vn.kubeconfig"}])
    with pytest.raises(ConfigError, match=r"nodes\[0\].kubeconfig: a node's own kubeconfig is for a node that joins"):
        expand(cfg)


def test_virtual_node_status_carries_the_daemons_ip() -> None:
    from nodeagent.controlplane.controllers import virtual_nodes as vn

    spec = vn.parse([{"name": "virt-0", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "10"}}])[0]
    assert vn.node_status(spec, 0.0, ("10.0.0.5",))["addresses"] == [
        {"type": "InternalIP", "address": "10.0.0.5"}, {"type": "Hostname", "address": "virt-0"}]
    assert vn.node_status(spec, 0.0)["addresses"] == [{"type": "Hostname", "address": "virt-0"}]
