"""The API server bound to a non-loopback address, and to every address, in a network namespace of its own.

An interface (one end of a veth pair) holds 192.0.2.10 (TEST-NET-1); the daemon (control plane alone) binds it: the
serving certificate names it, so kubectl verifies the server at that address; bound again to
0.0.0.0 the certificate is re-issued with every address of the host (the veth's included), the
kubeconfig points at loopback, and the start log warns about the wildcard bind. Root only (netns).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from tests.integration.daemon_helpers import free_port, wait_for, write_config

pytestmark = [pytest.mark.linux,
              pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
              pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 (ip) not installed"),
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")]

ADDRESS = "192.0.2.10"


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


@pytest.fixture
def netns() -> Iterator[str]:
    name = f"na-bind-{uuid.uuid4().hex[:8]}"
    try:
        ip("netns", "add", name)
    except subprocess.CalledProcessError as err:
        pytest.skip(f"cannot create a network namespace: {err.stderr.decode().strip()}")
    try:
        ip("-n", name, "link", "set", "lo", "up")
        # a veth pair (the dummy module is not always there), both ends in the namespace
        ip("-n", name, "link", "add", "d0", "type", "veth", "peer", "name", "d1")
        ip("-n", name, "addr", "add", f"{ADDRESS}/24", "dev", "d0")
        ip("-n", name, "link", "set", "d0", "up")
        ip("-n", name, "link", "set", "d1", "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True, timeout=20)


def sans(base: Path) -> set[str]:
    cert = x509.load_pem_x509_certificate((base / "state" / "apiserver" / "apiserver.crt").read_bytes())
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {*ext.get_values_for_type(x509.DNSName), *(str(a) for a in ext.get_values_for_type(x509.IPAddress))}


def run_bound(base: Path, netns: str, bind: str) -> tuple[subprocess.Popen[bytes], str]:
    """The daemon in `netns` bound to `bind` (its output in daemon.log), and the server its kubeconfig names."""
    cfg = write_config(base, {}, {"node": {"enabled": False},
                                  "controlPlane": {"apiServer": {"bindAddress": bind}}}, free_port())
    kubeconfig = base / "state" / "kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    with open(base / "daemon.log", "wb") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, "-m", "nodeagent.cli", "run",
                                 "--config", str(cfg)], stdout=log, stderr=subprocess.STDOUT)
    wait_for(lambda: kubeconfig.exists() or proc.poll() is not None, timeout=60, what="kubeconfig")
    if proc.poll() is not None:
        raise AssertionError((base / "daemon.log").read_text())
    return proc, str(yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"])


def kubectl(netns: str, base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("kubectl")
    assert tool is not None
    return subprocess.run(["ip", "netns", "exec", netns, tool, "--kubeconfig", str(base / "state" / "kubeconfig"),
                           *args], capture_output=True, text=True, timeout=60, check=False)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_bound_addresses_are_in_the_serving_certificate(short_dir: Path, netns: str) -> None:
    proc, server = run_bound(short_dir, netns, f"{ADDRESS}:0")
    try:
        assert server.startswith(f"https://{ADDRESS}:")
        assert ADDRESS in sans(short_dir)
        out = kubectl(netns, short_dir, "get", "namespace", "default", "-o", "name")
        assert (out.returncode, out.stdout) == (0, "namespace/default\n"), out.stderr
    finally:
        stop(proc)

    proc, server = run_bound(short_dir, netns, "0.0.0.0:0")
    try:
        assert server.startswith("https://127.0.0.1:")
        names = sans(short_dir)
        assert {ADDRESS, "127.0.0.1", "localhost"} <= names
        assert all(ipaddress.ip_address(n).version == 4 for n in names if n != "localhost")
        port = server.rsplit(":", 1)[1]
        for where in (server, f"https://{ADDRESS}:{port}"):  # each address verifies against the certificate
            out = kubectl(netns, short_dir, "--server", where, "get", "namespace", "default", "-o", "name")
            assert (out.returncode, out.stdout) == (0, "namespace/default\n"), out.stderr
        log = (short_dir / "daemon.log").read_text()
        assert 'bindAddress: "0.0.0.0:0" serves the Kubernetes API on every interface' in log
    finally:
        stop(proc)
