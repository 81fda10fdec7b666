"""The real daemon wipes its node's ResourceSlices at start, as the kubelet does, through kubectl.

The 30 s wipe after a driver is lost is measured on a FakeClock in tests/unit/dra/test_slices.py
and tests/rpc/test_dra_slices_rolling.py; here only the start-up DeleteCollection, which needs
a restart of the whole daemon.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, running_daemon

pytestmark = pytest.mark.integration

DRIVER = "gpu.example.com"


def _slice(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                  "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0"}]}}


def slice_names(d: Daemon) -> list[str]:
    return sorted(o["metadata"]["name"] for o in d.kubectl_json("get", "resourceslices", "-o", "json")["items"])


def test_start_wipes_this_nodes_slices_only(short_dir: Path) -> None:
    with running_daemon(short_dir) as d:
        d.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([_slice("mine", "test-node"),
                                                                _slice("theirs", "other-node")]))
        # No driver of ours registered or left: nothing is wiped while the daemon runs.
        assert slice_names(d) == ["mine", "theirs"]
    with running_daemon(short_dir) as d:
        assert slice_names(d) == ["theirs"]
        log = (short_dir / "daemon.log").read_text()
        assert "deleted ResourceSlices fieldSelector=spec.nodeName=test-node count=1" in log
