"""The `cel` package's command line (typer, rich, prompt_toolkit: ~13 MiB) is not loaded with the package by
the daemon, yet still there when read."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_selectors_load_cel_without_its_command_line() -> None:
    code = textwrap.dedent("""
        import sys
        from nodeagent.cel import selectors
        import cel
        assert selectors.compile_selector('device.driver == "x"').expression == 'device.driver == "x"'
        heavy = sorted(m for m in ("typer", "rich", "prompt_toolkit", "pygments") if m in sys.modules)
        print("before", heavy)
        assert callable(cel.cli.main)  # read: it runs now
        print("after", "prompt_toolkit" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["before []", "after True"]
