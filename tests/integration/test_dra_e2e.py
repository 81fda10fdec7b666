"""DRA on the node, end to end over real sockets: the daemon spawns the fake DRA driver, which
registers through plugins_registry, publishes its ResourceSlice through the admin API, and takes
health switches through `nodeagent device set-health DRIVER/POOL/DEVICE`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for

pytestmark = pytest.mark.integration

KUBELET = {"kubeReserved": {"cpu": "500m", "memory": "1Gi"}}
DRIVER = "gpu.example.com"


def agent(base: Path) -> dict[str, object]:
    return {
        "plugins": [{
            "name": "fake-dra",
            "command": [sys.executable, "-m", "plugins.fake_dra_driver", "--config",
                        str(REPO / "configs/plugins/fake-dra.yaml"), "--cdi-dir", str(base / "cdi")],
        }],
    }


def slices(d: Daemon) -> list[dict[str, object]]:
    items: list[dict[str, object]] = d.get_json("resourceslices")["items"]
    return items


def test_driver_registers_and_publishes_its_slice(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        published = wait_for(lambda: slices(d), timeout=20, what="ResourceSlice published")
        spec = published[0]["spec"]
        assert isinstance(spec, dict)
        assert spec["driver"] == DRIVER and spec["nodeName"] == "test-node"
        assert len(spec["devices"]) == 8
        assert (d.root / "plugins_registry" / f"{DRIVER}-reg.sock").exists()
        # The daemon routes DRIVER/POOL/DEVICE to the registered driver's control socket.
        wait_for(lambda: d.cli("device", "set-health", f"{DRIVER}/pool-a/gpu-1", "Unhealthy",
                               check=False).returncode == 0, timeout=10, what="driver registered for set-health")
        out = d.cli("device", "set-health", f"{DRIVER}/pool-a/nope", "Unhealthy", check=False)
        assert out.returncode == 1
