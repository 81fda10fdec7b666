"""A joined node survives a frozen or half-open control plane, and says so once.

The faults a network and a host give without an error: the API server process stopped (SIGSTOP)
for 30 s and resumed; a TCP proxy between node and server that stops forwarding without closing
(every connection open then stays silent for ever, as after a NAT table loss; new ones work again
after 30 s). Before the watch had a liveness check, a node whose watch connection went silent
never saw a pod again (Pending after 420 s) and logged nothing; one that was refused logged 553
lines in 30 s. Now: pods bound during or after the fault reach Running on the node within one
node lease period (40 s) of the server answering again, and the node logs one WARNING when it
loses the server, one INFO when it is back (with the counts), nothing else above DEBUG.

Against nodeagent's own API server process (always) and the real kube-apiserver
(NODEAGENT_KUBE_APISERVER=1, the pods bound by nodeName: no scheduler).
"""

from __future__ import annotations

import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.integration.daemon_helpers import free_port, running_daemon, wait_for
from tests.integration.kubeapiserver import running_kube_apiserver
from tests.integration.tcpproxy import BlackholeProxy, blackhole_proxy
from tests.integration.test_two_processes import control_plane

pytestmark = [pytest.mark.integration]

NODE = "test-node"
OUTAGE = 30.0  # seconds the server is frozen or the network silent
BOUND = 40.0  # seconds: one node lease period (nodeLeaseDurationSeconds' default)
UNREACHABLE = "API server unreachable"
LOG_ARGS = ("--log-format", "full", "--log-level", "debug")  # when the node noticed, what it retried, when it caught up
BACK = "API server reachable again"


@pytest.fixture(autouse=True)
def show_logs(short_dir: Path) -> Iterator[None]:
    """On failure, the node's log (the folder is gone afterwards)."""
    try:
        yield
    finally:
        for log in sorted(short_dir.glob("**/daemon.log")):
            sys.stderr.write(f"==== {log}\n{log.read_text()[-20000:]}\n")


def node_agent(kubeconfig: Path, node: str = NODE) -> dict[str, Any]:
    return {"nodeName": node, "cluster": {"kubeconfig": str(kubeconfig)},
            "controlPlane": {"apiServer": {"bindAddress": ""}}}


def through(kubeconfig: Path, proxy: BlackholeProxy, out: Path) -> Path:
    """`kubeconfig` with its server's port replaced by the proxy's (same host: the certificate still fits)."""
    out.write_text(re.sub(r"(server: https://127\.0\.0\.1:)\d+", rf"\g<1>{proxy.port}", kubeconfig.read_text()))
    return out


class LogWindow:
    """The lines a daemon logs from now on."""

    def __init__(self, log: Path) -> None:
        self._log = log
        self._start = len(log.read_text().splitlines())

    def lines(self) -> list[str]:
        return self._log.read_text().splitlines()[self._start:]

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines())


def assert_told_once(window: LogWindow) -> None:
    """One WARNING for the outage, one INFO when it ended, nothing else above INFO; a few lines in all."""
    lines = window.lines()
    loud = [line for line in lines if re.match(r"\S+ \S+ (WARNING|ERROR|CRITICAL) ", line)]
    assert len(loud) == 1 and UNREACHABLE in loud[0], "\n".join(lines)
    back = [line for line in lines if BACK in line]
    assert len(back) == 1 and re.search(r"failed_requests=\d+", back[0]), "\n".join(lines)
    told = [line for line in lines if re.match(r"\S+ \S+ (INFO|WARNING|ERROR|CRITICAL) ", line)]
    assert len(told) < 40, "\n".join(told)


def running_count(get: Callable[[str], Any], names: list[str]) -> int:
    pods = get("/api/v1/namespaces/default/pods")["items"]
    return sum(p["metadata"]["name"] in names and p.get("status", {}).get("phase") == "Running" for p in pods)


def wait_running(get: Callable[[str], Any], names: list[str], since: float) -> float:
    """Seconds from `since` until every pod of `names` is Running (fails past the bound)."""
    wait_for(lambda: running_count(get, names) == len(names), timeout=BOUND - (time.monotonic() - since),
             what=f"{names} Running within {BOUND:.0f}s of the server answering again")
    return time.monotonic() - since


def bound_pod(name: str, node: str = NODE) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "pause"}]}}


@contextmanager
def embedded_with_node(short_dir: Path, proxied: bool) -> Iterator[tuple[Any, Any, BlackholeProxy | None, Path]]:
    port = free_port()
    with control_plane(short_dir / "cp", port) as cp:
        node_base = short_dir / "n"
        node_base.mkdir()
        with blackhole_proxy("127.0.0.1", port) as proxy:
            kubeconfig = through(cp.kubeconfig, proxy, short_dir / "kc") if proxied else cp.kubeconfig
            with running_daemon(node_base, {}, node_agent(kubeconfig), LOG_ARGS) as node:
                wait_for(lambda: any(c["type"] == "Ready" and c["status"] == "True" for c in cp.api_get(
                    f"/api/v1/nodes/{NODE}")["status"]["conditions"]), timeout=60, what="node Ready")
                yield cp, node, (proxy if proxied else None), node_base / "daemon.log"


