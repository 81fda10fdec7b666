"""`nodeagent --version` prints `nodeagent <version>`, the version of the installed package."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from nodeagent.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    expected = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out == f"nodeagent {expected}\n"
    assert version("nodeagent") == expected


def test_console_script_version() -> None:
    script = Path(sys.executable).parent / "nodeagent"
    if not script.exists():
        pytest.skip("the nodeagent console script is not installed beside this interpreter")
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.startswith("nodeagent ") and out.stderr == ""
