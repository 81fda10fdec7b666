"""Benchmark: restart to ready after a SIGKILL (issue 25: back under the 1.2 s of an earlier wave).

A daemon (`nodeagent run`, embedded control plane and API server, the test suite's node profile) is
started, given some pods, and SIGKILLed; then it is started again from the same state, several times,
each time SIGKILLed once it says READY=1 over $NOTIFY_SOCKET (the moment systemd would count it
started). For every start the bench prints the wall time to READY=1 and the CPU seconds the process
spent until then (user + system: what the daemon's STATUS says, else /proc/PID/stat when READY=1 arrives):
on a loaded machine (2 cores shared by others)
wall time grows with the load, CPU time hardly, so CPU is the figure to compare between runs. The
same is printed for `python -c "import nodeagent.daemon"` (the import share of the start) and for
`python -c pass` (the interpreter's own floor).

Each figure is taken twice: with nodeagent's bytecode cached (as a pip install or `make venv` leaves it;
here in a folder of the run's own, PYTHONPYCACHEPREFIX, so no checkout gets files written into it),
and nodeagent's own modules compiled from source at every start, as an editable install without bytecode
under PYTHONDONTWRITEBYTECODE=1 did (the restart figure issue 25 reported): PYTHONPYCACHEPREFIX names a
folder holding the bytecode of everything but nodeagent, and none is written.

With --baseline PYTHON (the interpreter of another checkout's venv, e.g. /work/main/.venv/bin/python),
the restarts alternate between this checkout and that one (every interpreter started with -P, so the
working directory's checkout is never imported in place of the interpreter's own), each on a state of
its own made by its own first start, so both sides see the same load: the before/after of a change in
one run. --node-only starts the node without the embedded scheduler and controllers (controlPlane.enabled: false).

Run: python bench/restart.py [--runs 5] [--pods 20] [--baseline PYTHON] [--node-only]
"""

from __future__ import annotations

import argparse
import os
import re
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
           timeout: float = 300, python: str = sys.executable) -> tuple[subprocess.Popen[bytes], float, float]:
    """Start the daemon, wait for READY=1; return the process, wall seconds and CPU seconds to it."""
    began = time.perf_counter()
    with log.open("ab") as out:
        proc = subprocess.Popen([python, "-P", "-m", "nodeagent.cli", "run", "--config", str(cfg)],
                                stdout=out, stderr=subprocess.STDOUT, env={**env, "NOTIFY_SOCKET": address})
    deadline = began + timeout
    while True:
        notify.settimeout(max(0.01, deadline - time.perf_counter()))
        try:
            data = notify.recv(4096)
        except TimeoutError:
            proc.kill()
            raise SystemExit(f"no READY=1 after {timeout} s; see {log}") from None
        lines = data.decode(errors="replace").split("\n")
        if "READY=1" in lines:
            wall = time.perf_counter() - began
            # the daemon's own CPU seconds at READY=1 (its STATUS): /proc read now would add the work it
            # does after READY=1 until this process is scheduled, on a loaded machine tens of ms
            said = [m[1] for line in lines if (m := re.search(r"started in ([0-9.]+) CPU-s", line))]
            return proc, wall, float(said[0]) if said else _cpu(proc.pid)


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


def _side(base: Path, python: str, env: dict[str, str], pods: int, node_only: bool) -> Path:
    """A state of this side's own: the first start (empty state) given `pods` pods, then SIGKILLed."""
    base.mkdir()
    agent = {"controlPlane": {"enabled": False, "apiServer": {"bindAddress": "127.0.0.1:0"}}} if node_only else {}
    cfg = write_config(base, {}, agent, free_port())
    address = str(base / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind(address)
        proc, wall, cpu = _start(cfg, base / "daemon.log", notify, address, env, python=python)
        print(f"[{python}] first start (empty state): {wall:.3f} s wall, {cpu:.3f} s CPU")
        try:
            _pods(cfg, base, pods)
            time.sleep(2)  # let the node admit and start them before the crash
        finally:
            _kill(proc)
    return cfg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--baseline", help="another checkout's python: restarts alternate between the two")
    parser.add_argument("--node-only", action="store_true", help="controlPlane.enabled: false")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    sides = {"this": sys.executable, **({"baseline": args.baseline} if args.baseline else {})}
    with tempfile.TemporaryDirectory(prefix="na-rs-") as tmp:
        base = Path(tmp)
        prefix = base / "bytecode"
        # bytecode cached under a folder of the run's own: neither checkout gets files written into it
        cached = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                  "PYTHONPYCACHEPREFIX": str(base / "cached")}
        modes = {"bytecode cached": cached,
                 "from source": {**cached, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(prefix)}}
        for python in sides.values():
            subprocess.run([python, "-P", "-c", "import nodeagent.cli, nodeagent.daemon"], check=True, env=cached)
            imports = "import nodeagent.cli, nodeagent.daemon, nodeagent.wiring.control_plane"
            subprocess.run([python, "-P", "-c", imports], check=True, env=cached)
            subprocess.run([python, "-P", "-c", imports], check=True,
                           env={**cached, "PYTHONPYCACHEPREFIX": str(prefix)})
            where = "import nodeagent; print(nodeagent.__file__)"
            package = Path(subprocess.run([python, "-P", "-c", where], check=True, env=cached, capture_output=True,
                                          text=True).stdout.strip()).parent
            shutil.rmtree(prefix / package.relative_to(package.anchor), ignore_errors=True)
        for mode, env in modes.items():
            for side, python in sides.items():
                for name, argv in (("python -c pass", [python, "-P", "-c", "pass"]),
                                   ("import nodeagent.daemon", [python, "-P", "-c", "import nodeagent.daemon"])):
                    wall, cpu = _process(argv, args.runs, env)
                    print(f"[{side}, {mode}] {name}: {wall:.3f} s wall, {cpu:.3f} s CPU (median of {args.runs})")
        cfgs = {side: _side(base / side, python, cached, args.pods, args.node_only) for side, python in sides.items()}
        address = str(base / "notify.sock")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
            notify.bind(address)
            for mode, env in modes.items():
                walls: dict[str, list[float]] = {side: [] for side in sides}
                cpus: dict[str, list[float]] = {side: [] for side in sides}
                for _ in range(args.runs):
                    for side, python in sides.items():  # alternating: both sides under the same load
                        cfg = cfgs[side]
                        proc, wall, cpu = _start(cfg, cfg.parent / "daemon.log", notify, address, env, python=python)
                        _kill(proc)
                        walls[side].append(wall)
                        cpus[side].append(cpu)
                for side in sides:
                    print(f"[{side}, {mode}] restart to READY=1 after SIGKILL ({args.pods} pods"
                          f"{', node only' if args.node_only else ''}): "
                          f"{statistics.median(walls[side]):.3f} s wall (min {min(walls[side]):.3f}), "
                          f"{statistics.median(cpus[side]):.3f} s CPU (min {min(cpus[side]):.3f}; median of "
                          f"{args.runs}; target {TARGET} s on a quiet machine)")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
