"""The sysfs view of the simulated machine, read by ghw (what NFD's topology updater and the
resource-topology-exporter read sysfs with), built through the Go module proxy from
tests/fixtures/sysfs-reader; skipped without Go or the proxy.

The daemon simulates 2 sockets x 4 cores x 2 threads on two NUMA nodes of 16Gi (one with 1Gi of
2Mi hugepages); ghw must see exactly that machine in STATE_DIR/host/sys, not the host's, and agree
with what pod-resources says of it (GetAllocatableResources' cpus and memory per NUMA node).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration import gotools
from tests.integration.daemon_helpers import running_daemon, wait_for
from tests.integration.test_devices_e2e import call
from tests.integration.test_topology_e2e import KUBELET
from tests.integration.test_topology_e2e import PROFILE as TOPOLOGY_PROFILE

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "tests" / "fixtures" / "sysfs-reader"
GIB = 1 << 30
PROFILE = {**TOPOLOGY_PROFILE, "numaNodes": [{"id": 0, "memory": "16Gi", "hugepages": {"hugepages-2Mi": "1Gi"}},
                                             {"id": 1, "memory": "16Gi"}]}


@pytest.fixture(scope="module")
def ghw_reader() -> Path:
    return gotools.build_cached(MODULE, "sysfs-reader")


def read(binary: Path, root: Path) -> list[dict[str, Any]]:
    out = subprocess.run([str(binary), str(root)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    nodes: list[dict[str, Any]] = json.loads(out.stdout)
    return nodes


def test_ghw_reads_the_simulated_machine(ghw_reader: Path, short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, {"nodeProfile": PROFILE}) as d:
        root = short_dir / "state" / "host" / "sys"
        wait_for(lambda: (root / "devices/system/node/online").exists(), what="sysfs view")
        nodes = read(ghw_reader, root)
        assert [n["id"] for n in nodes] == [0, 1]
        cpus = {n["id"]: sorted(c for core in n["cores"] for c in core["logicalProcessors"]) for n in nodes}
        assert cpus == {0: [0, 1, 2, 3, 8, 9, 10, 11], 1: [4, 5, 6, 7, 12, 13, 14, 15]}
        assert all(len(core["logicalProcessors"]) == 2 for n in nodes for core in n["cores"])
        assert [n["distances"] for n in nodes] == [[10, 21], [21, 10]]
        assert [(c["level"], sorted(c["logicalProcessors"])) for c in nodes[1]["caches"]] == [(3, cpus[1])]
        assert [n["usableBytes"] for n in nodes] == [16 * GIB, 16 * GIB]
        assert nodes[0]["hugePages"][str(2 << 20)] == 512 and nodes[1]["hugePages"][str(2 << 20)] == 0
        # pod-resources describes the same machine: its allocatable cpus fall in ghw's NUMA nodes
        allocatable = call(d, d.pod_resources, "v1.PodResourcesLister/GetAllocatableResources")
        assert {int(c) for c in allocatable["cpu_ids"]} <= set(cpus[0]) | set(cpus[1])
