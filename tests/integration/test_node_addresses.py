"""The node's addresses as kubectl shows them (issue 11): `--node-ip` becomes the INTERNAL-IP of the
daemon's node, of its full virtual nodes (same host) and of its scheduling-only virtual nodes, in
`kubectl get nodes -o wide`, with the Hostname address after it."""

from __future__ import annotations

import re
import shutil
import socket
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
        # the node IP is not an address of this host: the kubelet endpoint listens on 127.0.0.1 only
        # (the kubelet binds 0.0.0.0, so a node IP never stops it either) and says so once for each node
        # with an endpoint (the full virtual node has its own; the scheduling-only one none)
        log = (short_dir / "daemon.log").read_text()
        for name, times in (("test-node", 1), ("full-0", 1), ("virt-0", 0)):
            said = f"kubelet endpoint of node {name} not listening on node IP {IP}: not an address of this host"
            assert log.count(said) == times, (name, log)
        port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass


def test_an_address_that_cannot_be_bound_is_a_start_error(short_dir: Path) -> None:
    # written explicitly, the address is bound as written: a start error that names the field
    with (pytest.raises(AssertionError, match=rf"KubeletConfiguration\.address: kubelet server address "
                                              rf"{re.escape(IP)}:0: cannot listen: Cannot assign requested address"),
          running_daemon(short_dir, kubelet={"address": IP, "port": 0})):
        pass


def test_a_bad_node_ip_flag_is_refused(short_dir: Path) -> None:
    with (pytest.raises(AssertionError, match=r'--node-ip: Invalid value: "10\.1\.2": could not parse'),
          running_daemon(short_dir, extra_args=("--node-ip", "10.1.2"))):
        pass
