"""A plugin of a node joined to a real kube-apiserver runs with its own credential, as the README makes it
(opt-in tier: NODEAGENT_KUBE_APISERVER=1, tests/integration/kubeapiserver.py).

The node joins with a kubelet's identity (system:node:NAME, Node authorizer and NodeRestriction on), which
cannot request tokens of other service accounts; so the README's block "A plugin's own credential on a real
cluster" is run here as written, with the administrator's kubeconfig: configs/rbac-node.yaml applied, a
service account bound to the ClusterRole nodeagent-plugin, a token of it from the real TokenRequest API bound
to the Node. The node is then restarted with the fake DRA driver naming that kubeconfig: the driver (the
process the daemon spawned, its environment read from /proc) publishes its node's ResourceSlice with it, and
its credential is refused everything else its role does not hold: another node's slice and a cluster-wide
one (the manifest's ValidatingAdmissionPolicy: 422 with the policy's text), secrets, the node's Lease (403).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.integration.daemon_helpers import running_daemon, wait_for
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_readme import BLOCKS

pytestmark = [pytest.mark.integration, pytest.mark.kube_apiserver]

NODE = "nodeagent-pc"
PLUGIN = "fake-dra"
ACCOUNT = f"nodeagent-plugin-{PLUGIN}"
DRIVER = "gpu.example.com"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
README_BLOCK = next(b for b in BLOCKS if b.section == "A plugin's own credential on a real cluster")


def _agent(kube_apiserver: KubeAPIServer, base: Path, plugin_kubeconfig: Path | None) -> dict[str, Any]:
    agent: dict[str, Any] = {"nodeName": NODE, "cluster": {"kubeconfig": str(kube_apiserver.node_kubeconfig(NODE))},
                             "node": {"leaseDurationSeconds": 4, "statusUpdateFrequency": "1s"},
                             "controlPlane": {"apiServer": {"bindAddress": ""}}}
    if plugin_kubeconfig is not None:
        agent["plugins"] = [{
            "name": PLUGIN,
            "command": [sys.executable, "-m", "plugins.fake_dra_driver", "--config",
                        str(REPO / "configs/plugins/fake-dra.yaml"), "--cdi-dir", str(base / "cdi")],
            "env": {"NODEAGENT_KUBECONFIG": str(plugin_kubeconfig), "PYTHONPATH": str(REPO)}}]
    return agent


def _spawned_env(daemon_pid: int) -> dict[str, str]:
    """The environment of the fake DRA driver the daemon spawned (its child process)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if int(stat.rpartition(")")[2].split()[1]) != daemon_pid or b"fake_dra_driver" not in cmdline:
                continue
            raw = Path(f"/proc/{pid}/environ").read_bytes()
        except (OSError, ValueError):
            continue
        return dict(item.partition("=")[::2] for item in raw.decode().split("\0") if item)
    raise AssertionError("no fake DRA driver among the daemon's children")


def _slice(name: str, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": "other.example.com", "pool": {"name": name, "generation": 1,
                                                                     "resourceSliceCount": 1}}
    spec.update({"nodeName": node} if node else {"allNodes": True})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


