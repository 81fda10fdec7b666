"""The marker state.db and objects.db share, so a daemon that had state notices when one is gone.

Both databases open silently when empty: SQLite makes a missing or zero-length file a new
database, and `CREATE TABLE IF NOT EXISTS` replaces a dropped table. Without a check the daemon
would start with no pods after objects.db was lost (the kubelet reads its pods from the API
server and cannot lose them this way; our embedded store can). So each database holds the same
marker: a random state id written when the state is first created, and a start generation that
every start advances, objects.db first, then state.db.

At start the two markers must agree: the same id, and a generation in objects.db equal to
state.db's or one ahead (a crash between the two writes). A missing marker on one side, another
id, or objects.db behind (its WAL lost or corrupt after a crash, so its last commits are gone)
refuses the start with a message naming the file and the way out: `nodeagent run --reset-state`
moves both databases aside with a timestamp suffix and starts empty. Both markers missing is a
first start (or a state dir from before the marker), which is adopted.

Limit: a WAL lost after an automatic checkpoint within the same run is not seen; the generation
only covers what was committed since the start.

Pure decision (`decide`) plus two small helpers over the databases' marker accessors; the
file moves of `move_aside` are the only I/O here.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from nodeagent.errors import StateDamaged

BUCKET = "state"
KEY = "marker"
RESET_HINT = (
    "restore it from a backup, or start with empty state: nodeagent run --reset-state "
    "(moves state.db and objects.db aside with a timestamp suffix)"
)


@dataclass(frozen=True)
class Marker:
    """Which state this database belongs to (`state_id`) and up to which start it is complete."""

    state_id: str
    generation: int

    def to_doc(self) -> dict[str, object]:
        return {"id": self.state_id, "generation": self.generation}

    @staticmethod
    def from_doc(doc: object) -> Marker | None:
        if not isinstance(doc, dict):
            return None
        sid, gen = doc.get("id"), doc.get("generation")
        if not isinstance(sid, str) or not isinstance(gen, int) or isinstance(gen, bool):
            return None
        return Marker(sid, gen)


class MarkerHolder(Protocol):
    """What each database offers: read its marker (None when absent) and write it (committed)."""

    def read_marker(self) -> Marker | None: ...

    def write_marker(self, marker: Marker) -> None: ...


def decide(state: Marker | None, objects: Marker | None, state_path: Path, objects_path: Path,
           new_id: str) -> Marker:
    """The marker both databases get for this start; StateDamaged when they do not belong together."""
    if state is None and objects is None:
        return Marker(new_id, 1)
    if state is not None and objects is None:
        raise StateDamaged(
            f"{objects_path}: the object store is missing, empty or lost its tables, but {state_path} "
            f"records state {state.state_id} (start {state.generation}); {RESET_HINT}")
    if state is None and objects is not None:
        raise StateDamaged(
            f"{state_path}: the state database is missing or empty, but {objects_path} records state "
            f"{objects.state_id} (start {objects.generation}); {RESET_HINT}")
    assert state is not None and objects is not None
    if state.state_id != objects.state_id:
        raise StateDamaged(
            f"{objects_path}: belongs to state {objects.state_id}, but {state_path} to state "
            f"{state.state_id} (files of two different daemons); {RESET_HINT}")
    if objects.generation < state.generation:
        raise StateDamaged(
            f"{objects_path}: lost its last commits (it ends at start {objects.generation}, {state_path} at "
            f"start {state.generation}; was its -wal file lost or damaged?); {RESET_HINT}")
    if objects.generation > state.generation + 1:
        raise StateDamaged(
            f"{state_path}: lost its last commits (it ends at start {state.generation}, {objects_path} at "
            f"start {objects.generation}; was its -wal file lost or damaged?); {RESET_HINT}")
    return Marker(state.state_id, max(state.generation, objects.generation) + 1)


def check_and_advance(state_db: MarkerHolder, objects_db: MarkerHolder, state_path: Path,
                      objects_path: Path) -> Marker:
    """Refuse damaged state (StateDamaged), else write this start's marker: objects.db first."""
    marker = decide(state_db.read_marker(), objects_db.read_marker(), state_path, objects_path,
                    uuid.uuid4().hex)
    for holder, path in ((objects_db, objects_path), (state_db, state_path)):
        try:  # the first write of the start: a database SQLite opened but cannot write ends here
            holder.write_marker(marker)
        except sqlite3.Error as err:  # a -shm that is not a file: "attempt to write a readonly database"
            raise StateDamaged(f"{path}: cannot be written: {err} (are its -wal and -shm files regular files "
                               f"the daemon may write?); {RESET_HINT}") from None
    return marker


def aside_suffix(now: float) -> str:
    """`.20261124T002112Z`: the UTC time the files were moved aside."""
    return time.strftime(".%Y%m%dT%H%M%SZ", time.gmtime(now))


def move_aside(databases: Iterable[Path], now: float) -> list[Path]:
    """Rename each database and its -wal/-shm files to NAME.TIMESTAMP(-wal|-shm); returns the new paths.

    The suffix goes before `-wal`, so `sqlite3 objects.db.20261124T002112Z` opens the kept copy
    with its WAL. Missing files are skipped; an existing target is never overwritten (StateDamaged).
    """
    suffix = aside_suffix(now)
    moves: list[tuple[Path, Path]] = []
    for db in databases:
        for extra in ("", "-wal", "-shm"):
            src = db.with_name(db.name + extra)
            if src.exists() or src.is_symlink():
                moves.append((src, db.with_name(db.name + suffix + extra)))
    for _, dst in moves:
        if dst.exists() or dst.is_symlink():
            raise StateDamaged(f"{dst}: exists already; cannot move the state aside, try again in a second")
    for src, dst in moves:
        src.rename(dst)
    return [dst for _, dst in moves]