@pytest.mark.timeout(240)
def test_embedded_api_server_stopped_then_resumed(short_dir: Path) -> None:
    with embedded_with_node(short_dir, proxied=False) as (cp, _node, _proxy, log):
        window = LogWindow(log)
        cp.proc.send_signal(signal.SIGSTOP)
        went = time.monotonic()
        try:
            wait_for(lambda: window.count(UNREACHABLE), timeout=BOUND, what="the node noticing within a lease period")
            time.sleep(max(0.0, OUTAGE - (time.monotonic() - went)))
        finally:
            cp.proc.send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        names = [f"after-{i}" for i in range(4)]
        for name in names:
            cp.kubectl("run", name, "--image=pause")
        took = wait_running(cp.api_get, names, resumed)
        wait_for(lambda: window.count(BACK), timeout=BOUND, what="the node saying the server is back")
        print(f"pods Running {took:.1f}s after SIGCONT")
        assert_told_once(window)


@pytest.mark.timeout(240)
def test_embedded_api_server_behind_a_network_that_goes_silent(short_dir: Path) -> None:
    with embedded_with_node(short_dir, proxied=True) as (cp, _node, proxy, log):
        assert proxy is not None
        window = LogWindow(log)
        proxy.blackhole()
        went = time.monotonic()
        during = [f"during-{i}" for i in range(2)]
        for name in during:  # bound by the scheduler while the node hears nothing
            cp.kubectl("run", name, "--image=pause")
        wait_for(lambda: window.count(UNREACHABLE), timeout=BOUND, what="the node noticing within a lease period")
        noticed = time.monotonic() - went
        time.sleep(max(0.0, OUTAGE - (time.monotonic() - went)))
        proxy.restore()  # the connections open until now stay silent for ever
        back = time.monotonic()
        after = [f"after-{i}" for i in range(2)]
        for name in after:
            cp.kubectl("run", name, "--image=pause")
        took = wait_running(cp.api_get, during + after, back)
        wait_for(lambda: window.count(BACK), timeout=BOUND, what="the node saying the server is back")
        print(f"silence noticed after {noticed:.1f}s; pods Running {took:.1f}s after the network came back")
        assert_told_once(window)


@pytest.mark.kube_apiserver
@pytest.mark.timeout(300)
@pytest.mark.parametrize("fault", ["sigstop", "silent-network"])
def test_real_kube_apiserver_frozen_or_silent(kube_apiserver_binary: Path, short_dir: Path, fault: str) -> None:
    node_name = f"nodeagent-{fault}"
    with running_kube_apiserver(kube_apiserver_binary) as ka, blackhole_proxy("127.0.0.1", ka.port) as proxy:
        kubeconfig = ka.node_kubeconfig(node_name)
        if fault == "silent-network":
            kubeconfig = through(kubeconfig, proxy, short_dir / "kc")
        with running_daemon(short_dir, {}, node_agent(kubeconfig, node_name), LOG_ARGS):
            wait_for(lambda: any(c["type"] == "Ready" and c["status"] == "True" for c in ka.get(
                f"/api/v1/nodes/{node_name}")["status"]["conditions"]), timeout=60, what="node Ready")
            window = LogWindow(short_dir / "daemon.log")
            apiserver = ka._apiserver  # the process to stop
            assert apiserver is not None
            went = time.monotonic()
            if fault == "sigstop":
                apiserver.popen.send_signal(signal.SIGSTOP)
            else:
                proxy.blackhole()
            try:
                wait_for(lambda: window.count(UNREACHABLE), timeout=BOUND, what="the node noticing")
                noticed = time.monotonic() - went
                if fault == "silent-network":  # the server is there: pods are bound meanwhile
                    for i in range(2):
                        ka.post("/api/v1/namespaces/default/pods", bound_pod(f"{fault}-during-{i}", node_name))
                time.sleep(max(0.0, OUTAGE - (time.monotonic() - went)))
            finally:
                if fault == "sigstop":
                    apiserver.popen.send_signal(signal.SIGCONT)
                else:
                    proxy.restore()
            back = time.monotonic()
            names = [f"{fault}-during-{i}" for i in range(2)] if fault == "silent-network" else []
            for i in range(4 - len(names)):
                ka.post("/api/v1/namespaces/default/pods", bound_pod(f"{fault}-after-{i}", node_name))
                names.append(f"{fault}-after-{i}")
            took = wait_running(ka.get, names, back)
            wait_for(lambda: window.count(BACK), timeout=BOUND, what="the node saying the server is back")
            print(f"{fault}: noticed after {noticed:.1f}s; pods Running {took:.1f}s after the server came back")
            assert_told_once(window)
