"""Two DRA features of Kubernetes 1.37 end to end on the real daemon, over kubectl and the node's
sockets: an extended resource (example.com/gpu) served by a DeviceClass's devices through the
claim the scheduler makes (KEP-5004), and an allocation whose slice says the driver has no node
operations (KEP-5945: nothing to prepare, no driver on the node, the pod still runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.integration.dra_helpers import CLAIMS, DRIVER, KUBELET, SLICES
from tests.integration.test_dra_e2e import agent, slices

pytestmark = pytest.mark.integration

EXTENDED_CLASS = f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {DRIVER}}}
spec:
  extendedResourceName: example.com/gpu
  selectors:
  - cel: {{expression: 'device.driver == "{DRIVER}"'}}
"""

EXTENDED_POD = """
apiVersion: v1
kind: Pod
metadata: {name: ext}
spec:
  containers:
  - name: main
    image: pause
    resources:
      requests: {example.com/gpu: "2"}
      limits: {example.com/gpu: "2"}
  - name: side
    image: pause
"""
EXT = "/api/v1/namespaces/default/pods/ext"


def _dynamic(d: Daemon, pod: str) -> dict[str, Any]:
    listed = json.loads(d.grpcurl(d.pod_resources, "v1.PodResourcesLister/List").stdout)
    (entry,) = [p for p in listed["pod_resources"] if p["name"] == pod]
    return {c["name"]: c.get("dynamic_resources", []) for c in entry["containers"]}


def test_extended_resource_served_by_a_dra_claim(short_dir: Path) -> None:
    cdi = short_dir / "cdi"
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        wait_for(lambda: slices(d), timeout=20, what="ResourceSlice published")
        d.kubectl("apply", "-f", "-", input=EXTENDED_CLASS)
        d.kubectl("apply", "-f", "-", input=EXTENDED_POD)
        pod = wait_for(lambda: (p := d.api_get(EXT))["status"].get("phase") == "Running" and p,
                       timeout=15, what="extended-resource pod Running")
        status = pod["status"]["extendedResourceClaimStatus"]
        assert status["requestMappings"] == [
            {"containerName": "main", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}]
        name = status["resourceClaimName"]
        assert name.startswith("ext-extended-resources-")
        claim = d.api_get(CLAIMS + name)
        assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
        assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
        assert claim["spec"]["devices"]["requests"] == [{"name": "container-0-request-0", "exactly": {
            "deviceClassName": DRIVER, "allocationMode": "ExactCount", "count": 2}}]
        results = claim["status"]["allocation"]["devices"]["results"]
        assert len(results) == 2 and {r["request"] for r in results} == {"container-0-request-0"}
        assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod["metadata"]["uid"]]
        # the node prepared the claim: its CDI spec, and pod-resources only for the container that asked
        wait_for(lambda: list(cdi.glob("*.json")), timeout=5, what="CDI spec written")
        dyn = _dynamic(d, "ext")
        assert dyn["side"] == []
        (entry,) = dyn["main"]
        assert entry["claim_name"] == name
        assert sorted(r["device_name"] for r in entry["claim_resources"]) == sorted(r["device"] for r in results)
        assert all(r["cdi_devices"] for r in entry["claim_resources"])
        # the claim goes with the pod, unprepared first
        d.kubectl("delete", "pod", "ext", "--wait=false")
        wait_for(lambda: not list(cdi.glob("*.json")), timeout=10, what="CDI spec removed")
        wait_for(lambda: d.kubectl("get", "resourceclaims", name, check=False).returncode == 1,
                 timeout=10, what="extended resource claim deleted")


NOOP = "noop.example.com"
NOOP_OBJECTS = f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: test-node-noop}}
spec:
  driver: {NOOP}
  nodeName: test-node
  pool: {{name: central, generation: 1, resourceSliceCount: 1}}
  skipNodeOperations: ["*"]
  devices:
  - name: virtual-0
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: noop}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{NOOP}"'}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: virtual}}
spec:
  devices:
    requests:
    - name: dev
      exactly: {{deviceClassName: noop}}
---
apiVersion: v1
kind: Pod
metadata: {{name: plain}}
spec:
  resourceClaims:
  - {{name: dev, resourceClaimName: virtual}}
  containers:
  - name: main
    image: pause
    resources:
      claims: [{{name: dev}}]
"""
PLAIN = "/api/v1/namespaces/default/pods/plain"


def test_skipped_node_operations_need_no_driver(short_dir: Path) -> None:
    kubelet = {**KUBELET, "featureGates": {"DRAOptionalNodeOperations": True}}
    with running_daemon(short_dir, kubelet, {}) as d:
        d.kubectl("apply", "-f", "-", input=NOOP_OBJECTS)
        assert d.api_get(SLICES)["items"][0]["spec"]["skipNodeOperations"] == ["*"]
        wait_for(lambda: d.api_get(PLAIN)["status"].get("phase") == "Running", timeout=15,
                 what="pod Running with no driver registered")
        result = d.api_get(CLAIMS + "virtual")["status"]["allocation"]["devices"]["results"][0]
        assert result["skipNodeOperations"] == ["*"] and result["device"] == "virtual-0"
        (entry,) = _dynamic(d, "plain")["main"]
        (device,) = entry["claim_resources"]
        assert device["device_name"] == "virtual-0" and not device.get("cdi_devices")
        d.kubectl("delete", "pod", "plain", "--timeout=20s")  # no NodeUnprepareResources to wait for
        wait_for(lambda: "reservedFor" not in d.api_get(CLAIMS + "virtual")["status"], timeout=10,
                 what="claim released")


def test_skipped_node_operations_with_the_gate_off_keep_the_devices_unallocatable(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, {}) as d:
        d.kubectl("apply", "-f", "-", input=NOOP_OBJECTS)
        # the API server drops the field of a disabled gate, so the slice asks for every operation
        assert "skipNodeOperations" not in d.api_get(SLICES)["items"][0]["spec"]
        wait_for(lambda: "not registered" in json.dumps(d.api_get(
            "/api/v1/namespaces/default/events")["items"]), timeout=15, what="prepare needs the driver")
        assert d.api_get(PLAIN)["status"].get("phase") == "Pending"
