"""One SQLite database (WAL) per daemon holding every subsystem's durable state.

Subsystems store JSON documents of their own model (never protobuf messages) in named
buckets. `put`, `delete` and `transaction()` commit before returning, so a caller may
acknowledge a change right after. synchronous=NORMAL in WAL mode survives a crash or
SIGKILL of the process at any point (the database is never corrupt and a committed
transaction is never lost to a process crash); only an OS crash may drop the last
commits, the trade-off the kubelet's checkpoint files make as well.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from nodeagent.errors import StartupError, StateDamaged
from nodeagent.state.marker import BUCKET as MARKER_BUCKET
from nodeagent.state.marker import KEY as MARKER_KEY
from nodeagent.state.marker import RESET_HINT, Marker

SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
    id INTEGER PRIMARY KEY,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    UNIQUE (bucket, key)
);
"""
"""A rowid table, as the object store's schema 2 (nodeagent/store/sqlite.py). Schema 1 (files
without a user_version) was WITHOUT ROWID: there a row past ~1/20 of a page spills into overflow
pages, and pod records are 1-2 KiB, which made each admission's commit 30-50% dearer."""

_MIGRATE_1_TO_2 = """
ALTER TABLE kv RENAME TO kv_v1;
""" + _SCHEMA + """
INSERT INTO kv(bucket, key, value) SELECT bucket, key, value FROM kv_v1 ORDER BY bucket, key;
DROP TABLE kv_v1;
PRAGMA user_version = 2;
"""


def check_integrity(conn: sqlite3.Connection, path: Path | str) -> None:
    """PRAGMA quick_check: damaged pages refuse the start here, not as a traceback later.

    Reads every page once (O(size), milliseconds for our databases); quick_check skips the
    index-content cross-check of integrity_check, which would cost far more on a large store.
    """
    problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check(5)").fetchall()]
    if problems != ["ok"]:
        found = " ".join("; ".join(problems).split())  # one line: SQLite's report spans several
        raise StateDamaged(f"{path}: the database is damaged: {found}; {RESET_HINT}")


_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def probe_writable(conn: sqlite3.Connection) -> None:
    """Take the write lock once and let it go: a database SQLite can read but not write (its -shm is
    not a file it can map) fails here with "attempt to write a readonly database", at open, where
    the caller names the file, instead of at the first write (a raw traceback, exit 1)."""
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("ROLLBACK")


def encode(value: Any) -> str:
    """A document as compact JSON with sorted keys, meaning exactly what json.dumps would write.

    orjson is over ten times faster than json on the records admission writes. The one value
    it writes differently is a non-finite float (NaN, Infinity: null where json writes NaN),
    so text with a null is kept only when it reads back equal to `value` (tuples and non-string
    keys then fail the comparison harmlessly); otherwise json.dumps, as before. A null value
    follows ':', '[' or ',' in compact JSON: "null" inside a string (a host path /dev/null)
    needs no check.
    """
    try:
        text = orjson.dumps(value, option=_ORJSON_OPTIONS)
        if not _has_null_value(text) or orjson.loads(text) == value:
            return text.decode()
    except TypeError:  # orjson.JSONEncodeError: integers beyond 64 bits, types json refuses too
        pass
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _has_null_value(text: bytes) -> bool:
    """Whether compact JSON `text` may hold a null value (a string with ':null' says yes too)."""
    return b"null" in text and (
        text.startswith(b"null") or b":null" in text or b",null" in text or b"[null" in text)


class Txn:
    """Writes collected inside `StateDB.transaction()`; applied atomically at the end."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def put(self, bucket: str, key: str, value: Any) -> None:
        self._conn.execute(
            "INSERT INTO kv(bucket, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT(bucket, key) DO UPDATE SET value = excluded.value",
            (bucket, key, encode(value)),
        )

    def delete(self, bucket: str, key: str) -> None:
        self._conn.execute("DELETE FROM kv WHERE bucket = ? AND key = ?", (bucket, key))

    def delete_bucket(self, bucket: str) -> None:
        self._conn.execute("DELETE FROM kv WHERE bucket = ?", (bucket,))


class StateDB:
    """A tiny JSON key-value store over SQLite; thread-safe, one connection."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path) if str(path) != ":memory:" else None
        if self.path is not None:
            self.path.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, timeout=30.0
            )
        except sqlite3.DatabaseError as err:
            raise StateDamaged(f"{path}: cannot open the state database: {err}; {RESET_HINT}") from err
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            check_integrity(self._conn, path)
            self._open_schema(path)
        except sqlite3.DatabaseError as err:
            self._conn.close()
            raise StateDamaged(f"{path}: cannot open the state database: {err}; {RESET_HINT}") from err
        except StartupError:
            self._conn.close()
            raise

    def _open_schema(self, path: Path | str) -> None:
        """Create the table in a new file, convert a schema-1 file in place, refuse a newer one.

        Schema 1 never set user_version, so a version-0 file that already has `kv` is one. The
        conversion is one transaction: a crash mid-way leaves the schema-1 file as it was.
        """
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0 and self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kv'"
        ).fetchone():
            try:
                self._conn.executescript("BEGIN IMMEDIATE;" + _MIGRATE_1_TO_2 + "COMMIT;")
            except sqlite3.Error:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            version = SCHEMA_VERSION
        if version not in (0, SCHEMA_VERSION):
            raise StartupError(f"{path}: state database schema {version}, expected {SCHEMA_VERSION} "
                               "(written by a newer nodeagent?)")
        self._conn.executescript(_SCHEMA)
        if version == 0:
            self._conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        probe_writable(self._conn)


    @classmethod
    def memory(cls) -> StateDB:
        return cls(":memory:")

    def get(self, bucket: str, key: str) -> Any | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT value FROM kv WHERE bucket = ? AND key = ?", (bucket, key)
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def items(self, bucket: str) -> list[tuple[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT key, value FROM kv WHERE bucket = ? ORDER BY key", (bucket,)
            ).fetchall()
        return [(k, json.loads(v)) for k, v in rows]

    def put(self, bucket: str, key: str, value: Any) -> None:
        with self.transaction() as txn:
            txn.put(bucket, key, value)

    def delete(self, bucket: str, key: str) -> None:
        with self.transaction() as txn:
            txn.delete(bucket, key)

    @contextmanager
    def transaction(self) -> Iterator[Txn]:
        """All writes inside commit together when the block ends, or none on an exception."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield Txn(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def read_marker(self) -> Marker | None:
        """The state marker (nodeagent/state/marker.py); None in a new or emptied database."""
        return Marker.from_doc(self.get(MARKER_BUCKET, MARKER_KEY))

    def write_marker(self, marker: Marker) -> None:
        self.put(MARKER_BUCKET, MARKER_KEY, marker.to_doc())

    def close(self) -> None:
        with self._lock:
            self._conn.close()
