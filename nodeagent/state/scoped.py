"""One node's view of a StateDB shared by many nodes: its buckets carry the node's prefix.

Exists for the full virtual nodes (NodeAgentConfiguration.nodes): a thousand nodes in one
process would otherwise open a thousand SQLite databases, each with its own connection, page
cache, WAL and shared-memory file (tens of milliseconds and hundreds of KiB per node). The
view is a StateDB to every subsystem (same calls, same commit-before-return guarantee), and
writes of different nodes never meet since every bucket name is prefixed. The shared database
is closed by its owner; closing a view does nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nodeagent.state.db import StateDB, Txn


class _ScopedTxn(Txn):
    def __init__(self, conn: sqlite3.Connection, prefix: str) -> None:
        super().__init__(conn)
        self._prefix = prefix

    def put(self, bucket: str, key: str, value: Any) -> None:
        super().put(self._prefix + bucket, key, value)

    def delete(self, bucket: str, key: str) -> None:
        super().delete(self._prefix + bucket, key)

    def delete_bucket(self, bucket: str) -> None:
        super().delete_bucket(self._prefix + bucket)


class ScopedStateDB(StateDB):
    """The buckets of `shared` whose names start with `prefix`, as a StateDB of their own."""

    def __init__(self, shared: StateDB, prefix: str) -> None:  # no super().__init__: nothing to open
        if not prefix or "\x00" in prefix:
            raise ValueError(f"a state prefix must be a non-empty string, got {prefix!r}")
        self.path = shared.path
        self._lock = shared._lock
        self._conn = shared._conn
        self._prefix = prefix

    def get(self, bucket: str, key: str) -> Any | None:
        return super().get(self._prefix + bucket, key)

    def items(self, bucket: str) -> list[tuple[str, Any]]:
        return super().items(self._prefix + bucket)

    @contextmanager
    def transaction(self) -> Iterator[Txn]:
        with super().transaction():
            yield _ScopedTxn(self._conn, self._prefix)

    def close(self) -> None:
        return None
