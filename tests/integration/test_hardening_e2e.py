"""Issue 15 hardening, end to end: folder modes tightened, socket modes, /configz redaction,
and a symlinked state file refused with a message and status 2."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.integration.daemon_helpers import free_port, running_daemon, write_config

pytestmark = pytest.mark.integration

SECRET = "s3cret-token-value"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_dirs_tightened_sockets_private_and_configz_redacted(short_dir: Path) -> None:
    for name in ("root", "state"):
        (short_dir / name).mkdir()
        os.chmod(short_dir / name, 0o777)
    plugin = {"name": "sleeper", "command": [sys.executable, "-c", "import time; time.sleep(600)"],
              "env": {"API_TOKEN": SECRET}}
    with running_daemon(short_dir, agent={"plugins": [plugin]}) as d:
        assert mode(d.root) == 0o750
        assert mode(short_dir / "state") == 0o700
        for sock in (d.admin, d.pod_resources, d.kubelet_sock):
            assert stat.S_ISSOCK(sock.lstat().st_mode) and mode(sock) == 0o660, sock
        folders = (short_dir, d.pod_resources.parent, d.kubelet_sock.parent)
        leftovers = [entry for folder in folders for entry in folder.iterdir() if entry.name.startswith(".b")]
        assert leftovers == []
        raw = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/configz", timeout=5).read().decode()
        assert SECRET not in raw
        [served] = json.loads(raw)["nodeagentconfig"]["plugins"]
        assert served["env"] == {"API_TOKEN": "REDACTED"}
    log = (short_dir / "daemon.log").read_text()
    assert "rootDir mode tightened from 0777 to 0750" in log
    assert "stateDir mode tightened from 0777 to 0700" in log


def test_symlinked_state_db_is_refused(short_dir: Path) -> None:
    state = short_dir / "state"
    state.mkdir(mode=0o700)
    target = short_dir / "elsewhere.db"
    target.write_bytes(b"not yours")
    (state / "state.db").symlink_to(target)
    cfg = write_config(short_dir, {}, {}, free_port())
    done = subprocess.run([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(cfg)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"{state / 'state.db'}: is a symlink" in done.stderr
    assert "Traceback" not in done.stderr
    assert target.read_bytes() == b"not yours"