@pytest.mark.timeout(300)  # etcd, kube-apiserver, a node process started twice, a driver
def test_a_joined_nodes_plugin_runs_with_its_own_token(kube_apiserver: KubeAPIServer, short_dir: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    with running_daemon(short_dir, {}, _agent(kube_apiserver, short_dir, None)):
        wait_for(lambda: kube_apiserver.get(f"/api/v1/nodes/{NODE}"), timeout=30, what="the Node registered")
    # the README's block as written, from a folder holding the manifest as the checkout does
    work = short_dir / "op"
    (work / "configs").mkdir(parents=True)
    shutil.copy(REPO / "configs/rbac-node.yaml", work / "configs/rbac-node.yaml")
    script = README_BLOCK.text.replace(f"NODE=fake-1 PLUGIN={PLUGIN}", f"NODE={NODE} PLUGIN={PLUGIN}", 1)
    assert script != README_BLOCK.text, "the README block sets NODE and PLUGIN on its first line"
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "KUBECONFIG": str(kube_apiserver.kubeconfig),
                                           "KUBECTL_KUBERC": "false"})
    assert out.returncode == 0, out.stderr + out.stdout
    plugin_kubeconfig = work / f"{NODE}-{PLUGIN}.kubeconfig"
    made = json.loads(kube_apiserver.kubectl("--kubeconfig", str(plugin_kubeconfig), "config", "view", "--raw",
                                             "-o", "json").stdout)
    assert [u["name"] for u in made["users"]] == [ACCOUNT], "the plugin's kubeconfig holds its credential alone"
    assert set(made["users"][0]["user"]) == {"token"}
    who = json.loads(kube_apiserver.kubectl("auth", "whoami", "-o", "json", kubeconfig=plugin_kubeconfig).stdout)
    assert who["status"]["userInfo"]["username"] == f"system:serviceaccount:kube-system:{ACCOUNT}"
    assert who["status"]["userInfo"]["extra"]["authentication.kubernetes.io/node-name"] == [NODE]

    with running_daemon(short_dir, {}, _agent(kube_apiserver, short_dir, plugin_kubeconfig)) as d:
        def published() -> Any:
            items = kube_apiserver.get(f"{SLICES}?fieldSelector=spec.nodeName%3D{NODE}")["items"]
            return [s for s in items if s["spec"]["driver"] == DRIVER]

        mine = wait_for(published, timeout=60, what="the driver's ResourceSlice published with its own token")
        assert len(mine[0]["spec"]["devices"]) == 8
        assert _spawned_env(d.proc.pid)["NODEAGENT_KUBECONFIG"] == str(plugin_kubeconfig)

        def as_plugin(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
            return kube_apiserver.kubectl(*args, input=stdin, check=False, kubeconfig=plugin_kubeconfig)

        # what its role holds: its own node's slices, its Node, claims
        assert as_plugin("create", "-f", "-", stdin=json.dumps(_slice("own", NODE))).returncode == 0
        assert as_plugin("delete", "resourceslice", "own").returncode == 0
        assert as_plugin("get", "node", NODE).returncode == 0
        assert as_plugin("get", "resourceclaims", "-A").returncode == 0
        # and nothing else
        other = as_plugin("create", "-f", "-", stdin=json.dumps(_slice("theirs", "another-node")))
        assert other.returncode != 0
        assert ("ValidatingAdmissionPolicy 'resourceslices-policy-nodeagent-plugin' with binding "
                "'resourceslices-policy-nodeagent-plugin' denied request: this user running on node "
                f"'{NODE}' may not modify resourceslices on node 'another-node'") in other.stderr, other.stderr
        everywhere = as_plugin("create", "-f", "-", stdin=json.dumps(_slice("everywhere", None)))
        assert "may not modify cluster resourceslices" in everywhere.stderr, everywhere.stderr
        user = f"system:serviceaccount:kube-system:{ACCOUNT}"
        for args, text in (
                (("get", "secrets", "-n", "kube-system"),
                 f'secrets is forbidden: User "{user}" cannot list resource "secrets" in API group "" in the '
                 'namespace "kube-system"'),
                (("delete", "lease", NODE, "-n", "kube-node-lease"),
                 f'leases.coordination.k8s.io "{NODE}" is forbidden: User "{user}" cannot delete resource '
                 '"leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease"'),
                (("delete", "node", NODE),
                 f'nodes "{NODE}" is forbidden: User "{user}" cannot delete resource "nodes" in API group "" '
                 'at the cluster scope')):
            refused = as_plugin(*args)
            assert refused.returncode != 0 and text in refused.stderr, (args, refused.stderr)
        assert kube_apiserver.get(f"/api/v1/nodes/{NODE}")["metadata"]["name"] == NODE
