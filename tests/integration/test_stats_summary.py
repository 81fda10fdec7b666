"""/stats/summary of the real daemon: the node's fs.usedBytes is what its rootfs holds, not 0."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for

pytestmark = pytest.mark.integration

GiB = 1 << 30


def node_fs(d: Daemon) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/stats/summary", timeout=10) as resp:
        return dict(json.load(resp)["node"]["fs"])


def test_node_fs_used_bytes(short_dir: Path) -> None:
    """The test node's disk is the profile's 100Gi: it holds the node's own root and state
    directories (the state database at least) and the pods' simulated ephemeral-storage usage."""
    with running_daemon(short_dir) as d:
        fs = node_fs(d)
        assert fs["capacityBytes"] == 100 * GiB
        assert 0 < fs["usedBytes"] < GiB, fs
        writer = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "writer", "annotations": {"nodeagent.dev/usage-ephemeral-storage": "3Gi"}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        }
        d.kubectl("apply", "-f", "-", input=yaml.safe_dump(writer))
        wait_for(lambda: d.kubectl_json("get", "pod", "writer")["status"].get("phase") == "Running",
                 what="writer Running")
        after = wait_for(lambda: (f := node_fs(d))["usedBytes"] >= 3 * GiB and f, what="usedBytes with the pod")
        assert after["usedBytes"] < 4 * GiB, after
        assert after["availableBytes"] <= 97 * GiB
