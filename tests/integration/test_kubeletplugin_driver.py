"""A DRA driver built on the upstream Go helper (k8s.io/dynamic-resource-allocation/kubeletplugin)
runs against the daemon end to end, with kubectl and the daemon's kubeconfig, exactly as it would
against a kubelet and an API server; the same test runs against nodeagent's own fake DRA driver.

tests/fixtures/kubeletplugin-driver is the project's own small driver on the helper: the test
starts it beside the daemon with the kubelet's plugin directories under the daemon's root dir
(plugins_registry, plugins) and the daemon's kubeconfig. It registers through plugins_registry
(advertising v1.DRAPlugin, v1beta1.DRAPlugin and v1alpha1.DRAResourceHealth), publishes its
ResourceSlice through the helper's ResourceSlice controller, GETs each claim through the API when
the node calls NodePrepareResources, writes a CDI spec per claim, and streams device health as a
file it polls says. The fake driver is spawned by the daemon (plugins:) and flipped with
`nodeagent device set-health`. The Go program is built once per session through the Go module
proxy (tests/integration/gotools.py); without `go` or the proxy the helper case is skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.integration.dra_helpers import KUBELET, POD, class_and_template

pytestmark = pytest.mark.integration

NODE = "test-node"
HELPER_DRIVER = "gpu.kubeletplugin.example.com"
FAKE_DRIVER = "gpu.example.com"


@dataclass
class Driver:
    """One DRA driver under test: its name, how it is run and how its health is flipped."""

    name: str
    cdi: Path
    agent: dict[str, Any]
    flip: Callable[[Daemon, str, str, str], None]  # (daemon, pool, device, Healthy|Unhealthy)
    log: Callable[[], str]
    start: Callable[[Daemon], Any]  # a context manager running the driver beside the daemon


def helper_driver(binary: Path, base: Path) -> Driver:
    cdi, health_file, log_path = base / "cdi", base / "health", base / "driver.log"

    @contextmanager
    def start(d: Daemon) -> Iterator[subprocess.Popen[bytes]]:
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [str(binary), "--kubeconfig", str(d.kubeconfig), "--node-name", NODE,
                 "--driver-name", HELPER_DRIVER,
                 "--kubelet-registrar-directory-path", str(d.root / "plugins_registry"),
                 "--kubelet-plugins-directory-path", str(d.root / "plugins"),
                 "--cdi-root", str(cdi), "--health-file", str(health_file), "--num-devices", "4"],
                stdout=log, stderr=subprocess.STDOUT,
            )
            try:
                yield proc
            finally:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def flip(d: Daemon, pool: str, device: str, health: str) -> None:
        tmp = health_file.with_suffix(".tmp")
        tmp.write_text(f"{pool}/{device}={health}\n")
        tmp.replace(health_file)

    return Driver(HELPER_DRIVER, cdi, {}, flip, lambda: log_path.read_text(errors="replace"), start)


def fake_driver(base: Path) -> Driver:
    cdi = base / "cdi"
    agent = {"plugins": [{
        "name": "fake-dra",
        "command": [sys.executable, "-m", "plugins.fake_dra_driver", "--config",
                    str(REPO / "configs/plugins/fake-dra.yaml"), "--cdi-dir", str(cdi)],
    }]}

    @contextmanager
    def start(d: Daemon) -> Iterator[None]:
        yield None  # spawned by the daemon

    def flip(d: Daemon, pool: str, device: str, health: str) -> None:
        d.cli("device", "set-health", f"{FAKE_DRIVER}/{pool}/{device}", health)

    return Driver(FAKE_DRIVER, cdi, agent, flip, lambda: (base / "daemon.log").read_text(errors="replace"), start)


def manifests(driver: str) -> str:
    """The driver's DeviceClass, the one-gpu template and the trainer pod using it."""
    return class_and_template(driver=driver) + "---" + POD


def resource_health(d: Daemon) -> dict[str, str]:
    """resourceID -> health from the pod's containerStatuses[].allocatedResourcesStatus, via kubectl."""
    pod = d.kubectl_json("get", "pod", "trainer")
    return {r["resourceID"]: r["health"] for cs in pod["status"].get("containerStatuses") or []
            for s in cs.get("allocatedResourcesStatus") or [] for r in s.get("resources") or []}


def logged(driver: Driver, message: str, claim: str) -> bool:
    """Whether the fixture driver logged MESSAGE for default/CLAIM (one klog structured line)."""
    return any(f'"{message}"' in line and f'claim="default/{claim}"' in line for line in driver.log().splitlines())


@pytest.fixture(params=["kubeletplugin-helper", "fake-driver"])
def driver(request: pytest.FixtureRequest, short_dir: Path) -> Driver:
    if request.param == "fake-driver":
        return fake_driver(short_dir)
    return helper_driver(request.getfixturevalue("kubeletplugin_driver"), short_dir)


