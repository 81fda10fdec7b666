"""The conformance suites run from the command line against real plugins, JUnit read back by junitparser.

nodeagent's fake device plugin and fake DRA driver, and the Go driver on the upstream kubeletplugin
helper, must pass; the project's deliberately broken plugins (tests/fixtures/broken_plugins) must fail
with a message that says what broke. Each suite starts the plugin itself (--driver-command /
--plugin-command) in its own short work directory, with an embedded API server for the DRA driver.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml, Skipped

from tests.conftest import REPO, is_root

pytestmark = pytest.mark.integration

PY = sys.executable
CTL = f"{PY} -m tests.fixtures.broken_plugins.ctl"
FAKE_DRA = f"{PY} -m plugins.fake_dra_driver --config {REPO}/configs/plugins/fake-dra.yaml --cdi-dir {{cdi}}"
DRA_HEALTH = f"{CTL} '{{root}}/plugins/*/dra.sock.ctl' {{pool}}/{{device}} {{health}}"
FAKE_DP = f"{PY} -m plugins.fake_device_plugin --config {REPO}/configs/plugins/fake-gpu.yaml --watch-interval 0.2"
DP_HEALTH = f"{CTL} '{{device_plugins}}/*.ctl' {{device}} {{health}}"


def conformance(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "nodeagent.cli", "conformance", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def junit(path: Path) -> dict[str, tuple[str, str]]:
    """case name -> (PASS|FAIL|SKIP, message), read with a JUnit parser."""
    xml = JUnitXml.fromfile(str(path))
    out: dict[str, tuple[str, str]] = {}
    for suite in xml:
        for case in suite:
            outcome, message = "PASS", ""
            for r in case.result:
                if isinstance(r, Failure):
                    outcome, message = "FAIL", r.message or ""
                elif isinstance(r, Skipped):
                    outcome, message = "SKIP", r.message or ""
            out[case.name] = (outcome, message)
    return out


def test_fake_dra_driver_passes(short_dir: Path) -> None:
    report = short_dir / "dra.xml"
    out = conformance("dra-driver", "--driver-command", FAKE_DRA, "--set-health-command", DRA_HEALTH,
                      "--skip", "health/resend", "--junit", str(report))
    assert out.returncode == 0, out.stdout + out.stderr
    results = junit(report)
    assert results and all(o == "PASS" for o, _ in results.values()), results
    assert "prepare/idempotent" in results and "restart/prepared-claims-survive" in results
    assert "PASS" in out.stdout and "0 failed" in out.stdout


def test_kubeletplugin_helper_driver_passes(short_dir: Path, kubeletplugin_driver: Path) -> None:
    binary = kubeletplugin_driver  # the session's build (tests/integration/conftest.py)
    command = (f"{binary} --kubeconfig {{kubeconfig}} --node-name {{node}} --kubelet-registrar-directory-path "
               "{registry} --kubelet-plugins-directory-path {plugins} --cdi-root {cdi} --health-file {root}/health "
               "--num-devices 4 --health-resend-interval 1s")
    set_health = "sh -c 'echo {pool}/{device}={health} > {root}/h.tmp && mv {root}/h.tmp {root}/health'"
    report = short_dir / "go.xml"
    # slices/republished waits for the helper's 30 s SyncDelay: covered by the fake driver above.
    out = conformance("dra-driver", "--driver-command", command, "--set-health-command", set_health,
                      "--skip", "slices/republished", "--junit", str(report))
    assert out.returncode == 0, out.stdout + out.stderr
    results = junit(report)
    assert all(o == "PASS" for o, _ in results.values()), results


def test_non_idempotent_dra_driver_fails(short_dir: Path) -> None:
    command = (f"{PY} -m tests.fixtures.broken_plugins.non_idempotent_dra --config "
               f"{REPO}/configs/plugins/fake-dra.yaml --cdi-dir {{cdi}}")
    report = short_dir / "broken.xml"
    out = conformance("dra-driver", "--driver-command", command, "--run", "^prepare/", "--junit", str(report))
    assert out.returncode == 1, out.stdout + out.stderr
    results = junit(report)
    outcome, message = results["prepare/idempotent"]
    assert outcome == "FAIL" and "not idempotent" in message, results
    assert results["prepare/allocated-claim"][0] == "PASS"
    assert "FAILED: " in out.stdout and "prepare/idempotent" in out.stdout


SHARED_CDI = (f"{PY} -m tests.fixtures.broken_plugins.shared_cdi_dra --config {REPO}/configs/plugins/fake-dra.yaml "
              "--cdi-dir {cdi}")


def test_driver_lifetime_cdi_devices_are_not_the_claims(short_dir: Path) -> None:
    """A CDI device that outlives claims (dra-example-driver's `gpu=common`) stays defined after
    unprepare, as the kubelet expects; the claim's own device must go, and a driver that keeps
    it fails, named."""
    report = short_dir / "shared.xml"
    out = conformance("dra-driver", "--driver-command", SHARED_CDI, "--run", "^unprepare/releases$",
                      "--junit", str(report))
    assert out.returncode == 0, out.stdout + out.stderr
    assert junit(report)["unprepare/releases"][0] == "PASS"
    leaking = short_dir / "leak.xml"
    out = conformance("dra-driver", "--driver-command", SHARED_CDI + " --leak", "--run", "^unprepare/releases$",
                      "--junit", str(leaking))
    assert out.returncode == 1, out.stdout + out.stderr
    outcome, message = junit(leaking)["unprepare/releases"]
    assert outcome == "FAIL" and "still defined after unprepare" in message and "common" not in message, message


def test_fake_device_plugin_passes(short_dir: Path) -> None:
    report = short_dir / "dp.xml"
    out = conformance("device-plugin", "--plugin-command", FAKE_DP, "--set-health-command", DP_HEALTH,
                      "--junit", str(report))
    assert out.returncode == 0, out.stdout + out.stderr
    results = junit(report)
    assert results["list-and-watch/full-list-after-change"][0] == "PASS"
    assert results["prestart/when-required"][0] == "SKIP"  # the profile does not ask for it
    assert all(o in ("PASS", "SKIP") for o, _ in results.values()), results


def test_device_plugin_omitting_unhealthy_devices_fails(short_dir: Path) -> None:
    command = (f"{PY} -m tests.fixtures.broken_plugins.omit_unhealthy_device_plugin --config "
               f"{REPO}/configs/plugins/fake-gpu.yaml")
    report = short_dir / "dp.xml"
    out = conformance("device-plugin", "--plugin-command", command, "--set-health-command", DP_HEALTH,
                      "--junit", str(report))
    assert out.returncode == 1, out.stdout + out.stderr
    outcome, message = junit(report)["list-and-watch/full-list-after-change"]
    assert outcome == "FAIL" and "missing" in message and "full list" in message, message


@pytest.mark.parametrize(("args", "text"), [
    (["dra-driver", "--registration-socket", "x.sock"], "must be an absolute path"),
    (["dra-driver", "--driver-command", "true", "--run", "("], "not a regular expression"),
    (["device-plugin"], "give --socket"),
])
def test_usage_errors_exit_2(args: list[str], text: str) -> None:
    out = conformance(*args, timeout=60)
    assert out.returncode == 2 and text in out.stderr, out.stderr


@pytest.fixture
def lab_netns() -> Iterator[str]:
    """A named namespace with four veth pairs (both ends up); skipped without root or netns support."""
    if not is_root() or shutil.which("ip") is None:
        pytest.skip("the netdev driver needs root and iproute2 (ip netns) to move links between namespaces")
    name = f"naconf{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot create a network namespace: {made.stderr.strip()}")
    try:
        for i in range(4):
            subprocess.run(["ip", "-n", name, "link", "add", f"ca{i}", "type", "veth", "peer", "name", f"cb{i}"],
                           check=True)
            for end in (f"ca{i}", f"cb{i}"):
                subprocess.run(["ip", "-n", name, "link", "set", end, "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_netdev_driver_passes(short_dir: Path, lab_netns: str) -> None:
    profile = short_dir / "netdev.yaml"
    text = (REPO / "configs/plugins/netdev.yaml").read_text()
    text = text.replace("cdiDir: /var/run/cdi", f"cdiDir: {short_dir}/cdi").replace("include: []", 'include: ["ca*"]')
    profile.write_text(text)
    command = f"{PY} -m plugins.netdev_driver --config {profile} --netns {lab_netns}"
    # link operstate is the device's health: down is Unhealthy, up (peer up) Healthy
    set_health = (f"sh -c 'if [ {{health}} = Healthy ]; then s=up; else s=down; fi; "
                  f"ip -n {lab_netns} link set {{device}} $s'")
    report = short_dir / "netdev.xml"
    out = conformance("dra-driver", "--driver-command", command, "--cdi-dir", f"{short_dir}/cdi",
                      "--set-health-command", set_health, "--skip", "health/resend", "--junit", str(report))
    assert out.returncode == 0, out.stdout + out.stderr
    results = junit(report)
    assert all(o == "PASS" for o, _ in results.values()), results
