"""The WAL check on real SQLite WAL files: whole frames pass, a file cut inside a frame or with a
damaged header is refused naming the file and --reset-state (SQLite itself would drop the tail)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from nodeagent.errors import StateDamaged
from nodeagent.state.walcheck import check_wal


def _db_with_wal(tmp_path: Path) -> tuple[Path, Path]:
    """A database whose commits are all in its -wal (copied while the writer is open, as after a crash)."""
    src = tmp_path / "live.db"
    conn = sqlite3.connect(src)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE t (v TEXT)")
    for i in range(50):
        conn.execute("INSERT INTO t VALUES (?)", ("x" * 3000 + str(i),))
        conn.commit()
    db = tmp_path / "objects.db"
    shutil.copy(src, db)
    shutil.copy(src.with_name("live.db-wal"), db.with_name("objects.db-wal"))
    conn.close()
    return db, db.with_name("objects.db-wal")


def test_whole_frames_and_no_wal_pass(tmp_path: Path) -> None:
    db, wal = _db_with_wal(tmp_path)
    check_wal(db)
    wal.write_bytes(b"")
    check_wal(db)
    wal.unlink()
    check_wal(db)


@pytest.mark.parametrize(("cut", "says"), [
    (lambda data: data[: len(data) // 2], "ends inside a frame"),
    (lambda data: data[:20], "shorter than a WAL header"),
    (lambda data: b"\0" * 32 + data[32:], "not a SQLite WAL"),
])
def test_a_wal_cut_short_is_refused(tmp_path: Path, cut: object, says: str) -> None:
    db, wal = _db_with_wal(tmp_path)
    wal.write_bytes(cut(wal.read_bytes()))  # type: ignore[operator]
    with pytest.raises(StateDamaged, match=says) as err:
        check_wal(db)
    assert str(err.value).startswith(f"{wal}: ") and "nodeagent run --reset-state" in str(err.value)
    # what SQLite would do with it: open without an error and answer with fewer rows, or no table at all
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
    rows = conn.execute("SELECT count(*) FROM t").fetchone()[0] if "t" in tables else 0
    conn.close()
    assert rows < 50
