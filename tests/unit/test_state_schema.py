"""state.db's table layout: schema 2 (a rowid `kv` table, user_version 2); a schema-1 file (a
WITHOUT ROWID `kv`, no user_version) is converted in place at open, in one transaction, with
every record kept; a file of a newer schema is refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from nodeagent.errors import StartupError, StateDamaged
from nodeagent.state.db import SCHEMA_VERSION, StateDB, encode

_SCHEMA_1 = """
CREATE TABLE kv (
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (bucket, key)
) WITHOUT ROWID;
"""

RECORDS = {
    ("pods", f"uid-{i:03d}"): {"pod": {"name": f"p{i}", "spec": "x" * 1500}, "finishAt": None}
    for i in range(40)
} | {
    ("devices", "uid-001"): {"containers": {"main": {"example.com/gpu": ["gpu-001"]}}},
    ("state", "marker"): {"id": "abc", "generation": 3},
}


def _schema_1_file(path: Path) -> None:
    """A state.db as nodeagent wrote it before schema 2."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(_SCHEMA_1)
    with conn:
        conn.executemany("INSERT INTO kv(bucket, key, value) VALUES (?, ?, ?)",
                         [(b, k, encode(v)) for (b, k), v in RECORDS.items()])
    conn.close()


def _layout(path: Path) -> tuple[int, str]:
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'kv'").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()
    assert tables == {"kv"}, tables
    return version, sql


def _every_record(db: StateDB) -> None:
    for (bucket, key), value in RECORDS.items():
        assert db.get(bucket, key) == value, (bucket, key)
    assert [k for k, _ in db.items("pods")] == sorted(k for b, k in RECORDS if b == "pods")


def test_a_schema_1_file_is_converted_in_place_with_every_record(short_dir: Path) -> None:
    path = short_dir / "state.db"
    _schema_1_file(path)
    db = StateDB(path)
    try:
        _every_record(db)
        db.put("pods", "uid-001", {"pod": "replaced"})  # the upsert still finds the (bucket, key)
        assert db.get("pods", "uid-001") == {"pod": "replaced"}
        assert len(db.items("pods")) == 40
    finally:
        db.close()
    version, sql = _layout(path)
    assert version == SCHEMA_VERSION == 2
    assert "WITHOUT ROWID" not in sql and "id INTEGER PRIMARY KEY" in sql
    db = StateDB(path)  # opened again: already schema 2, nothing converted twice
    try:
        assert db.get("pods", "uid-002") == RECORDS[("pods", "uid-002")]
        assert db.get("pods", "uid-001") == {"pod": "replaced"}
    finally:
        db.close()


def test_a_failed_conversion_leaves_the_schema_1_file_as_it_was(short_dir: Path) -> None:
    path = short_dir / "state.db"
    _schema_1_file(path)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE kv_v1 (x)")  # the conversion's temporary name is taken: it fails midway
    conn.close()
    with pytest.raises(StateDamaged, match=r"state\.db: cannot open the state database: .*kv_v1"):
        StateDB(path)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'kv'").fetchone()[0]
        assert "WITHOUT ROWID" in sql
        assert conn.execute("SELECT count(*) FROM kv").fetchone()[0] == len(RECORDS)
    finally:
        conn.close()


def test_a_new_file_is_schema_2(short_dir: Path) -> None:
    path = short_dir / "state.db"
    StateDB(path).close()
    version, sql = _layout(path)
    assert version == 2 and "WITHOUT ROWID" not in sql


def test_a_newer_schema_is_refused(short_dir: Path) -> None:
    path = short_dir / "state.db"
    StateDB(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 9")
    conn.close()
    with pytest.raises(StartupError, match=r"state\.db: state database schema 9, expected 2 \(written by a newer"):
        StateDB(path)
