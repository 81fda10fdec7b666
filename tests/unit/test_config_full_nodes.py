"""NodeAgentConfiguration.nodes (full virtual nodes): parsing, errors naming their field, expansion
into one Config per node, and the per-node view of the shared state database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodeagent.config import parse_documents
from nodeagent.config.nodes import expand
from nodeagent.errors import ConfigError
from nodeagent.state.db import StateDB
from nodeagent.state.scoped import ScopedStateDB


def _cfg(nodes: Any, **agent: Any) -> Any:
    return parse_documents([
        {"kind": "KubeletConfiguration", "staticPodPath": "/etc/kubernetes/manifests"},
        {"kind": "NodeAgentConfiguration", "nodeName": "local", "rootDir": "/r", "stateDir": "/s",
         "nodes": nodes, **agent},
    ])


def test_expand_names_dirs_plugins_from_templates() -> None:
    cfg = _cfg([{"name": "vn-{index}", "count": 3, "rootDir": "/run/n/{node}",
                 "plugins": [{"name": "gpu", "command": ["plug", "--root", "{rootDir}", "--i", "{index}"],
                              "env": {"FAKE_NODE": "{node}"}}]}])
    nodes = expand(cfg)
    assert [n.agent.node_name for n in nodes] == ["vn-0", "vn-1", "vn-2"]
    n1 = nodes[1]
    assert n1.agent.root_dir == Path("/run/n/vn-1")
    assert n1.agent.state_dir == Path("/s/nodes/vn-1")
    assert n1.kubelet_socket == Path("/run/n/vn-1/device-plugins/kubelet.sock")
    assert n1.pod_resources_socket == Path("/run/n/vn-1/pod-resources/kubelet.sock")
    assert n1.agent.plugins[0].command == ("plug", "--root", "/run/n/vn-1", "--i", "1")
    assert n1.agent.plugins[0].env == {"FAKE_NODE": "vn-1"}
    assert n1.agent.plugins[0].name == "gpu@vn-1"
    # once-per-process parts are not the node's; its plugins get the daemon's kubeconfig
    assert n1.agent.nodes == () and n1.agent.metrics_bind_address == "" and n1.kubelet.static_pod_path == ""
    assert n1.kubeconfig_path == Path("/s/kubeconfig")


def test_default_dirs_under_the_daemons() -> None:
    (node,) = expand(_cfg([{"name": "one"}]))
    assert node.agent.root_dir == Path("/r/nodes/one") and node.agent.state_dir == Path("/s/nodes/one")


@pytest.mark.parametrize(("nodes", "agent", "message"), [
    ({"name": "x"}, {}, "NodeAgentConfiguration.nodes: expected array"),
    ([{"count": 2}], {}, "NodeAgentConfiguration.nodes[0].name: required"),
    ([{"name": "vn", "count": 2}], {}, 'NodeAgentConfiguration.nodes[0].name: Invalid value: "vn": with count 2'),
    ([{"name": "vn-{index}", "count": 0}], {}, "NodeAgentConfiguration.nodes[0].count"),
    ([{"name": "VN-{index}", "count": 2}], {}, 'NodeAgentConfiguration.nodes[0].name: Invalid value: "VN-0"'),
    ([{"name": "vn-{idx}"}], {}, 'NodeAgentConfiguration.nodes[0].name: unknown placeholder "{idx}"'),
    ([{"name": "vn-{index}", "count": 2, "rootDir": "/run/same"}], {},
     "NodeAgentConfiguration.nodes[0].rootDir: Invalid value"),
    ([{"name": "vn-{index}", "count": 2, "rootDir": "rel/{node}"}], {},
     "NodeAgentConfiguration.nodes[0].rootDir: must be an absolute path"),
    ([{"name": "vn-{index}", "count": 6000}], {}, "NodeAgentConfiguration.nodes[0].count: Invalid value: 6000"),
    ([{"name": "vn", "bogus": 1}], {}, "NodeAgentConfiguration.nodes[0]"),
    ([{"name": "vn", "plugins": [{"name": "p", "command": ["x", "{nod}"]}]}], {},
     'NodeAgentConfiguration.nodes[0].plugins[0].command[1]: unknown placeholder "{nod}"'),
    ([{"name": "vn", "plugins": [{"name": "p"}]}], {}, "NodeAgentConfiguration.nodes[0].plugins[0].command"),
])
def test_bad_input_names_the_field(nodes: Any, agent: Any, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _cfg(nodes, **agent)
    assert message in str(err.value)


@pytest.mark.parametrize(("nodes", "message"), [
    ([{"name": "local"}], 'NodeAgentConfiguration.nodes[0].name: Duplicate value: "local" '
                          "(also NodeAgentConfiguration.nodeName)"),
    ([{"name": "a-{index}", "count": 2}, {"name": "a-1"}],
     'NodeAgentConfiguration.nodes[1].name: Duplicate value: "a-1" (also NodeAgentConfiguration.nodes[0].name)'),
    ([{"name": "a", "rootDir": "/r"}], 'NodeAgentConfiguration.nodes[0].rootDir: Duplicate value: "/r"'),
    ([{"name": "a", "stateDir": "/x"}, {"name": "b", "stateDir": "/x"}],
     'NodeAgentConfiguration.nodes[1].stateDir: Duplicate value: "/x" for node "b"'),
])
def test_expand_refuses_shared_names_and_dirs(nodes: Any, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        expand(_cfg(nodes))
    assert message in str(err.value)


def test_scoped_state_keeps_nodes_apart(tmp_path: Path) -> None:
    shared = StateDB(tmp_path / "nodes.db")
    a, b = ScopedStateDB(shared, "node/a/"), ScopedStateDB(shared, "node/b/")
    a.put("pods", "uid1", {"x": 1})
    with b.transaction() as txn:
        txn.put("pods", "uid2", {"y": 2})
        txn.put("devices", "k", [1])
    assert a.items("pods") == [("uid1", {"x": 1})] and b.items("pods") == [("uid2", {"y": 2})]
    assert a.get("devices", "k") is None and b.get("devices", "k") == [1]
    with a.transaction() as txn:
        txn.delete_bucket("pods")
    assert a.items("pods") == [] and b.items("pods") == [("uid2", {"y": 2})]
    a.close()  # a view does not close the shared database
    assert b.get("pods", "uid2") == {"y": 2}
    shared.close()
    reopened = StateDB(tmp_path / "nodes.db")
    assert ScopedStateDB(reopened, "node/b/").get("devices", "k") == [1]
    reopened.close()
