"""Smoke tests of the real kube-apiserver tier: the fixture's cluster works for what the node-mode tests need.

kubectl lists the namespaces an upstream API server makes at start, creates DRA objects in
resource.k8s.io/v1 (upstream validation answering, so nodeagent's own API server can be held to the
same texts) and a pod (admitted with its service-account token volume, as a node will get it);
a node's credentials register its own Node and nothing else (Node authorizer + NodeRestriction);
nodeagent's Python DRA driver kit publishes its ResourceSlices with those node credentials; and
the API server stopped and started again over the same etcd still has everything. Opt-in:
NODEAGENT_KUBE_APISERVER=1 (see tests/integration/kubeapiserver.py).
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import time
from collections.abc import Callable
from typing import Any

import pytest

from plugins.dra_kit.kube import KubeAccess
from plugins.dra_kit.publisher import SlicePublisher
from tests.integration.kubeapiserver import KubeAPIServer, kubernetes_version
from tests.waiting import eventually_blocking

pytestmark = [pytest.mark.integration, pytest.mark.kube_apiserver]

DRIVER = "gpu.smoke.example.com"


def test_kubectl_lists_the_namespaces_an_apiserver_makes(kube_apiserver: KubeAPIServer) -> None:
    names = kube_apiserver.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert {"namespace/default", "namespace/kube-system", "namespace/kube-public",
            "namespace/kube-node-lease"} <= set(names)
    version = json.loads(kube_apiserver.kubectl("version", "-o", "json").stdout)["serverVersion"]
    assert version["gitVersion"] == kubernetes_version()
    groups = kube_apiserver.get("/apis/resource.k8s.io")
    assert "v1" in [v["version"] for v in groups["versions"]]


def test_dra_objects_in_resource_v1(kube_apiserver: KubeAPIServer) -> None:
    kube_apiserver.kubectl("apply", "-f", "-", input=textwrap.dedent(f"""\
        apiVersion: resource.k8s.io/v1
        kind: DeviceClass
        metadata: {{name: smoke-gpu}}
        spec:
          selectors:
          - cel: {{expression: 'device.driver == "{DRIVER}"'}}
        ---
        apiVersion: resource.k8s.io/v1
        kind: ResourceSlice
        metadata: {{name: smoke-slice}}
        spec:
          driver: {DRIVER}
          allNodes: true
          pool: {{name: pool-a, generation: 1, resourceSliceCount: 1}}
          devices:
          - name: gpu-0
            attributes:
              model: {{string: a100}}
            capacity:
              memory: {{value: 40Gi}}
        """))
    slice_ = json.loads(kube_apiserver.kubectl("get", "resourceslice", "smoke-slice", "-o", "json").stdout)
    assert slice_["apiVersion"] == "resource.k8s.io/v1"
    assert slice_["spec"]["devices"][0]["capacity"]["memory"]["value"] == "40Gi"
    assert kube_apiserver.kubectl("get", "deviceclass", "smoke-gpu", "-o", "name").stdout.strip() == \
        "deviceclass.resource.k8s.io/smoke-gpu"
    # upstream validation answers: exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection
    bad = kube_apiserver.kubectl("apply", "-f", "-", check=False, input=textwrap.dedent(f"""\
        apiVersion: resource.k8s.io/v1
        kind: ResourceSlice
        metadata: {{name: smoke-bad}}
        spec:
          driver: {DRIVER}
          nodeName: n1
          allNodes: true
          pool: {{name: pool-b, generation: 1, resourceSliceCount: 1}}
        """))
    assert bad.returncode != 0
    assert bad.stderr.strip() == (
        'The ResourceSlice "smoke-bad" is invalid: spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of '
        "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set")


def test_pod_is_admitted_with_its_service_account_volume(kube_apiserver: KubeAPIServer) -> None:
    kube_apiserver.kubectl("apply", "-f", "-", input=textwrap.dedent("""\
        apiVersion: v1
        kind: Pod
        metadata: {name: smoke-pod}
        spec:
          containers:
          - {name: c, image: registry.k8s.io/pause:3.10}
        """))
    pod = json.loads(kube_apiserver.kubectl("get", "pod", "smoke-pod", "-o", "json").stdout)
    assert pod["status"]["phase"] == "Pending"  # no node to run on
    assert pod["spec"]["serviceAccountName"] == "default"
    projected = [v for v in pod["spec"]["volumes"] if v["name"].startswith("kube-api-access-")]
    assert projected and projected[0]["projected"]["sources"][1]["configMap"]["name"] == "kube-root-ca.crt"


def test_node_credentials_register_their_own_node_only(kube_apiserver: KubeAPIServer) -> None:
    node_cfg = kube_apiserver.node_kubeconfig("smoke-node")
    node = textwrap.dedent("""\
        apiVersion: v1
        kind: Node
        metadata: {{name: {name}}}
        """)
    kube_apiserver.kubectl("create", "-f", "-", input=node.format(name="smoke-node"), kubeconfig=node_cfg)
    other = kube_apiserver.kubectl("create", "-f", "-", input=node.format(name="someone-else"),
                                   kubeconfig=node_cfg, check=False)
    assert other.returncode != 0
    assert 'nodes "someone-else" is forbidden' in other.stderr
    got = json.loads(kube_apiserver.kubectl("get", "node", "smoke-node", "-o", "json").stdout)
    assert got["metadata"]["name"] == "smoke-node"


async def test_dra_kit_publishes_slices_with_node_credentials(kube_apiserver: KubeAPIServer) -> None:
    node = "publisher-node"
    cfg = kube_apiserver.node_kubeconfig(node)
    kube_apiserver.kubectl("create", "-f", "-", kubeconfig=cfg,
                           input=f"apiVersion: v1\nkind: Node\nmetadata: {{name: {node}}}\n")
    api = KubeAccess(cfg, timeout=10)
    devices = [{"name": "gpu-0"}, {"name": "gpu-1"}]
    pub = SlicePublisher(api, DRIVER, {"pool-a": devices}, node_name=node, interval=0.2)
    pub.start()
    try:
        await asyncio.wait_for(pub.published.wait(), 30)
        listed = json.loads(kube_apiserver.kubectl(
            "get", "resourceslices", "--field-selector", f"spec.nodeName={node}", "-o", "json").stdout)["items"]
        assert len(listed) == 1
        (obj,) = listed
        assert obj["spec"]["devices"] == devices
        assert obj["spec"]["pool"] == {"name": "pool-a", "generation": 1, "resourceSliceCount": 1}
        owner = obj["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"]) == ("Node", node)
        # a changed device list is published with the generation bumped, through the real API's update
        await pub.set_pools({"pool-a": devices[:1]})
        for _ in range(150):
            got = kube_apiserver.get(f"/apis/resource.k8s.io/v1/resourceslices/{obj['metadata']['name']}")
            if got["spec"]["pool"]["generation"] == 2:
                break
            await asyncio.sleep(0.1)
        assert got["spec"]["devices"] == devices[:1] and got["spec"]["pool"]["generation"] == 2
    finally:
        await pub.stop()
        await api.close()


def test_apiserver_restart_keeps_objects_in_etcd(kube_apiserver: KubeAPIServer) -> None:
    kube_apiserver.kubectl("create", "configmap", "survives-restart", "--from-literal=k=v")
    kube_apiserver.stop_apiserver()
    assert kube_apiserver.kubectl("get", "configmap", "survives-restart", check=False,
                                  timeout=20).returncode != 0
    kube_apiserver.start_apiserver()
    assert kube_apiserver.kubectl("get", "configmap", "survives-restart", "-o",
                                  "jsonpath={.data.k}").stdout == "v"
    assert kube_apiserver.startup_seconds > 0


def _wait(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    return eventually_blocking(check, timeout=timeout, what=what, interval=0.2)


def test_scheduler_allocates_a_claim_from_a_template_and_binds_the_pod(kube_apiserver: KubeAPIServer) -> None:
    """The whole upstream control plane a node-mode test meets: the node (here kubectl with the node's
    credentials) registers and reports Ready, the node lifecycle controller lifts the not-ready taint,
    the resourceclaim controller makes the pod's claim, the scheduler allocates a device and binds."""
    node, driver = "sched-node", "gpu.sched.example.com"
    cfg = kube_apiserver.node_kubeconfig(node)
    kube_apiserver.kubectl("create", "-f", "-", kubeconfig=cfg,
                           input=f"apiVersion: v1\nkind: Node\nmetadata: {{name: {node}}}\n")
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    status = {"status": {"capacity": resources, "allocatable": resources, "conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test node",
         "lastHeartbeatTime": now, "lastTransitionTime": now}]}}
    # (kubectl patch --subresource=status GETs nodes/status first, which a node may not; a kubelet only patches)
    kube_apiserver.merge_patch(f"/api/v1/nodes/{node}/status", status)
    kube_apiserver.kubectl("apply", "-f", "-", input=textwrap.dedent(f"""\
        apiVersion: resource.k8s.io/v1
        kind: DeviceClass
        metadata: {{name: sched-gpu}}
        spec:
          selectors:
          - cel: {{expression: 'device.driver == "{driver}"'}}
        ---
        apiVersion: resource.k8s.io/v1
        kind: ResourceSlice
        metadata: {{name: sched-slice}}
        spec:
          driver: {driver}
          nodeName: {node}
          pool: {{name: {node}, generation: 1, resourceSliceCount: 1}}
          devices:
          - {{name: gpu-0}}
        ---
        apiVersion: resource.k8s.io/v1
        kind: ResourceClaimTemplate
        metadata: {{name: one-gpu}}
        spec:
          spec:
            devices:
              requests:
              - name: gpu
                exactly: {{deviceClassName: sched-gpu}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {{name: sched-pod}}
        spec:
          resourceClaims:
          - {{name: gpu, resourceClaimTemplateName: one-gpu}}
          containers:
          - name: c
            image: registry.k8s.io/pause:3.10
            resources:
              claims: [{{name: gpu}}]
        """))
    pod = _wait(lambda: (p := kube_apiserver.get("/api/v1/namespaces/default/pods/sched-pod"))["spec"].get(
        "nodeName") and p, "sched-pod to be bound", timeout=40)
    assert pod["spec"]["nodeName"] == node
    (claim_status,) = pod["status"]["resourceClaimStatuses"]
    claim = kube_apiserver.get(f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/"
                               f"{claim_status['resourceClaimName']}")
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert (result["driver"], result["pool"], result["device"]) == (driver, node, "gpu-0")
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["sched-pod"]
    # the node's own credentials may read the claim of a pod bound to it (the Node authorizer's graph)
    got = kube_apiserver.kubectl("get", "resourceclaim", claim_status["resourceClaimName"], "-o", "name",
                                 kubeconfig=cfg)
    assert got.stdout.strip().startswith("resourceclaim.resource.k8s.io/sched-pod-gpu-")
