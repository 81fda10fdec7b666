"""The node's addresses as kubectl shows them (issue 11): `--node-ip` becomes the INTERNAL-IP of the
daemon's node, of its full virtual nodes (same host) and of its scheduling-only virtual nodes, in
`kubectl get nodes -o wide`, with the Hostname address after it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integration.daemon_helpers import running_daemon, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

IP = "10.1.2.3"


def test_kubectl_wide_shows_the_node_ip(short_dir: Path) -> None:
    agent = {
        "nodes": [{"name": "full-0", "rootDir": str(short_dir / "full-0")}],
        "virtualNodes": [{"name": "virt-0", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "10"}}],
    }
    with running_daemon(short_dir, agent=agent, extra_args=("--node-ip", IP)) as d:
        def rows() -> dict[str, str]:
            lines = d.kubectl("get", "nodes", "-o", "wide").stdout.splitlines()
            header = lines[0].split()
            column = header.index("INTERNAL-IP")
            return {line.split()[0]: line.split()[column] for line in lines[1:]}

        got = wait_for(lambda: r if len(r := rows()) == 3 else None, what="three nodes")
        assert got == {"test-node": IP, "full-0": IP, "virt-0": IP}
        node = d.kubectl_json("get", "node", "test-node", "-o", "json")
        assert node["status"]["addresses"] == [{"type": "InternalIP", "address": IP},
                                               {"type": "Hostname", "address": "test-node"}]


def test_a_bad_node_ip_flag_is_refused(short_dir: Path) -> None:
    with (pytest.raises(AssertionError, match=r'--node-ip: Invalid value: "10\.1\.2": could not parse'),
          running_daemon(short_dir, extra_args=("--node-ip", "10.1.2"))):
        pass
