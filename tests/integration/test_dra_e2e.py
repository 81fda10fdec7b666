"""DRA on the node, end to end over real sockets: the daemon spawns the fake DRA driver, which
registers through plugins_registry, publishes its ResourceSlice and reads claims through the
daemon's Kubernetes API (the kubeconfig in $NODEAGENT_KUBECONFIG), and takes health switches
through `nodeagent device set-health DRIVER/POOL/DEVICE`."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.integration.dra_helpers import CLAIMS, DRIVER, KUBELET, POD, SLICES, TRAINER, class_and_template

pytestmark = pytest.mark.integration



def agent(base: Path) -> dict[str, object]:
    return {
        "plugins": [{
            "name": "fake-dra",
            "command": [sys.executable, "-m", "plugins.fake_dra_driver", "--config",
                        str(REPO / "configs/plugins/fake-dra.yaml"), "--cdi-dir", str(base / "cdi")],
        }],
    }


def slices(d: Daemon) -> list[dict[str, object]]:
    items: list[dict[str, object]] = d.api_get(SLICES)["items"]
    return items


def test_driver_registers_and_publishes_its_slice(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        published = wait_for(lambda: slices(d), timeout=20, what="ResourceSlice published")
        spec = published[0]["spec"]
        assert isinstance(spec, dict)
        assert spec["driver"] == DRIVER and spec["nodeName"] == "test-node"
        assert len(spec["devices"]) == 8
        # written through the API as the upstream resourceslice controller writes it
        meta = published[0]["metadata"]
        assert isinstance(meta, dict)
        assert meta["name"].startswith(f"test-node-{DRIVER}-")
        node_uid = d.api_get("/api/v1/nodes/test-node")["metadata"]["uid"]
        assert meta["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": "test-node", "uid": node_uid, "controller": True}]
        assert (d.root / "plugins_registry" / f"{DRIVER}-reg.sock").exists()
        # The daemon routes DRIVER/POOL/DEVICE to the registered driver's control socket.
        wait_for(lambda: d.cli("device", "set-health", f"{DRIVER}/pool-a/gpu-1", "Unhealthy",
                               check=False).returncode == 0, timeout=10, what="driver registered for set-health")
        out = d.cli("device", "set-health", f"{DRIVER}/pool-a/nope", "Unhealthy", check=False)
        assert out.returncode == 1


def test_template_claim_allocated_prepared_healthy_and_released(short_dir: Path) -> None:
    cdi = short_dir / "cdi"
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        wait_for(lambda: slices(d), timeout=20, what="ResourceSlice published")
        d.kubectl("apply", "-f", "-", input=class_and_template(first_available=True))
        d.kubectl("apply", "-f", "-", input=POD)
        pod = wait_for(lambda: (p := d.api_get(TRAINER))["status"].get("phase") == "Running" and p,
                       timeout=15, what="pod Running after prepare")
        claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        claim = d.api_get(CLAIMS + claim_name)
        result = claim["status"]["allocation"]["devices"]["results"][0]
        assert result["request"] == "gpu/big"  # the first alternative that fits: an 80Gi H100
        assert result["driver"] == DRIVER and result["pool"] == "pool-a"
        device = result["device"]
        assert {"resource": "pods", "name": "trainer", "uid": pod["metadata"]["uid"]} in [
            {k: r.get(k) for k in ("resource", "name", "uid")} for r in claim["status"]["reservedFor"]]
        # The CDI spec the driver wrote is valid JSON naming the claim's device.
        specs = list(cdi.glob("*.json"))
        assert len(specs) == 1
        spec = json.loads(specs[0].read_text())
        assert spec["kind"] == "gpu.example.com/gpu" and spec["devices"]
        # pod-resources shows the claim with driver, pool, device and CDI ids.
        listed = json.loads(d.grpcurl(d.pod_resources, "v1.PodResourcesLister/List").stdout)
        (entry,) = [p for p in listed["pod_resources"] if p["name"] == "trainer"]
        dyn = entry["containers"][0]["dynamic_resources"][0]
        assert dyn["claim_name"] == claim_name
        res = dyn["claim_resources"][0]
        assert (res["driver_name"], res["pool_name"], res["device_name"]) == (DRIVER, "pool-a", device)
        assert res["cdi_devices"]
        described = d.cli("describe", "pod", "trainer").stdout
        assert "Resource Claims:" in described and f"{DRIVER}/pool-a/{device}" in described and "cdi=" in described
        # A device flipped unhealthy shows in pod status within a second.
        d.cli("device", "set-health", f"{DRIVER}/pool-a/{device}", "Unhealthy")
        started = time.monotonic()

        def health() -> object:
            statuses = d.api_get(TRAINER)["status"]["containerStatuses"][0]
            return {r["resourceID"]: r["health"] for s in statuses.get("allocatedResourcesStatus", [])
                    for r in s["resources"]}

        # reported under the device's first CDI id, as the kubelet's buildResourceHealth does
        rid = res["cdi_devices"][0]["name"]
        wait_for(lambda: health() == {rid: "Unhealthy"}, timeout=5, what="Unhealthy")
        assert time.monotonic() - started < 1.5
        # Deleting the pod unprepares the claim (CDI file gone) and the generated claim goes away.
        d.kubectl("delete", "pod", "trainer", "--wait=false")
        wait_for(lambda: not list(cdi.glob("*.json")), timeout=10, what="CDI spec removed")
        wait_for(lambda: d.kubectl("get", "resourceclaims", claim_name, check=False).returncode == 1,
                 timeout=10, what="generated claim deleted")
