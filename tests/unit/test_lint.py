"""The project's standing checks run as part of the suite: ruff, mypy --strict, import contracts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.long  # mypy over the whole tree: a minute and more, cold


def _tool(name: str) -> str:
    path = BIN / name
    found = str(path) if path.exists() else shutil.which(name)
    if not found:
        pytest.skip(f"{name} not installed (test extra)")
    return found


def _run(*cmd: str) -> None:
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}"


@pytest.mark.timeout(120)
def test_ruff() -> None:
    _run(_tool("ruff"), "check", "nodeagent", "plugins", "tests", "bench", "scripts")


@pytest.mark.timeout(360)  # a fresh clone has no mypy cache: the whole tree, cold, on 2 cores
def test_mypy_strict() -> None:
    _run(_tool("mypy"))  # pyproject: nodeagent, plugins, tests and bench


@pytest.mark.timeout(120)
def test_import_contracts() -> None:
    _run(_tool("lint-imports"))
