"""A nodeagent node alone joins a real kube-apiserver with a kubelet's identity (system:node:NAME in
system:nodes, Node authorizer and NodeRestriction on): it registers its Node, renews its Lease in
kube-node-lease, runs a pod bound to it and patches the pod's status, all allowed for a kubelet.
Opt-in tier (NODEAGENT_KUBE_APISERVER=1, tests/integration/kubeapiserver.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import running_daemon, wait_for
from tests.integration.kubeapiserver import KubeAPIServer

pytestmark = [pytest.mark.integration, pytest.mark.kube_apiserver]

NODE = "nodeagent-ka"
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound", "namespace": "default"},
       "spec": {"nodeName": NODE, "containers": [{"name": "main", "image": "pause"}]}}


@pytest.mark.timeout(240)  # etcd, kube-apiserver and a node process
def test_node_joins_a_real_kube_apiserver(kube_apiserver: KubeAPIServer, short_dir: Path) -> None:
    agent = {"nodeName": NODE, "cluster": {"kubeconfig": str(kube_apiserver.node_kubeconfig(NODE))},
             "node": {"leaseDurationSeconds": 4, "statusUpdateFrequency": "1s"},
             "controlPlane": {"apiServer": {"bindAddress": ""}}}
    with running_daemon(short_dir, {}, agent):
        def ready() -> Any:
            node = kube_apiserver.get(f"/api/v1/nodes/{NODE}")
            return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"]) and node

        node = wait_for(ready, timeout=30, what="the Node registered and Ready")
        assert node["status"]["allocatable"]["cpu"] == "8"
        lease = wait_for(lambda: kube_apiserver.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/"
                                                    f"leases/{NODE}"), timeout=15, what="the node's Lease")
        first = lease["spec"]["renewTime"]
        wait_for(lambda: kube_apiserver.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"
                                            f"{NODE}")["spec"]["renewTime"] != first, timeout=10, what="renewed")
        kube_apiserver.kubectl("create", "-f", "-", input=yaml.safe_dump(POD))
        pod = wait_for(lambda: (p := kube_apiserver.get("/api/v1/namespaces/default/pods/bound"))["status"].get(
            "phase") == "Running" and p, timeout=30, what="the bound pod Running, its status patched by the node")
        assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}.get("Ready") == "True"
        kube_apiserver.kubectl("delete", "pod", "bound", "--wait=false")
