"""A daemon that had pods refuses to start (exit 2, a message naming objects.db, no traceback) when
objects.db is missing, emptied, lost its table or its WAL after a crash, or its WAL was cut in half,
instead of starting empty;
`nodeagent run --reset-state` starts empty and keeps the old files aside with a timestamp suffix."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.daemon_helpers import running_daemon, wait_for

pytestmark = pytest.mark.integration

POD = """
apiVersion: v1
kind: Pod
metadata: {name: keep-me, namespace: default}
spec:
  containers: [{name: c, image: busybox}]
"""


def _run(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(config)],
                          capture_output=True, text=True, timeout=60)


def _restore(pristine: Path, state: Path) -> None:
    shutil.rmtree(state)
    shutil.copytree(pristine, state, symlinks=True)  # the sysfs view (host/sys) links in cycles, as sysfs does


def _missing(db: Path) -> None:
    db.unlink()


def _truncated(db: Path) -> None:
    db.write_bytes(b"")


def _table_dropped(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE objects")
    conn.close()


def _shm_not_a_file(db: Path) -> None:
    shm = db.with_name(db.name + "-shm")
    shm.unlink(missing_ok=True)
    shm.mkdir()  # SQLite opens the database, then every write fails: "attempt to write a readonly database"


def _refused(config: Path, db: Path, says: str) -> None:
    out = _run(config)
    assert out.returncode == 2, out.stderr
    assert f"nodeagent: {db}: " in out.stderr and says in out.stderr, out.stderr
    assert "nodeagent run --reset-state" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.timeout(300)  # seven daemon starts; on a loaded 2-core machine one takes up to 17 s
def test_damaged_objects_db_refuses_then_reset_state_starts_empty(short_dir: Path) -> None:
    state = short_dir / "state"
    db = state / "objects.db"
    with running_daemon(short_dir) as d:
        d.kubectl("apply", "-f", "-", input=POD)
        wait_for(lambda: d.kubectl_json("get", "pod", "keep-me")["status"].get("phase") == "Running",
                 timeout=30, what="pod Running")
        config = d.config
    pristine = short_dir / "pristine"
    shutil.copytree(state, pristine, symlinks=True)

    damages: list[tuple[Callable[[Path], None], str]] = [
        (_missing, "missing, empty or lost its tables"),
        (_truncated, "missing, empty or lost its tables"),
        (_table_dropped, "table objects is missing"),
        (_shm_not_a_file, "attempt to write a readonly database"),  # was a raw traceback, rc 1
    ]
    for damage, says in damages:
        _restore(pristine, state)
        damage(db)
        _refused(config, db, says)

    # A crash (SIGKILL) after a start, then objects.db-wal lost: the start's commits are gone.
    _restore(pristine, state)
    with running_daemon(short_dir) as d:
        assert d.kubectl_json("get", "pod", "keep-me")["metadata"]["name"] == "keep-me"
        d.stop(signal.SIGKILL)
    db.with_name("objects.db-wal").unlink()
    _refused(config, db, "lost its last commits")

    # The same crash, then objects.db-wal cut in half: SQLite would keep the frames before the cut and
    # drop the rest silently (the start's marker survived in the first half: the daemon started with its
    # pods gone and no word); the WAL check refuses it before SQLite opens it.
    _restore(pristine, state)
    with running_daemon(short_dir) as d:
        d.kubectl("apply", "-f", "-", input=POD.replace("keep-me", "made-later"))
        d.stop(signal.SIGKILL)
    wal = db.with_name("objects.db-wal")
    data = wal.read_bytes()
    assert len(data) > 32 * 1024, len(data)
    wal.write_bytes(data[: len(data) // 2])
    out = _run(config)
    assert out.returncode == 2, out.stderr
    assert f"nodeagent: {wal}: ends inside a frame" in out.stderr, out.stderr
    assert "nodeagent run --reset-state" in out.stderr and "Traceback" not in out.stderr

    with running_daemon(short_dir, extra_args=("--reset-state",)) as d:
        assert d.kubectl_json("get", "pods")["items"] == []
        kept = sorted(p.name for p in state.iterdir() if p.name.startswith(("objects.db.", "state.db.")))
        assert any(n.startswith("objects.db.") and n.endswith("Z") for n in kept), kept
        assert any(n.startswith("state.db.") and n.endswith("Z") for n in kept), kept
        assert "state reset: starting empty, old files kept aside" in (short_dir / "daemon.log").read_text()
