"""DRA on the node when things go wrong, end to end: the real daemon as a subprocess and the fake
DRA driver either spawned by it (restart: true) or started by the test when it must control when
the driver comes and goes. Faults come from the driver's profile or its control socket.

Covered: a pod waiting for a driver that is not registered yet, prepare failing then succeeding,
the driver crashing during prepare, the daemon SIGKILLed while a prepare is in flight, and a
health stream going silent until the device times out to Unknown.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from plugins.dra_kit import control
from tests.conftest import REPO
from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.integration.dra_helpers import CLAIMS, DRIVER, KUBELET, POD, SLICES, TRAINER, class_and_template

pytestmark = pytest.mark.integration

CLASS_AND_TEMPLATE = class_and_template()


# --- helpers ----------------------------------------------------------------------------------


def profile(base: Path, name: str, **overrides: Any) -> Path:
    """The stock fake-dra profile with top-level overrides, written into the test's folder."""
    doc = yaml.safe_load((REPO / "configs/plugins/fake-dra.yaml").read_text())
    doc.update(overrides)
    path = base / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def spawned(base: Path, prof: Path) -> dict[str, object]:
    """NodeAgentConfiguration fields: the daemon spawns (and restarts) the driver."""
    return {"plugins": [{
        "name": "fake-dra", "restart": True,
        "command": [sys.executable, "-m", "plugins.fake_dra_driver", "--config", str(prof),
                    "--cdi-dir", str(base / "cdi")],
    }]}


