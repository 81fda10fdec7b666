"""The object store's SQLite file: one row per object, an owner index, the resourceVersion counter.

Only this module speaks SQL. It keeps no cache and makes no decisions: `ObjectStore`
owns the connection's transactions (BEGIN IMMEDIATE ... COMMIT, a SAVEPOINT per
operation) and calls these helpers inside them. WAL with synchronous=NORMAL as in
nodeagent/state/db.py: a committed write survives a process crash.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from nodeagent.errors import StartupError, StateDamaged
from nodeagent.state.db import check_integrity, probe_writable
from nodeagent.state.marker import RESET_HINT, Marker
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
CREATE TABLE IF NOT EXISTS marker (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
"""
"""`marker` holds the state marker shared with state.db (nodeagent/state/marker.py); added without a
schema bump, as older files simply lack it."""

_MIGRATE_1_TO_2 = """
ALTER TABLE objects RENAME TO objects_v1;
DROP INDEX IF EXISTS objects_uid;
""" + _OBJECTS + """
INSERT INTO objects(kind, namespace, name, uid, rv, body) SELECT kind, namespace, name, uid, rv, body FROM objects_v1;
DROP TABLE objects_v1;
PRAGMA user_version = 2;
"""


_LONG_DIGITS = re.compile(r"\d{19}")
"""A run of 19 digits: a number orjson might not read exactly (it reads integers beyond 64 bits as floats)."""


def loads(body: str) -> Any:
    """The stored JSON text back as a value, exactly as json.loads reads it. orjson reads the store at
    start about 3 times faster (the restart to ready read every object with json, issue 25), but reads
    an integer beyond 64 bits as a float and refuses what the json module accepts beyond JSON (inf,
    NaN, lone surrogates): a body with a run of 19 digits anywhere, or one orjson refuses, is read by
    the json module (whose ValueError stays the caller's error)."""
    if _LONG_DIGITS.search(body) is None:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return json.loads(body)


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
        self.path = path
        try:
            self.conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=30.0)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            check_integrity(self.conn, path)
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 1:
                # one transaction: a crash mid-way leaves the schema-1 file as it was
                self.conn.executescript("BEGIN IMMEDIATE;" + _MIGRATE_1_TO_2 + "COMMIT;")
                version = SCHEMA_VERSION
            if version not in (0, SCHEMA_VERSION):
                raise StartupError(f"{path}: object store schema {version}, expected {SCHEMA_VERSION} "
                                   "(written by a newer nodeagent?)")
            if version == SCHEMA_VERSION:
                self._check_tables()
            self.conn.executescript(_SCHEMA)
            if version == 0:
                self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            probe_writable(self.conn)
        except sqlite3.DatabaseError as err:
            raise StateDamaged(f"{path}: cannot open the object store: {err}; {RESET_HINT}") from err

    def _check_tables(self) -> None:
        """A schema-2 file must still have its tables: `CREATE TABLE IF NOT EXISTS` would silently
        replace a dropped one with an empty one."""
        have = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = sorted({"objects", "owners", "counters"} - have)
        if missing:
            raise StateDamaged(f"{self.path}: table {', '.join(missing)} is missing from the object store; "
                               f"{RESET_HINT}")

    # --- reads (no transaction needed) ---

    def load(self) -> Iterator[tuple[Key, Obj]]:
        """Every stored object; StateDamaged for an unreadable page or body (a start-up read)."""
        try:
            for kind, ns, name, body in self.conn.execute("SELECT kind, namespace, name, body FROM objects"):
                try:
                    obj = loads(body)
                except ValueError as err:
                    raise StateDamaged(f"{self.path}: stored {kind} {ns}/{name} is not JSON: {err}; "
                                       f"{RESET_HINT}") from err
                yield (kind, ns, name), obj
        except sqlite3.DatabaseError as err:
            raise StateDamaged(f"{self.path}: cannot read the object store: {err}; {RESET_HINT}") from err

    def read_marker(self) -> Marker | None:
        """The state marker shared with state.db; None in a new or emptied file."""
        rows = dict(self.conn.execute("SELECT name, value FROM marker").fetchall())
        try:
            return Marker(rows["id"], int(rows["generation"]))
        except (KeyError, ValueError):
            return None

    def write_marker(self, marker: Marker) -> None:
        """Commits on its own: called at start, before any other write."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany(
                "INSERT INTO marker(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                [("id", marker.state_id), ("generation", str(marker.generation))],
            )
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

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

    def put(self, key: Key, obj: Obj, owner_uids: list[str] | None, body: str | None = None) -> int:
        """Insert or replace the row; `owner_uids` None means the owners did not change; `body`: the
        object's JSON (dumps) when the caller has it already (the write's size check encodes it).

        Returns the length of the row's JSON text: the watch history's size estimate for the
        object, known here for free since every write encodes it anyway."""
        meta = obj["metadata"]
        if body is None:
            body = dumps(obj)
        self.conn.execute(
            "INSERT INTO objects(kind, namespace, name, uid, rv, body) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(kind, namespace, name) DO UPDATE SET uid = excluded.uid, rv = excluded.rv, "
            "body = excluded.body",
            (*key, meta["uid"], int(meta["resourceVersion"]), body),
        )
        if owner_uids is not None:
            self._set_owners(key, owner_uids)
        return len(body)

    def remove(self, key: Key, had_owners: bool) -> int:
        """Delete the row; returns the length of the JSON text it held (as put's answer, 0 when there was
        none): the DELETED event's size estimate for the watch history, read by SQLite from the row it
        deletes, in C without the GIL, where encoding the object again held a worker thread on the GIL
        ~100 ms for a pod of 10,000 containers, and the event loop with it (issue 25)."""
        rows = self.conn.execute(
            "DELETE FROM objects WHERE kind = ? AND namespace = ? AND name = ? RETURNING length(body)", key).fetchall()
        if had_owners:
            self._set_owners(key, [])
        return int(rows[0][0]) if rows else 0

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
