"""Benchmark: restart to ready after a SIGKILL (issue 25: back under the 1.2 s of an earlier wave).

A daemon (`nodeagent run`, embedded control plane and API server, the test suite's node profile) is
started, given some pods, and SIGKILLed; then it is started again from the same state, several times,
each time SIGKILLed once it says READY=1 over $NOTIFY_SOCKET (the moment systemd would count it
started). For every start the bench prints the wall time to READY=1 and the CPU seconds the process
spent until then (user + system, from /proc/PID/stat): on a loaded machine (2 cores shared by others)
wall time grows with the load, CPU time hardly, so CPU is the figure to compare between runs. The
same is printed for `python -c "import nodeagent.daemon"` (the import share of the start) and for
`python -c pass` (the interpreter's own floor).

Each figure is taken twice: with nodeagent's bytecode cached (as a pip install or `make venv` leaves it),
and nodeagent's own modules compiled from source at every start, as an editable install without bytecode
under PYTHONDONTWRITEBYTECODE=1 did (the restart figure issue 25 reported): PYTHONPYCACHEPREFIX names a
folder holding the bytecode of everything but nodeagent, and none is written.

Run: python bench/restart.py [--runs 5] [--pods 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.integration.daemon_helpers import free_port, write_config

TARGET = 1.2  # seconds to ready, on a quiet machine (the wave before issue 25)
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    """User + system seconds of a live process (fields 14 and 15 of /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _start(cfg: Path, log: Path, notify: socket.socket, address: str, env: dict[str, str],
           timeout: float = 300) -> tuple[subprocess.Popen[bytes], float, float]:
    """Start the daemon, wait for READY=1; return the process, wall seconds and CPU seconds to it."""
    began = time.perf_counter()
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(cfg)],
                                stdout=out, stderr=subprocess.STDOUT, env={**env, "NOTIFY_SOCKET": address})
    deadline = began + timeout
    while True:
        notify.settimeout(max(0.01, deadline - time.perf_counter()))
        try:
            data = notify.recv(4096)
        except TimeoutError:
            proc.kill()
            raise SystemExit(f"no READY=1 after {timeout} s; see {log}") from None
        if b"READY=1" in data.split(b"\n"):
            return proc, time.perf_counter() - began, _cpu(proc.pid)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def _pods(cfg: Path, base: Path, count: int) -> None:
    docs = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: default}}\n"
        f"spec: {{nodeName: test-node, containers: [{{name: c, image: x,"
        f" resources: {{requests: {{cpu: 10m, memory: 8Mi}}}}}}]}}\n" for i in range(count))
    subprocess.run(["kubectl", "--kubeconfig", str(base / "state" / "kubeconfig"), "apply", "-f", "-"],
                   input=docs, text=True, capture_output=True, check=True, timeout=120,
                   env={**os.environ, "KUBECTL_KUBERC": "false"})


def _process(argv: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        began = time.perf_counter()
        usage_before = os.times()
        subprocess.run(argv, check=True, env=env)
        usage = os.times()
        walls.append(time.perf_counter() - began)
        cpus.append((usage.children_user - usage_before.children_user)
                     + (usage.children_system - usage_before.children_system))
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pods", type=int, default=20)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="na-rs-") as tmp:
        base = Path(tmp)
        prefix = base / "bytecode"
        cached = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        modes = {"bytecode cached": cached,
                 "from source": {**cached, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(prefix)}}
        subprocess.run([sys.executable, "-c", "import nodeagent.cli, nodeagent.daemon"], check=True, env=cached)
        subprocess.run([sys.executable, "-c", "import nodeagent.cli, nodeagent.daemon, nodeagent.wiring.control_plane"],
                       check=True, env={**cached, "PYTHONPYCACHEPREFIX": str(prefix)})
        package = Path(__file__).resolve().parents[1] / "nodeagent"
        shutil.rmtree(prefix / package.relative_to(package.anchor))
        for mode, env in modes.items():
            for name, argv in (("python -c pass", [sys.executable, "-c", "pass"]),
                               ("import nodeagent.daemon", [sys.executable, "-c", "import nodeagent.daemon"])):
                wall, cpu = _process(argv, args.runs, env)
                print(f"[{mode}] {name}: {wall:.3f} s wall, {cpu:.3f} s CPU (median of {args.runs})")
        cfg = write_config(base, {}, {}, free_port())
        log = base / "daemon.log"
        address = str(base / "notify.sock")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
            notify.bind(address)
            proc, wall, cpu = _start(cfg, log, notify, address, cached)
            print(f"first start (empty state): {wall:.3f} s wall, {cpu:.3f} s CPU")
            try:
                _pods(cfg, base, args.pods)
                time.sleep(2)  # let the node admit and start them before the crash
            finally:
                _kill(proc)
            for mode, env in modes.items():
                walls, cpus = [], []
                for _ in range(args.runs):
                    proc, wall, cpu = _start(cfg, log, notify, address, env)
                    _kill(proc)
                    walls.append(wall)
                    cpus.append(cpu)
                print(f"[{mode}] restart to READY=1 after SIGKILL ({args.pods} pods): "
                      f"{statistics.median(walls):.3f} s wall (min {min(walls):.3f}), "
                      f"{statistics.median(cpus):.3f} s CPU (min {min(cpus):.3f}; median of {args.runs}; "
                      f"target {TARGET} s on a quiet machine)")


if __name__ == "__main__":
    main()
