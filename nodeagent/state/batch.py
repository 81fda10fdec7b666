"""One commit for the writes several subsystems make while admitting one pod.

The kubelet's resource managers each write their checkpoint as they allocate; nodeagent's
write to one SQLite database, where every commit costs a WAL append and three statements.
The topology manager admits a pod through the CPU, memory and device managers in turn; it
opens a batch around that (`batch(db)`), the managers hand their writes to `write()`
instead of committing, and the topology manager commits them all in one transaction
before it answers: the allocations are still durable before the pod is acknowledged, and
a refusal part way discards them (the managers' `remove` then undoes their memory).

The batch lives in a ContextVar, so it only captures writes made by the admitting task:
a release running in another task at the same time still commits on its own. A write is
staged under a key (bucket, record): staging the same record again replaces the earlier
write, so a record touched by every container of a pod is encoded once, at commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from nodeagent.state.db import StateDB, Txn

Write = Callable[[Txn], None]

_current: ContextVar[WriteBatch | None] = ContextVar("nodeagent_state_batch", default=None)


class WriteBatch:
    """Writes staged for one database, applied in staging order by `commit`."""

    def __init__(self, db: StateDB) -> None:
        self.db = db
        self._writes: dict[tuple[str, str], Write] = {}

    def stage(self, key: tuple[str, str], write: Write) -> None:
        self._writes[key] = write

    def __len__(self) -> int:
        return len(self._writes)

    def commit(self) -> None:
        """Apply every staged write in one transaction (nothing to do: no transaction)."""
        writes, self._writes = self._writes, {}
        if not writes:
            return
        with self.db.transaction() as txn:
            for write in writes.values():
                write(txn)


@contextmanager
def batch(db: StateDB) -> Iterator[WriteBatch]:
    """Stage `write()` calls for `db` made in this context until the caller commits the batch.

    Leaving the block (normally or not) stops staging; the caller commits after a success
    and drops the batch otherwise.
    """
    staged = WriteBatch(db)
    token = _current.set(staged)
    try:
        yield staged
    finally:
        _current.reset(token)


def staging(db: StateDB) -> bool:
    """A batch for `db` is open in this context: whoever opened it commits what is written now
    (the pod manager stages a whole admission with the pod's record)."""
    staged = _current.get()
    return staged is not None and staged.db is db


@contextmanager
def suspended() -> Iterator[None]:
    """Writes in this block commit at once even inside a batch: a rollback's, since the batch
    whose writes it undoes is dropped, not committed."""
    token = _current.set(None)
    try:
        yield
    finally:
        _current.reset(token)


def write(db: StateDB, key: tuple[str, str], apply: Write) -> None:
    """Commit `apply` now, or stage it when this context admits under a batch for `db`."""
    staged = _current.get()
    if staged is not None and staged.db is db:
        staged.stage(key, apply)
        return
    with db.transaction() as txn:
        apply(txn)
