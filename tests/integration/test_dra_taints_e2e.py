"""Device taints (KEP-5055) and binding conditions (KEP-5007) end to end, through kubectl against the
daemon: a device with a binding condition holds its pod Pending (claim allocated and reserved, pod
not bound) until the test sets the condition True with `kubectl patch --subresource=status`; a
NoExecute taint put on a running pod's device evicts the pod with a DeviceTaintManagerEviction
event; a NoExecute DeviceTaintRule (applied as v1beta2, served as v1, timeAdded stamped) evicts a
running pod and reports EvictionInProgress, and once it is deleted a new pod gets the device.
The devices live on a virtual node, so no driver has to prepare them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest

from tests.integration.daemon_helpers import Daemon, daemon_in_temp_dir, virtual_node_agent, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

NODE = "taint-node"
DOMAIN = "example.com"


def objects(device: str, extra: str = "") -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {device}}}
spec:
  driver: {device}.{DOMAIN}
  nodeName: {NODE}
  pool: {{name: {device}, generation: 1, resourceSliceCount: 1}}
  devices:
  - name: {device}
{extra}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {device}}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{device}.{DOMAIN}"'}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {device}}}
spec:
  devices:
    requests:
    - name: dev
      exactly: {{deviceClassName: {device}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {device}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {NODE}}}
  resourceClaims: [{{name: dev, resourceClaimName: {device}}}]
  containers:
  - name: c
    image: busybox
    resources: {{claims: [{{name: dev}}]}}
"""


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with daemon_in_temp_dir("na-taint-", agent=virtual_node_agent(NODE, {"bindingTimeout": "60s"})) as d:
        yield d


def _reserved(d: Daemon, name: str) -> bool:
    claim = d.kubectl_json("get", "resourceclaim", name)
    return bool((claim.get("status") or {}).get("reservedFor"))


def _node_of(d: Daemon, name: str) -> str:
    return str(d.kubectl_json("get", "pod", name)["spec"].get("nodeName") or "")


def test_binding_condition_holds_the_pod_until_set(daemon: Daemon) -> None:
    d = daemon
    extra = "    bindingConditions: [example.com/attached]\n    bindingFailureConditions: [example.com/failed]"
    d.kubectl("apply", "-f", "-", input=objects("fpga0", extra))
    wait_for(lambda: _reserved(d, "fpga0"), timeout=30, what="claim allocated and reserved")
    result = d.kubectl_json("get", "resourceclaim", "fpga0")["status"]["allocation"]["devices"]["results"][0]
    assert result["bindingConditions"] == ["example.com/attached"]
    assert _node_of(d, "fpga0") == ""
    patch = {"status": {"devices": [{"driver": f"fpga0.{DOMAIN}", "pool": "fpga0", "device": "fpga0", "conditions": [
        {"type": "example.com/attached", "status": "True", "reason": "Attached", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]}}
    d.kubectl("patch", "resourceclaim", "fpga0", "--subresource=status", "--type=merge", "-p", json.dumps(patch))
    wait_for(lambda: _node_of(d, "fpga0") == NODE, timeout=30, what="pod bound after the condition is True")


def test_no_execute_taint_evicts_the_running_pod(daemon: Daemon) -> None:
    d = daemon
    d.kubectl("apply", "-f", "-", input=objects("fpga1"))
    wait_for(lambda: _node_of(d, "fpga1") == NODE, timeout=30, what="pod bound")
    tainted = "    taints: [{key: example.com/broken, value: 'yes', effect: NoExecute}]"
    d.kubectl("apply", "-f", "-", input=objects("fpga1", tainted).split("---")[0])

    def gone() -> bool:
        out = d.kubectl("get", "pod", "fpga1", "--ignore-not-found", "-o", "name").stdout
        return not out.strip()

    wait_for(gone, timeout=30, what="pod evicted")
    events = d.kubectl_json("get", "events", "--field-selector", "reason=DeviceTaintManagerEviction")
    assert any(e["involvedObject"]["name"] == "fpga1" and e["message"] == "Marking for deletion"
               for e in events["items"])


RULE = f"""
apiVersion: resource.k8s.io/v1beta2
kind: DeviceTaintRule
metadata: {{name: drain-fpga2}}
spec:
  deviceSelector: {{driver: fpga2.{DOMAIN}, device: fpga2}}
  taint: {{key: example.com/maintenance, effect: NoExecute}}
"""


def test_device_taint_rule_evicts_and_deleting_it_frees_the_device(daemon: Daemon) -> None:
    d = daemon
    d.kubectl("apply", "-f", "-", input=objects("fpga2"))
    wait_for(lambda: _node_of(d, "fpga2") == NODE, timeout=30, what="pod bound")
    d.kubectl("apply", "-f", "-", input=RULE)
    rule = d.kubectl_json("get", "devicetaintrule", "drain-fpga2")
    assert rule["apiVersion"] == "resource.k8s.io/v1"
    assert rule["spec"]["taint"]["timeAdded"]  # stamped by the API server

    def gone() -> bool:
        return not d.kubectl("get", "pod", "fpga2", "--ignore-not-found", "-o", "name").stdout.strip()

    wait_for(gone, timeout=30, what="pod evicted by the DeviceTaintRule")

    def condition() -> dict[str, str]:
        conds = (d.kubectl_json("get", "devicetaintrule", "drain-fpga2").get("status") or {}).get("conditions")
        return {c["type"]: c["reason"] for c in conds or ()}

    wait_for(lambda: "EvictionInProgress" in condition(), timeout=30, what="rule status reported")
    assert "drain-fpga2" in d.kubectl("get", "devicetaintrules").stdout
    assert "deviceSelector" in d.kubectl("explain", "devicetaintrule.spec").stdout

    # a new pod for the same device stays pending while the rule is there ...
    d.kubectl("apply", "-f", "-", input=objects("fpga2").split("---", 3)[3].replace("name: fpga2}", "name: fpga2b}", 1))
    wait_for(lambda: not _reserved(d, "fpga2") and _node_of(d, "fpga2b") == "", timeout=30,
             what="claim freed, new pod pending")
    # ... and runs once the rule is deleted
    d.kubectl("delete", "devicetaintrule", "drain-fpga2")
    wait_for(lambda: _node_of(d, "fpga2b") == NODE, timeout=30, what="new pod bound after the rule is deleted")
