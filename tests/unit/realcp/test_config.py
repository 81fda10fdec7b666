"""controlPlane.kubernetes in the NodeAgentConfiguration: what parses, what is refused (errors name the
field path), and that check-config's rendering parses back to the same settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodeagent.config.agent import parse_agent, render_agent
from nodeagent.config.model import KubernetesConfig, NodeAgentConfig
from nodeagent.errors import ConfigError

BASE = {"apiVersion": "nodeagent.dev/v1alpha1", "kind": "NodeAgentConfiguration", "nodeName": "n1"}
CP = "NodeAgentConfiguration.controlPlane"


def _parse(**doc: Any) -> NodeAgentConfig:
    return parse_agent({**BASE, **doc}, Path("/etc/nodeagent"))


def _kubernetes(**k: Any) -> KubernetesConfig:
    got = _parse(controlPlane={"kubernetes": k}).control_plane.kubernetes
    assert got is not None
    return got


def test_absent_means_the_embedded_control_plane() -> None:
    a = _parse()
    assert a.control_plane.kubernetes is None
    assert "kubernetes" not in render_agent(a)["controlPlane"]


def test_one_multi_role_binary_with_upstream_defaults() -> None:
    k = _kubernetes(binary="bin/kube-multi")
    assert k.binary == "/etc/nodeagent/bin/kube-multi"  # relative to the config file's folder
    assert (k.etcd_client_port, k.etcd_peer_port, k.scheduler_port, k.controller_manager_port) == \
        (2379, 2380, 10259, 10257)
    assert k.service_cluster_ip_range == "10.96.0.0/12"
    assert k.program("kube-scheduler") == ("/etc/nodeagent/bin/kube-multi", "kube-scheduler")
    assert _kubernetes(binary="kube-apiserver-fixture").binary == "kube-apiserver-fixture"  # looked up on PATH


def test_one_binary_per_role() -> None:
    binaries = {"etcd": "/usr/bin/etcd", "kube-apiserver": "/k/kube-apiserver", "kube-scheduler": "/k/kube-scheduler",
                "kube-controller-manager": "/k/kube-controller-manager"}
    k = _kubernetes(binaries=binaries, extraArgs={"kube-apiserver": ["--v=2"]}, readyTimeout="3m",
                    nodeCredentials=["fake-1", "fake-2"])
    assert k.node_credentials == ("fake-1", "fake-2")
    assert k.program("etcd") == ("/usr/bin/etcd",) and k.extra_args == {"kube-apiserver": ("--v=2",)}
    assert k.ready_timeout == 180.0


def test_rendering_parses_back() -> None:
    a = _parse(controlPlane={"kubernetes": {"binary": "/k/multi", "etcdClientPort": 3000, "extraArgs": {
        "etcd": ["--x"]}, "nodeCredentials": ["fake-1"]}})
    rendered = render_agent(a)["controlPlane"]
    assert rendered["kubernetes"]["binary"] == "/k/multi"
    again = _parse(controlPlane={"kubernetes": rendered["kubernetes"]})
    assert again.control_plane.kubernetes == a.control_plane.kubernetes


@pytest.mark.parametrize(("doc", "error"), [
    ({"kubernetes": {}}, f"{CP}.kubernetes.binary: Required value: one multi-role binary"),
    ({"kubernetes": {"binary": ""}}, f"{CP}.kubernetes.binary: Required value: a program"),
    ({"kubernetes": {"binaries": {"etcd": "/e"}}},
     f"{CP}.kubernetes.binaries: Required value: a program for every role, missing kube-apiserver, "
     "kube-scheduler, kube-controller-manager"),
    ({"kubernetes": {"binaries": {"kubelet": "/k"}}},
     f'{CP}.kubernetes.binaries["kubelet"]: Unsupported value: "kubelet"'),
    ({"kubernetes": {"binary": "/k", "binaries": {"etcd": "/e"}}},
     f"{CP}.kubernetes.binaries: Forbidden: may not be set with {CP}.kubernetes.binary"),
    ({"kubernetes": {"binary": "/k", "etcdClientPort": 70000}},
     f"{CP}.kubernetes.etcdClientPort: Invalid value: 70000"),
    ({"kubernetes": {"binary": "/k", "schedulerPort": 2379}}, f"{CP}.kubernetes: Invalid value: the ports"),
    ({"kubernetes": {"binary": "/k", "serviceClusterIPRange": "10.96.0.1/12"}},
     f'{CP}.kubernetes.serviceClusterIPRange: Invalid value: "10.96.0.1/12"'),
    ({"kubernetes": {"binary": "/k", "extraArgs": {"kube-apiserver": "--v=2"}}},
     f'{CP}.kubernetes.extraArgs["kube-apiserver"]: expected array of strings'),
    ({"kubernetes": {"binary": "/k", "stopTimeout": 0}}, f"{CP}.kubernetes.stopTimeout: must be positive"),
    ({"kubernetes": {"binary": "/k", "nodeCredentials": ["Fake_1"]}},
     f'{CP}.kubernetes.nodeCredentials[0]: Invalid value: "Fake_1": a lowercase RFC 1123 subdomain'),
    ({"kubernetes": {"binary": "/k", "nodeCredentials": ["a", "a"]}},
     f'{CP}.kubernetes.nodeCredentials[1]: Duplicate value: "a"'),
    ({"kubernetes": {"binary": "/k"}, "apiServer": {"bindAddress": ""}},
     f"{CP}.apiServer.bindAddress: Required value"),
    ({"kubernetes": {"binary": "/k"}, "apiServer": {"anonymous": True}}, f"{CP}.apiServer.anonymous: Forbidden"),
    ({"kubernetes": {"binary": "/k"}, "enabled": False}, f"{CP}.enabled: Invalid value: false"),
    ({"kubernetes": {"binary": "/k"}, "scheduler": {"enabled": False}}, f"{CP}.scheduler.enabled: Forbidden"),
])
def test_refused(doc: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError) as err:
        _parse(controlPlane=doc)
    assert error in str(err.value)


@pytest.mark.parametrize(("doc", "error"), [
    ({"cluster": {"kubeconfig": "/k.conf"}}, "NodeAgentConfiguration.cluster.kubeconfig: Forbidden"),
    # full virtual nodes join with credentials the process issues (system:node:NAME each), not their own
    ({"nodes": [{"name": "f-{index}", "count": 2, "kubeconfig": "/n/{node}.conf"}]},
     "NodeAgentConfiguration.nodes[0].kubeconfig: Forbidden"),
    ({"node": {"selfBinding": True}}, "NodeAgentConfiguration.node.selfBinding: Invalid value: true: kube-scheduler"),
])
def test_refused_beside_other_fields(doc: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError) as err:
        _parse(controlPlane={"kubernetes": {"binary": "/k"}}, **doc)
    assert error in str(err.value)


def test_full_virtual_nodes_are_accepted_beside_the_real_control_plane() -> None:
    """Each joins with its own kubelet identity, issued at start (wiring/real_control_plane.py)."""
    agent = _parse(controlPlane={"kubernetes": {"binary": "/k"}}, nodes=[{"name": "f-{index}", "count": 2}])
    assert [(g.name, g.count, g.kubeconfig) for g in agent.nodes] == [("f-{index}", 2, "")]
