"""Each identity its own credential, checked with `kubectl auth whoami` against a running daemon.

The administrator's kubeconfig is nodeagent-admin in system:masters; a spawned plugin's kubeconfig
holds only a token of its own service account (system:serviceaccount:kube-system:nodeagent-plugin-NAME,
bound to the node), not the administrator's token, and dies with the service
account; `nodeagent kubeconfig --node NAME` issues system:node:NAME in
system:nodes; check-config warns about a wildcard bindAddress and anonymous: true."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integration.daemon_helpers import running_daemon, wait_for, write_config

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")]

PROBE = ("import os, pathlib, time; p = pathlib.Path(os.environ['NODEAGENT_KUBECONFIG']); "
         "pathlib.Path(os.environ['OUT']).write_text(str(p)); time.sleep(600)")


def whoami(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("kubectl")
    assert tool is not None
    return subprocess.run([tool, "--kubeconfig", str(kubeconfig), "auth", "whoami", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def user_info(kubeconfig: Path) -> dict[str, object]:
    """The caller's userInfo, without the certificate's credential id (checked to be there when it is one)."""
    out = whoami(kubeconfig, "-o", "json")
    assert out.returncode == 0, out.stderr
    info: dict[str, object] = json.loads(out.stdout)["status"]["userInfo"]
    extra = info.pop("extra", None)
    if "client-certificate-data" in kubeconfig.read_text():
        assert isinstance(extra, dict) and extra["authentication.kubernetes.io/credential-id"][0].startswith(
            "X509SHA256=")
    if "tokenFile" in kubeconfig.read_text():  # a service-account token: its jti, and the node it is bound to
        assert isinstance(extra, dict) and extra["authentication.kubernetes.io/credential-id"][0].startswith("JTI=")
        assert extra["authentication.kubernetes.io/node-name"] == ["test-node"]
        info.pop("uid")
    return info


def test_each_identity_has_its_own_credential(short_dir: Path) -> None:
    out = short_dir / "probe.out"
    agent = {"plugins": [{"name": "probe", "command": [sys.executable, "-c", PROBE], "env": {"OUT": str(out)},
                          "restart": False}]}
    with running_daemon(short_dir, agent=agent) as d:
        admin = yaml.safe_load(d.kubeconfig.read_text())
        token = admin["users"][0]["user"]["token"]
        assert user_info(d.kubeconfig) == {"username": "nodeagent-admin",
                                           "groups": ["system:masters", "system:authenticated"]}

        wait_for(out.exists, timeout=30, what="the plugin's kubeconfig path")
        plugin_kc = Path(out.read_text())
        assert plugin_kc != d.kubeconfig and plugin_kc.stat().st_mode & 0o777 == 0o600
        text = plugin_kc.read_text()
        assert token not in text
        users = yaml.safe_load(text)["users"]
        assert len(users) == 1 and set(users[0]["user"]) == {"token", "tokenFile"}
        assert Path(users[0]["user"]["tokenFile"]).read_text() == users[0]["user"]["token"]
        assert user_info(plugin_kc) == {
            "username": "system:serviceaccount:kube-system:nodeagent-plugin-probe",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]}
        d.kubectl("delete", "serviceaccount", "-n", "kube-system", "nodeagent-plugin-probe")
        locked_out = whoami(plugin_kc)
        assert locked_out.returncode == 1 and "Unauthorized" in locked_out.stderr

        node_kc = short_dir / "node-a.kubeconfig"
        issued = subprocess.run([sys.executable, "-m", "nodeagent.cli", "kubeconfig", "--config", str(d.config),
                                 "--node", "node-a", "-o", str(node_kc)], capture_output=True, text=True, timeout=60)
        assert issued.returncode == 0, issued.stderr
        assert token not in node_kc.read_text()
        assert user_info(node_kc) == {"username": "system:node:node-a",
                                      "groups": ["system:nodes", "system:authenticated"]}
        table = whoami(node_kc)
        assert [line.split() for line in table.stdout.splitlines()[:3]] == [
            ["ATTRIBUTE", "VALUE"], ["Username", "system:node:node-a"],
            ["Groups", "[system:nodes", "system:authenticated]"]]


def test_check_config_warns_about_a_wildcard_bind_and_anonymous(short_dir: Path) -> None:
    for api, word in (({"bindAddress": "0.0.0.0:6443"}, 'bindAddress: "0.0.0.0:6443" serves the Kubernetes API on '
                       "every interface"), ({"bindAddress": "127.0.0.1:6443", "anonymous": True},
                                            "anonymous: true: every request without a credential is served as "
                                            "system:anonymous")):
        cfg = write_config(short_dir, {}, {"controlPlane": {"apiServer": api}}, 0)
        out = subprocess.run([sys.executable, "-m", "nodeagent.cli", "check-config", "--config", str(cfg)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert f"nodeagent: warning: NodeAgentConfiguration.controlPlane.apiServer.{word}" in out.stderr


@pytest.mark.timeout(180)
def test_a_node_process_joins_with_its_own_credential(short_dir: Path) -> None:
    """A node process whose cluster.kubeconfig is the node's own (system:node:test-node, issued by
    `nodeagent kubeconfig`) registers its Node, renews its Lease and turns Ready: no admin token involved."""
    from tests.integration.daemon_helpers import free_port
    from tests.integration.test_two_processes import control_plane, ready

    with control_plane(short_dir / "cp", free_port()) as cp:
        node_kc = short_dir / "node.kubeconfig"
        issued = subprocess.run([sys.executable, "-m", "nodeagent.cli", "kubeconfig", "--config", str(cp.config),
                                 "--node", "test-node", "-o", str(node_kc)], capture_output=True, text=True,
                                timeout=60)
        assert issued.returncode == 0, issued.stderr
        admin_token = yaml.safe_load(cp.kubeconfig.read_text())["users"][0]["user"]["token"]
        assert admin_token not in node_kc.read_text()
        base = short_dir / "n"
        base.mkdir()
        agent = {"cluster": {"kubeconfig": str(node_kc), "requestTimeout": "3s"},
                 "node": {"leaseDurationSeconds": 2, "statusUpdateFrequency": "1s"},
                 "controlPlane": {"apiServer": {"bindAddress": ""}}}
        with running_daemon(base, {}, agent):
            wait_for(lambda: ready(cp) == "True", timeout=40, what="node Ready with its own credential")
            lease = cp.kubectl_json("get", "lease", "-n", "kube-node-lease", "test-node")
            assert lease["spec"]["holderIdentity"] == "test-node"
