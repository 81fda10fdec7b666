"""The `nodeagent` command starts fast: each subcommand imports only what it needs.

Timing is measured by bench/cli_startup.py, not here (a timed test fails on a busy machine);
this checks the cause instead: which heavy modules a fresh process has imported after the
command ran, and that the parsers built lazily show the same help text as the real ones.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from nodeagent import cli

HEAVY = ("kubernetes_asyncio", "aiohttp", "nodeagent.apiserver", "nodeagent.conformance", "nodeagent.daemon",
         "nodeagent.config", "yaml", "grpc", "grpc_health.v1.health", "grpc_reflection.v1alpha.reflection",
         "nodeagent.rpc.server")
PROBE = """
import sys
from nodeagent import cli
try:
    cli.main(sys.argv[1:])
except SystemExit:
    pass
print("HEAVY=" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


def _imported(*argv: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], capture_output=True, text=True,
                         check=False, timeout=60)
    line = next(line for line in out.stdout.splitlines() if line.startswith("HEAVY="))
    return {m for m in line[len("HEAVY="):].split(",") if m}


@pytest.mark.parametrize(("argv", "allowed"), [
    (["--help"], set()),
    (["describe", "--help"], set()),
    (["describe", "pod", "web", "--admin-socket", "/nonexistent/na.sock"], {"grpc"}),
    (["device", "set-health", "example.com/gpu", "gpu-0", "Unhealthy", "--admin-socket", "/nonexistent/na.sock"],
     {"grpc"}),
    (["calls", "--help"], set()),
])
def test_a_command_imports_only_what_it_needs(argv: list[str], allowed: set[str]) -> None:
    assert _imported(*argv) <= allowed


def test_lazy_parsers_show_the_real_help_texts() -> None:
    def helps(parser: object) -> dict[str, str]:
        sub = next(a for a in parser._subparsers._group_actions)  # type: ignore[attr-defined]
        return {c.dest: c.help for c in sub._choices_actions}

    lazy, full = helps(cli._parser(None)), helps(cli._parser(full=True))
    assert lazy == full
    assert set(cli._LAZY) <= set(full)