def test_driver_end_to_end_with_kubectl(short_dir: Path, driver: Driver) -> None:
    with running_daemon(short_dir, KUBELET, driver.agent) as d, driver.start(d):
        def diagnose() -> str:
            return f"--- driver log ---\n{driver.log()[-3000:]}\n--- daemon log ---\n" \
                   f"{(short_dir / 'daemon.log').read_text(errors='replace')[-3000:]}"

        # Registered through plugins_registry; its ResourceSlice published through the API.
        def published() -> list[dict[str, Any]]:
            items: list[dict[str, Any]] = d.kubectl_json("get", "resourceslices")["items"]
            return [s for s in items if s["spec"]["driver"] == driver.name]

        try:
            (slice_,) = wait_for(published, timeout=30, what=f"{driver.name} ResourceSlice")
        except AssertionError as err:
            raise AssertionError(f"{err}\n{diagnose()}") from None
        assert (d.root / "plugins_registry" / f"{driver.name}-reg.sock").exists()
        assert (d.root / "plugins" / driver.name / "dra.sock").exists()
        assert slice_["spec"]["nodeName"] == NODE
        assert [o["kind"] for o in slice_["metadata"]["ownerReferences"]] == ["Node"]
        devices = slice_["spec"]["devices"]
        assert devices and all(dev["attributes"] and dev["capacity"]["memory"]["value"] for dev in devices)
        table = d.kubectl("get", "resourceslices").stdout
        assert driver.name in table and NODE in table

        # DeviceClass, ResourceClaimTemplate, pod: the scheduler allocates, the node prepares.
        d.kubectl("apply", "-f", "-", input=manifests(driver.name))
        try:
            pod = wait_for(lambda: (p := d.kubectl_json("get", "pod", "trainer"))["status"].get("phase") == "Running"
                           and p, timeout=30, what="pod Running after prepare")
        except AssertionError as err:
            raise AssertionError(f"{err}\n{diagnose()}") from None
        claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        claim = d.kubectl_json("get", "resourceclaim", claim_name)
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert result["driver"] == driver.name and result["request"] == "gpu"
        pool, device = result["pool"], result["device"]
        assert pod["metadata"]["uid"] in [r["uid"] for r in claim["status"]["reservedFor"]]
        if driver.name == HELPER_DRIVER:
            # the helper GETs the claim through the API before PrepareResourceClaims sees it
            assert logged(driver, "prepared", claim_name), driver.log()[-3000:]

        # One CDI spec, naming the device; pod-resources shows the claim's device and CDI ids.
        (spec_file,) = list(driver.cdi.glob("*.json"))
        spec = json.loads(spec_file.read_text())
        kind = spec["kind"]
        out = d.grpcurl(d.pod_resources, "v1.PodResourcesLister/Get",
                        data=json.dumps({"pod_name": "trainer", "pod_namespace": "default"}))
        assert out.returncode == 0, out.stderr
        entry = json.loads(out.stdout)["pod_resources"]
        (dyn,) = entry["containers"][0]["dynamic_resources"]
        assert dyn["claim_name"] == claim_name and dyn["claim_namespace"] == "default"
        (res,) = dyn["claim_resources"]
        assert (res["driver_name"], res["pool_name"], res["device_name"]) == (driver.name, pool, device)
        cdi_ids = [c["name"] for c in res["cdi_devices"]]
        assert cdi_ids and all(i.startswith(f"{kind}=") for i in cdi_ids)
        assert {i.split("=", 1)[1] for i in cdi_ids} <= {dev["name"] for dev in spec["devices"]}

        # A device flipped unhealthy (and back) shows in the pod's allocatedResourcesStatus.
        resource_id = cdi_ids[0]  # the kubelet reports health under the device's first CDI id
        assert wait_for(lambda: resource_health(d).get(resource_id) == "Healthy", timeout=10, what="Healthy")
        driver.flip(d, pool, device, "Unhealthy")
        wait_for(lambda: resource_health(d) == {resource_id: "Unhealthy"}, timeout=10, what="Unhealthy in status")
        driver.flip(d, pool, device, "Healthy")
        wait_for(lambda: resource_health(d) == {resource_id: "Healthy"}, timeout=10, what="Healthy again")

        # Deleting the pod unprepares the claim (its CDI spec goes) and the generated claim goes.
        started = time.monotonic()
        d.kubectl("delete", "pod", "trainer", "--wait=false")
        wait_for(lambda: not spec_file.exists(), timeout=15, what="CDI spec removed on unprepare")
        wait_for(lambda: d.kubectl("get", "resourceclaim", claim_name, check=False).returncode == 1,
                 timeout=15, what="generated claim deleted")
        assert time.monotonic() - started < 15
        if driver.name == HELPER_DRIVER:
            assert logged(driver, "unprepared", claim_name), driver.log()[-3000:]
