"""Stopping in any order is quiet: Ctrl-C at any moment of a start, and a node process stopped
after its control plane, end without a traceback, an ERROR line or `Unclosed client session`.

Before: Ctrl-C while the CLI was still starting printed a KeyboardInterrupt traceback from the
daemon, and one from each plugin it had spawned (the terminal's SIGINT reached the whole process
group); a node whose control plane had stopped retried its Node write every 50 ms, retiring an API
client each time, and at exit aiohttp logged `Unclosed client session` for each of them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.daemon_helpers import BIN, alive, child_pids, free_port, wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
NODEAGENT = str(BIN / "nodeagent")
QUIET = ("Traceback", " ERROR ", "Unclosed client session", "KeyboardInterrupt")


@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="na-stop-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def demo_copy(base: Path) -> Path:
    """configs/demo.yaml as `make run` runs it (same plugins and examples), on free ports, with
    everything under `base` (its ../.run resolves to base/.run)."""
    configs = base / "configs"
    configs.mkdir()
    text = (REPO / "configs" / "demo.yaml").read_text()
    text = text.replace("127.0.0.1:6443", f"127.0.0.1:{free_port()}")
    text = text.replace("127.0.0.1:10255", f"127.0.0.1:{free_port()}")
    # the kubelet endpoint on a free port (0), never the default 10250 another daemon may hold
    text = text.replace("kind: KubeletConfiguration\n", "kind: KubeletConfiguration\nport: 0\n", 1)
    (configs / "demo.yaml").write_text(text)
    for folder in ("examples", "plugins"):
        (configs / folder).symlink_to(REPO / "configs" / folder)
    return configs / "demo.yaml"


def start(argv: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """In a session of its own, as a terminal's foreground job: SIGINT to the group is Ctrl-C."""
    with log.open("wb") as out:
        return subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


# `nodeagent run` as the console script runs it, plus a marker once nodeagent.cli is imported:
# Ctrl-C during the interpreter's own start-up (site) or the CLI module's imports happens before
# any code of ours can act (the lazy CLI imports shrink the latter); from main() on it is ours.
ENTRY = ("import sys, pathlib, nodeagent.cli as cli; pathlib.Path(sys.argv[1]).touch(); "
         "sys.exit(cli.main(sys.argv[2:]))")


def stop_group(proc: subprocess.Popen[bytes], sig: signal.Signals, timeout: float = 60) -> int | str:
    os.killpg(proc.pid, sig)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return "hung"


def quiet(log: Path) -> list[str]:
    return [line for line in log.read_text(errors="replace").splitlines() if any(q in line for q in QUIET)]


@pytest.mark.parametrize("after", [0.0, 0.5, 2.0, "first log line", "ready"])
def test_ctrl_c_at_any_moment_of_a_start_is_quiet(base: Path, after: float | str) -> None:
    """SIGINT to the daemon's process group (a terminal's Ctrl-C) at moments of the start, counted
    from main(): parsing and config loading, the asyncio start, the first log line, serving."""
    config = demo_copy(base)
    log = base / "daemon.log"
    marker = base / "in-main"
    proc = start([str(BIN / "python"), "-c", ENTRY, str(marker), "run", "--config", str(config),
                  "--log-format", "full"], log, base)
    try:
        wait_for(marker.exists, timeout=60, what="nodeagent.cli imported")
        if after == "first log line":
            wait_for(lambda: log.stat().st_size > 0, timeout=60, what="the daemon's first log line")
        elif after == "ready":
            wait_for(lambda: (base / ".run" / "nodeagent.sock").exists() and b"example applied" in log.read_bytes(),
                     timeout=90, what="the demo daemon serving")
        else:
            time.sleep(float(after))
        children = child_pids(proc.pid)
        code = stop_group(proc, signal.SIGINT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code in (0, 130), (code, log.read_text()[-2000:])
    assert quiet(log) == [], log.read_text()[-3000:]
    wait_for(lambda: not any(alive(pid) for pid in children), timeout=15, what="the plugins stopped")


def test_node_stopped_after_its_control_plane_is_quiet(base: Path) -> None:
    """The README's "Several nodes" processes: the control plane goes first, then the node."""
    cp_cfg = base / "controlplane.yaml"
    cp_cfg.write_text((REPO / "configs" / "controlplane.yaml").read_text()
                      .replace("127.0.0.1:6443", f"127.0.0.1:{free_port()}"))
    cp = start([NODEAGENT, "run", "--config", str(cp_cfg), "--state-dir", str(base / "cp"), "--root-dir",
                str(base / "cp" / "root"), "--admin-socket", str(base / "cp" / "nodeagent.sock")],
               base / "cp.log", base)
    node = None
    try:
        kubeconfig = base / "cp" / "kubeconfig"
        wait_for(lambda: (kubeconfig.exists() and kubeconfig.stat().st_size > 0) or cp.poll() is not None, timeout=90,
                 what="the control plane")
        assert cp.poll() is None, (base / "cp.log").read_text()[-3000:]
        node_cfg = base / "node-a.yaml"
        node_cfg.write_text((REPO / "configs" / "node.yaml").read_text()
                            .replace("/var/lib/nodeagent/controlplane/", f"{base}/cp/")
                            .replace("/etc/nodeagent/plugins/", f"{REPO}/configs/plugins/")
                            .replace("127.0.0.1:10255", "127.0.0.1:0")
                            # the kubelet endpoint on a free port, never 10250 another daemon may hold
                            .replace("\nport: 10250\n", "\nport: 0\n"))
        node_log = base / "node.log"
        node = start([NODEAGENT, "run", "--config", str(node_cfg), "--node-name", "node-a", "--state-dir",
                      str(base / "node-a"), "--root-dir", str(base / "node-a" / "kubelet"), "--admin-socket",
                      str(base / "node-a" / "nodeagent.sock")], node_log, REPO)
        started = node
        wait_for(lambda: b"node registered" in node_log.read_bytes() or started.poll() is not None, timeout=90,
                 what="the node registered")
        assert node.poll() is None, node_log.read_text()[-3000:]
        # the README's `nodeagent describe --admin-socket ...` on a node process (no object store)
        described = subprocess.run([NODEAGENT, "describe", "--admin-socket", str(base / "node-a" / "nodeagent.sock"),
                                    "node", "node-a"], capture_output=True, text=True, timeout=60)
        assert described.returncode == 0 and "node-a" in described.stdout, described.stderr
        assert stop_group(cp, signal.SIGTERM) == 0
        wait_for(lambda: b"API server unreachable" in node_log.read_bytes(), timeout=30, what="the node noticing")
        time.sleep(2)  # the outage goes on: the node keeps retrying
        assert stop_group(node, signal.SIGTERM) == 0
        text = node_log.read_text()
        assert quiet(node_log) == [], text[-3000:]
        # once for the whole node (nodeapi/reachability.py), not once per component or per retry
        assert text.count("API server unreachable") == 1, "the outage is logged once"
    finally:
        for proc in (cp, node):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
