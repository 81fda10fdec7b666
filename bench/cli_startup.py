"""Benchmark: how long the `nodeagent` command takes to start, per subcommand (a user waits for it).

Each command runs as a fresh process (the installed entry point's interpreter, `python -m
nodeagent.cli`), several times; the median wall time is printed next to the target (0.3 s on an
idle machine for `--help`, `describe` and `device set-health`) and the heavy modules each run
imported. `describe` and `device set-health` are pointed at an admin socket that does not exist,
so they measure start-up and the failed connection, not a daemon's answer. A baseline process
(`python -c pass`) is measured in the same run, so the figures can be read on a busy machine as
well: the command's own cost is the difference.

Run: python bench/cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

TARGET = 0.3  # seconds, on an idle machine
HEAVY = ("kubernetes_asyncio", "aiohttp", "nodeagent.apiserver", "nodeagent.conformance", "nodeagent.daemon", "yaml")
COMMANDS = {
    "--help": ["--help"],
    "describe": ["describe", "pod", "web", "--admin-socket", "/nonexistent/nodeagent.sock"],
    "device set-health": ["device", "set-health", "example.com/gpu", "gpu-0", "Unhealthy",
                          "--admin-socket", "/nonexistent/nodeagent.sock"],
    "conformance --help": ["conformance", "--help"],
}
_PROBE = """
import sys
from nodeagent import cli
try:
    cli.main(sys.argv[1:])
except SystemExit:
    pass
print("HEAVY=" + ",".join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)
"""


def _time(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _heavy(args: list[str]) -> str:
    out = subprocess.run([sys.executable, "-c", _PROBE.format(heavy=HEAVY), *args], capture_output=True, text=True,
                         check=False)
    return next((line[len("HEAVY="):] for line in out.stderr.splitlines() if line.startswith("HEAVY=")), "?")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    baseline = _time([sys.executable, "-c", "pass"], runs)
    print(f"python -c pass: {baseline:.3f} s (median of {runs})")
    for name, args in COMMANDS.items():
        took = _time([sys.executable, "-m", "nodeagent.cli", *args], runs)
        target = f"target {TARGET} s" if not name.startswith("conformance") else "no target"
        print(f"nodeagent {name}: {took:.3f} s ({took - baseline:+.3f} s over python; {target}); "
              f"heavy modules: {_heavy(args) or 'none'}")


if __name__ == "__main__":
    main()
