"""A second daemon sharing the admin socket or the state dir with a running one is refused (exit 2)
with the owner's pid, and the first one keeps serving its admin socket."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.daemon_helpers import Daemon, running_daemon, write_config

pytestmark = pytest.mark.integration


def _second(base: Path, agent: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base.mkdir()
    cfg = write_config(base, {}, agent, 1)
    return subprocess.run([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(cfg)],
                          capture_output=True, text=True, timeout=30)


def _first_still_answers(d: Daemon) -> None:
    assert d.proc.poll() is None
    assert d.admin.exists()
    assert "Name:" in d.cli("describe", "node", "test-node").stdout


@pytest.mark.parametrize(("shared", "what"), [("adminSocket", "admin socket"), ("stateDir", "state dir")])
def test_second_daemon_sharing_a_place_is_refused(short_dir: Path, shared: str, what: str) -> None:
    with running_daemon(short_dir) as d:
        other = short_dir / "b"
        agent = {"adminSocket": str(d.admin) if shared == "adminSocket" else str(other / "admin.sock"),
                 "stateDir": str(short_dir / "state") if shared == "stateDir" else str(other / "state")}
        out = _second(other, agent)
        assert out.returncode == 2, out.stderr
        place = d.admin if shared == "adminSocket" else short_dir / "state"
        assert f"{what} {place} is locked by another running nodeagent (pid {d.proc.pid}" in out.stderr
        assert "Traceback" not in out.stderr
        _first_still_answers(d)