@contextmanager
def own_driver(base: Path, prof: Path, log_name: str = "driver") -> Iterator[subprocess.Popen[bytes]]:
    """The fake driver started by the test on the daemon's paths under `base` (running_daemon's
    layout), an API client through the daemon's kubeconfig. Not the daemon's child, so it may
    start first (it waits for the kubeconfig) and it outlives a daemon SIGKILL (it follows the
    kubeconfig the next daemon writes, on another port)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NODEAGENT_")}
    env["PYTHONPATH"] = str(REPO)
    log = open(base / f"{log_name}.log", "ab")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(
        [sys.executable, "-m", "plugins.fake_dra_driver", "--config", str(prof),
         "--root-dir", str(base / "root"), "--kubeconfig", str(base / "state" / "kubeconfig"),
         "--node-name", "test-node", "--cdi-dir", str(base / "cdi")],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(REPO),
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


def ctl(base: Path) -> Path:
    return base / "root" / "plugins" / DRIVER / "dra.sock.ctl"


def reg_sock(d: Daemon) -> Path:
    return d.root / "plugins_registry" / f"{DRIVER}-reg.sock"


def set_faults(base: Path, faults: Mapping[str, object]) -> None:
    reply = wait_for(lambda: control.request(ctl(base), {"set_faults": dict(faults)}), timeout=10,
                     what="driver control socket")
    assert reply["ok"], reply


def slice_published(d: Daemon) -> bool:
    return bool(d.api_get(SLICES)["items"])


def registered(d: Daemon) -> bool:
    """The daemon routes DRIVER/POOL/DEVICE to the driver only once it registered it."""
    return d.cli("device", "set-health", f"{DRIVER}/pool-a/gpu-0", "Healthy", check=False).returncode == 0


def pod(d: Daemon) -> dict[str, Any]:
    p: dict[str, Any] = d.api_get(TRAINER)
    return p


def running(d: Daemon) -> dict[str, Any] | None:
    p = pod(d)
    return p if p["status"].get("phase") == "Running" else None


def pending_with(d: Daemon, text: str) -> dict[str, Any] | None:
    p = pod(d)
    status = p["status"]
    return p if status.get("phase") == "Pending" and text in status.get("message", "") else None


def claim_of(p: Mapping[str, Any]) -> dict[str, Any]:
    (status,) = p["status"]["resourceClaimStatuses"]
    return {"name": status["resourceClaimName"]}


def reserved(d: Daemon) -> bool:
    p = pod(d)
    statuses = p["status"].get("resourceClaimStatuses") or []
    if not statuses or not statuses[0].get("resourceClaimName"):
        return False
    claim = d.api_get(CLAIMS + statuses[0]["resourceClaimName"])
    return any(r.get("uid") == p["metadata"]["uid"] for r in claim.get("status", {}).get("reservedFor", []))


def cdi_specs(d: Daemon) -> list[Path]:
    return sorted((d.base / "cdi").glob("*.json"))


def health(d: Daemon) -> dict[str, str]:
    statuses = pod(d)["status"]["containerStatuses"][0]
    return {r["resourceID"]: r["health"] for s in statuses.get("allocatedResourcesStatus", [])
            for r in s["resources"]}


def apply_pod(d: Daemon) -> None:
    d.kubectl("apply", "-f", "-", input=CLASS_AND_TEMPLATE)
    d.kubectl("apply", "-f", "-", input=POD)


# --- (a) driver not registered yet ------------------------------------------------------------


def test_pod_waits_for_its_driver_then_runs_when_it_registers(short_dir: Path) -> None:
    prof = profile(short_dir, "fake-dra")
    with running_daemon(short_dir, KUBELET) as d:
        # A first run of the driver publishes its slice (it stays when the driver stops), so the
        # scheduler can allocate the claim while the driver is not registered.
        with own_driver(d.base, prof) as first:
            wait_for(lambda: slice_published(d) and registered(d), timeout=20, what="driver registered")
            first.terminate()
            assert first.wait(10) == 0
        wait_for(lambda: not reg_sock(d).exists() and not registered(d), timeout=10, what="driver unregistered")
        apply_pod(d)
        waiting = wait_for(lambda: pending_with(d, f"DRA driver {DRIVER} is not registered"), timeout=15,
                           what="pod Pending naming the driver")
        assert reserved(d)  # allocated and reserved: only the driver is missing
        assert not cdi_specs(d)
        events = d.kubectl("get", "events").stdout
        assert "FailedPrepareDynamicResources" in events and DRIVER in events
        with own_driver(d.base, prof, "driver-2"):
            p = wait_for(lambda: running(d), timeout=15, what="pod Running once the driver registered")
            assert p["metadata"]["uid"] == waiting["metadata"]["uid"]
            assert len(cdi_specs(d)) == 1


# --- (b) prepare fails, then succeeds ----------------------------------------------------------


@pytest.mark.parametrize("mode", ["claim", "rpc"])
def test_prepare_fails_twice_then_succeeds(short_dir: Path, mode: str) -> None:
    prof = profile(short_dir, "fake-dra", faults={"prepareFailures": 2, "prepareFailureMode": mode,
                                                  "prepareError": "injected GPU reset"})
    with running_daemon(short_dir, KUBELET, spawned(short_dir, prof)) as d:
        wait_for(lambda: slice_published(d) and registered(d), timeout=20, what="driver registered")
        apply_pod(d)
        waiting = wait_for(lambda: pending_with(d, "injected GPU reset"), timeout=10,
                           what="pod Pending with the prepare failure")
        message = waiting["status"]["message"]
        if mode == "claim":
            assert f"NodePrepareResources failed for ResourceClaim {claim_of(waiting)['name']}" in message
        else:
            assert f"NodePrepareResources: {DRIVER}" in message
        wait_for(lambda: running(d), timeout=15, what="pod Running after the failures")
        assert len(cdi_specs(d)) == 1
        faults = control.request(ctl(d.base), {"faults": {}})["faults"]
        assert faults["prepareFailures"] == 0  # both injected failures were consumed


# --- (c) driver crashes during prepare ---------------------------------------------------------


def test_driver_crash_during_prepare_is_restarted_and_pod_runs(short_dir: Path) -> None:
    prof = profile(short_dir, "fake-dra")
    with running_daemon(short_dir, KUBELET, spawned(short_dir, prof)) as d:
        wait_for(lambda: slice_published(d) and registered(d), timeout=20, what="driver registered")
        # Switched at runtime: the supervisor's restart runs the profile again, without the fault.
        set_faults(d.base, {"crashOnPrepare": True})
        apply_pod(d)
        wait_for(lambda: "code=70" in (d.base / "daemon.log").read_text(), timeout=15,
                 what="driver crashed on prepare (exit 70)")
        p = wait_for(lambda: running(d), timeout=20, what="pod Running after the driver restart")
        specs = cdi_specs(d)
        assert len(specs) == 1
        claim = d.api_get(CLAIMS + claim_of(p)["name"])
        assert claim["metadata"]["uid"] in specs[0].name
        assert control.request(ctl(d.base), {"prepared": {}})["claims"] == [claim["metadata"]["uid"]]


# --- (d) daemon SIGKILLed while a prepare is in flight ------------------------------------------


def test_daemon_sigkilled_mid_prepare_prepares_again_once(short_dir: Path) -> None:
    prof = profile(short_dir, "fake-dra", faults={"prepareDelaySeconds": 3})
    with own_driver(short_dir, prof) as driver:
        with running_daemon(short_dir, KUBELET) as d:
            wait_for(lambda: slice_published(d) and registered(d), timeout=20, what="driver registered")
            d.kubectl("apply", "-f", "-", input=CLASS_AND_TEMPLATE)
            d.kubectl("apply", "-f", "-", input=POD)
            # Admitted: the DRA manager calls NodePrepareResources now, and the driver sits on it for 3 s.
            admitted = wait_for(
                lambda: re.search(r"pod admitted pod=default/trainer uid=(\S+)", (d.base / "daemon.log").read_text()),
                timeout=10, what="pod admitted")
            uid = admitted.group(1)
            time.sleep(1.0)
            assert d.stop(signal.SIGKILL) == -signal.SIGKILL
        assert driver.poll() is None  # the driver outlives the daemon
        set_faults(short_dir, {"prepareDelaySeconds": 0})
        # A new daemon on the same root and state: the pod comes back Pending with its claim in the
        # claim cache, and the prepare is simply repeated (the driver's prepare is idempotent).
        with running_daemon(short_dir, KUBELET) as d:
            p = wait_for(lambda: running(d), timeout=20, what="pod Running after the daemon restart")
            assert p["metadata"]["uid"] == uid
            log = (d.base / "daemon.log").read_text()
            # The claim was recorded before the driver call, the pod's devices were not: prepared again.
            assert "dra claim cache loaded claims=1 pods=0" in log
            assert f"dra claims prepared pod=default/trainer uid={uid}" in log
            claim_uid = d.api_get(CLAIMS + claim_of(p)["name"])["metadata"]["uid"]
            specs = cdi_specs(d)
            assert [s.name for s in specs] == [f"{DRIVER}-{claim_uid}.json"]
            assert control.request(ctl(short_dir), {"prepared": {}})["claims"] == [claim_uid]
            listed = json.loads(d.grpcurl(d.pod_resources, "v1.PodResourcesLister/List").stdout)
            (entry,) = [x for x in listed["pod_resources"] if x["name"] == "trainer"]
            assert len(entry["containers"][0]["dynamic_resources"]) == 1


# --- (e) health stream silent -> Unknown --------------------------------------------------------


def test_silent_health_stream_times_out_to_unknown(short_dir: Path) -> None:
    prof = profile(short_dir, "fake-dra", healthCheckTimeoutSeconds=2, healthResendSeconds=0.5)
    with running_daemon(short_dir, KUBELET, spawned(short_dir, prof)) as d:
        wait_for(lambda: slice_published(d) and registered(d), timeout=20, what="driver registered")
        apply_pod(d)
        p = wait_for(lambda: running(d), timeout=15, what="pod Running")
        claim = d.api_get(CLAIMS + claim_of(p)["name"])
        result = claim["status"]["allocation"]["devices"]["results"][0]
        listed = json.loads(d.grpcurl(d.pod_resources, "v1.PodResourcesLister/List").stdout)["pod_resources"]
        (res,) = [r for p in listed for c in p["containers"] for dyn in c.get("dynamic_resources", [])
                  for r in dyn["claim_resources"] if r["device_name"] == result["device"]]
        rid = res["cdi_devices"][0]["name"]  # the kubelet reports health under the first CDI id
        wait_for(lambda: health(d) == {rid: "Healthy"}, timeout=5, what="device Healthy")
        # Resends every 0.5 s keep the device Healthy well past its 2 s timeout ...
        time.sleep(2.5)
        assert health(d) == {rid: "Healthy"}
        # ... until the stream goes silent.
        set_faults(d.base, {"pauseHealth": True})
        started = time.monotonic()
        wait_for(lambda: health(d) == {rid: "Unknown"}, timeout=8, what="device Unknown after the timeout")
        assert time.monotonic() - started >= 1.0
        describe = d.cli("describe", "pod", "trainer").stdout
        assert re.search(rf"{re.escape(rid)}:\s+Unknown", describe), describe
        # The stream speaking again brings it back.
        set_faults(d.base, {"pauseHealth": False})
        wait_for(lambda: health(d) == {rid: "Healthy"}, timeout=5, what="device Healthy again")
