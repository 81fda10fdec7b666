"""The object store's SQLite file: one row per object, an owner index, the resourceVersion counter.

Only this module speaks SQL. It keeps no cache and makes no decisions: `ObjectStore`
owns the connection's transactions (BEGIN IMMEDIATE ... COMMIT, a SAVEPOINT per
operation) and calls these helpers inside them. WAL with synchronous=NORMAL as in
nodeagent/state/db.py: a committed write survives a process crash.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import orjson

from nodeagent.store.kinds import Obj
from nodeagent.store.meta import Key

SCHEMA_VERSION = 2

_OBJECTS = """
CREATE TABLE IF NOT EXISTS objects (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    uid TEXT NOT NULL,
    rv INTEGER NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (kind, namespace, name)
);
CREATE INDEX IF NOT EXISTS objects_uid ON objects(uid);
"""
"""A rowid table: rows are whole objects (often 1-2 KiB), and in a WITHOUT ROWID table (schema
1) rows past ~1/20 of a page spill into overflow pages, which made every write and commit
about twice as expensive."""

_SCHEMA = _OBJECTS + """
CREATE TABLE IF NOT EXISTS owners (
    owner_uid TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (owner_uid, kind, namespace, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS owners_dependent ON owners(kind, namespace, name);
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
"""

_MIGRATE_1_TO_2 = """
ALTER TABLE objects RENAME TO objects_v1;
DROP INDEX IF EXISTS objects_uid;
""" + _OBJECTS + """
INSERT INTO objects(kind, namespace, name, uid, rv, body) SELECT kind, namespace, name, uid, rv, body FROM objects_v1;
DROP TABLE objects_v1;
PRAGMA user_version = 2;
"""


def dumps(obj: Obj) -> str:
    """Compact UTF-8 JSON, the same text as json.dumps(separators=(",", ":"), ensure_ascii=False)
    for JSON values; orjson is ~10x faster and every store write encodes its object. Integers
    beyond 64 bits (which orjson refuses) go through the json module."""
    try:
        return orjson.dumps(obj).decode()
    except orjson.JSONEncodeError:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class ObjectsDB:
    """The connection plus the handful of statements the store needs."""

    def __init__(self, path: Path | str) -> None:
        memory = str(path) == ":memory:"
        if not memory:
            Path(path).parent.mkdir(mode=0o750, parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=30.0)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 1:
            # one transaction: a crash mid-way leaves the schema-1 file as it was
            self.conn.executescript("BEGIN IMMEDIATE;" + _MIGRATE_1_TO_2 + "COMMIT;")
            version = SCHEMA_VERSION
        if version not in (0, SCHEMA_VERSION):
            raise sqlite3.DatabaseError(f"{path}: object store schema {version}, expected {SCHEMA_VERSION}")
        self.conn.executescript(_SCHEMA)
        if version == 0:
            self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    # --- reads (no transaction needed) ---

    def load(self) -> Iterator[tuple[Key, Obj]]:
        for kind, ns, name, body in self.conn.execute("SELECT kind, namespace, name, body FROM objects"):
            yield (kind, ns, name), json.loads(body)

    def counter(self) -> int:
        """The last resourceVersion handed out: the counter row or the newest row, whichever is higher."""
        row = self.conn.execute("SELECT value FROM counters WHERE name = 'resourceVersion'").fetchone()
        newest = self.conn.execute("SELECT MAX(rv) FROM objects").fetchone()[0]
        return max(0 if row is None else int(row[0]), 0 if newest is None else int(newest))

    def uid_exists(self, uid: str) -> bool:
        return self.conn.execute("SELECT 1 FROM objects WHERE uid = ? LIMIT 1", (uid,)).fetchone() is not None

    def dependents(self, owner_uid: str) -> list[Key]:
        rows = self.conn.execute(
            "SELECT kind, namespace, name FROM owners WHERE owner_uid = ? ORDER BY kind, namespace, name",
            (owner_uid,),
        )
        return [(k, ns, n) for k, ns, n in rows]

    # --- writes (inside the store's transaction) ---

    def put(self, key: Key, obj: Obj, owner_uids: list[str] | None) -> None:
        """Insert or replace the row; `owner_uids` None means the owners did not change."""
        meta = obj["metadata"]
        self.conn.execute(
            "INSERT INTO objects(kind, namespace, name, uid, rv, body) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(kind, namespace, name) DO UPDATE SET uid = excluded.uid, rv = excluded.rv, "
            "body = excluded.body",
            (*key, meta["uid"], int(meta["resourceVersion"]), dumps(obj)),
        )
        if owner_uids is not None:
            self._set_owners(key, owner_uids)

    def remove(self, key: Key, had_owners: bool) -> None:
        self.conn.execute("DELETE FROM objects WHERE kind = ? AND namespace = ? AND name = ?", key)
        if had_owners:
            self._set_owners(key, [])

    def _set_owners(self, key: Key, owner_uids: list[str]) -> None:
        self.conn.execute("DELETE FROM owners WHERE kind = ? AND namespace = ? AND name = ?", key)
        if owner_uids:
            self.conn.executemany(
                "INSERT OR IGNORE INTO owners(owner_uid, kind, namespace, name) VALUES (?, ?, ?, ?)",
                [(uid, *key) for uid in owner_uids],
            )

    def set_counter(self, value: int) -> None:
        self.conn.execute(
            "INSERT INTO counters(name, value) VALUES ('resourceVersion', ?) "
            "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            (value,),
        )

    def execute(self, sql: str) -> None:
        self.conn.execute(sql)

    def close(self) -> None:
        self.conn.close()
