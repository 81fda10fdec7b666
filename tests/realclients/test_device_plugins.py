"""Third-party device plugins, built unchanged from their published modules, against a nodeagent daemon.

The upstream e2e sample device plugin (k8s.io/kubernetes/test/images/sample-device-plugin, the release
nodeagent follows) dials the kubelet at the hard-coded /var/lib/kubelet/device-plugins/kubelet.sock and
names its socket relative to that folder. It runs here unchanged in a private mount namespace (`unshare
--mount`, root only) where a tmpfs over /var/lib holds kubelet/device-plugins bind-mounted from the
daemon's (or the conformance suite's) folder, and a tmpfs over /tmp takes the fake device files its
Allocate creates; without root or mount namespaces the tests skip with the reason.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import is_root
from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.realclients.helpers import pod_resources, running

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SAMPLE_RESOURCE = "example.com/resource"

# Runs "$1" with the kubelet's device-plugins folder replaced by "$0" in a private mount namespace.
_IN_NAMESPACE = ("mount -t tmpfs nodeagent-rc /var/lib && mkdir -p /var/lib/kubelet/device-plugins"
                 " && mount --bind \"$0\" /var/lib/kubelet/device-plugins"
                 " && mount -t tmpfs nodeagent-rc-tmp /tmp && exec \"$1\"")


def in_private_mounts(device_plugins: str, binary: Path) -> list[str]:
    return ["unshare", "--mount", "--propagation", "private", "sh", "-ec", _IN_NAMESPACE, device_plugins, str(binary)]


@pytest.fixture(scope="module")
def mount_namespaces() -> None:
    """Skip unless this process may make a private mount namespace with its own mounts (root, unshare)."""
    if not is_root():
        pytest.skip("the sample device plugin hard-codes /var/lib/kubelet/device-plugins: running it against a "
                    "daemon's folder needs a private mount namespace, which needs root")
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed: no private mount namespace for the sample plugin")
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-ec",
                            "mount -t tmpfs nodeagent-probe /mnt"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount in a private mount namespace here: {probe.stderr.strip()}")


def node_allocatable(d: Daemon, resource: str) -> str | None:
    node = d.kubectl_json("get", "node", "test-node")
    value = node["status"].get("allocatable", {}).get(resource)
    return str(value) if value is not None else None


def test_sample_device_plugin_registers_and_allocates(sample_device_plugin: Path, mount_namespaces: None,
                                                      short_dir: Path) -> None:
    with running_daemon(short_dir) as d, running(in_private_mounts(str(d.root / "device-plugins"),
                                                                    sample_device_plugin),
                                                 short_dir / "plugin.log") as plugin:
        try:
            wait_for(lambda: node_allocatable(d, SAMPLE_RESOURCE) == "2", timeout=30,
                     what=f"{SAMPLE_RESOURCE}: 2 in the Node's allocatable")
        except AssertionError as err:
            raise AssertionError(f"{err}\n--- plugin log ---\n{plugin.log()}") from None
        assert "Deprecation file found" not in plugin.full_log()
        assert not (d.root / "device-plugins" / "DEPRECATION").exists()
        sockets = [p.name for p in (d.root / "device-plugins").iterdir() if p.name.startswith("dp.")]
        assert len(sockets) == 1, sockets
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sample"}, "spec": {"containers": [
            {"name": "c", "image": "pause", "resources": {"limits": {SAMPLE_RESOURCE: "2"}}}]}}
        d.kubectl("apply", "-f", "-", input=json.dumps(pod))
        try:
            wait_for(lambda: d.kubectl_json("get", "pod", "sample")["status"].get("phase") == "Running", timeout=30,
                     what="pod Running with both sample devices")
        except AssertionError as err:
            raise AssertionError(f"{err}\n{d.kubectl('get', 'pod', 'sample', '-o', 'yaml').stdout}\n"
                                 f"--- plugin log ---\n{plugin.log()}\n--- daemon log ---\n"
                                 f"{(d.base / 'daemon.log').read_text(errors='replace')[-3000:]}") from None
        (ctr,) = pod_resources(d, "sample")["containers"]
        # the kubelet lists one ContainerDevices per device (each with its own topology)
        assert {dev["resource_name"] for dev in ctr["devices"]} == {SAMPLE_RESOURCE}
        assert sorted(i for dev in ctr["devices"] for i in dev["device_ids"]) == ["Dev-1", "Dev-2"]
        assert plugin.proc.poll() is None, plugin.log()


def test_sample_device_plugin_passes_conformance(sample_device_plugin: Path, mount_namespaces: None,
                                                 short_dir: Path) -> None:
    """`nodeagent conformance device-plugin` against the sample plugin (no way to change its devices' health
    from outside, so the cases that need --set-health-command skip)."""
    from tests.integration.test_conformance import conformance, junit

    command = shlex.join(in_private_mounts("{device_plugins}", sample_device_plugin))
    report = short_dir / "dp.xml"
    out = conformance("device-plugin", "--plugin-command", command, "--junit", str(report), timeout=280)
    assert out.returncode == 0, out.stdout + out.stderr
    results = junit(report)
    assert results["registration/register"][0] == "PASS", results
    assert results["registration/after-kubelet-restart"][0] == "PASS", results
    assert results["allocate/one-response-per-request"][0] == "PASS", results
    assert all(o in ("PASS", "SKIP") for o, _ in results.values()), results
