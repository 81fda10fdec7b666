"""The marker state.db and objects.db share: a daemon that had state refuses to start (StateDamaged,
naming the file) when objects.db is missing, emptied, lost a table, lost its WAL, or is garbage; a
first start is adopted; `move_aside` keeps the old files next to the new ones."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from nodeagent.errors import StartupError, StateDamaged
from nodeagent.state.db import StateDB
from nodeagent.state.marker import Marker, check_and_advance, decide, move_aside
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

STATE, OBJECTS = Path("/s/state.db"), Path("/s/objects.db")


def _pod(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}


def _start(state_dir: Path, pods: tuple[str, ...] = (), close: bool = True) -> tuple[StateDB, ObjectStore]:
    """What the daemon does at start: open both, check and advance the marker, then write."""
    db = StateDB(state_dir / "state.db")
    store = ObjectStore(state_dir / "objects.db", builtin_kinds(), FakeClock())
    try:
        check_and_advance(db, store, state_dir / "state.db", state_dir / "objects.db")
        for name in pods:
            store.create(_pod(name))
    finally:
        if close:
            store.close()
            db.close()
    return db, store


def test_decide_first_start_and_following_starts() -> None:
    assert decide(None, None, STATE, OBJECTS, "new") == Marker("new", 1)
    assert decide(Marker("a", 3), Marker("a", 3), STATE, OBJECTS, "new") == Marker("a", 4)
    # a crash between the objects.db write and the state.db write of the last start
    assert decide(Marker("a", 3), Marker("a", 4), STATE, OBJECTS, "new") == Marker("a", 5)


@pytest.mark.parametrize(("state", "objects", "named", "says"), [
    (Marker("a", 3), None, OBJECTS, "missing, empty or lost its tables"),
    (None, Marker("a", 3), STATE, "missing or empty"),
    (Marker("a", 3), Marker("b", 3), OBJECTS, "two different daemons"),
    (Marker("a", 3), Marker("a", 2), OBJECTS, "lost its last commits"),
    (Marker("a", 3), Marker("a", 5), STATE, "lost its last commits"),
])
def test_decide_refuses_markers_that_do_not_belong_together(
    state: Marker | None, objects: Marker | None, named: Path, says: str
) -> None:
    with pytest.raises(StateDamaged) as err:
        decide(state, objects, STATE, OBJECTS, "new")
    text = str(err.value)
    assert text.startswith(f"{named}: ") and says in text
    assert "nodeagent run --reset-state" in text
    assert isinstance(err.value, StartupError)  # the CLI's exit status 2


def test_first_start_adopts_and_the_next_start_passes(tmp_path: Path) -> None:
    _start(tmp_path, ("a",))
    _start(tmp_path, ("b",))
    db = StateDB(tmp_path / "state.db")
    assert db.read_marker() is not None and db.read_marker().generation == 2
    db.close()


def _missing(p: Path) -> None:
    p.unlink()


def _truncated(p: Path) -> None:
    p.write_bytes(b"")


def _table_dropped(p: Path) -> None:
    conn = sqlite3.connect(p)
    conn.execute("DROP TABLE objects")
    conn.close()


def _garbage(p: Path) -> None:
    p.write_bytes(b"\x00not a database\xff" * 512)


def _page_damaged(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[4096 + 8:4096 + 64] = b"\xa5" * 56  # the second page's header and cell pointers
    p.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_missing, _truncated, _table_dropped, _garbage, _page_damaged])
def test_damaged_objects_db_refuses_with_its_name(tmp_path: Path, damage: Callable[[Path], None]) -> None:
    _start(tmp_path, ("a", "b"))
    damage(tmp_path / "objects.db")
    with pytest.raises(StateDamaged, match=f"^{tmp_path / 'objects.db'}: .*--reset-state"):
        _start(tmp_path)


def test_damaged_state_db_refuses_with_its_name(tmp_path: Path) -> None:
    _start(tmp_path, ("a",))
    (tmp_path / "state.db").write_bytes(b"")
    with pytest.raises(StateDamaged, match=f"^{tmp_path / 'state.db'}: .*--reset-state"):
        _start(tmp_path)
    _garbage(tmp_path / "state.db")
    with pytest.raises(StateDamaged, match=f"^{tmp_path / 'state.db'}: cannot open"):
        StateDB(tmp_path / "state.db")


def test_objects_wal_lost_after_a_crash_refuses(tmp_path: Path) -> None:
    """A crash leaves the commits since the start in objects.db-wal; without it the start is behind."""
    _start(tmp_path, ("a",))  # closed: checkpointed into objects.db
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    db, store = _start(tmp_path, ("b",), close=False)  # still open: the new marker sits in the WAL
    shutil.copy(tmp_path / "objects.db", crashed / "objects.db")  # the main file only: WAL lost
    shutil.copy(tmp_path / "state.db", crashed / "state.db")
    shutil.copy(tmp_path / "state.db-wal", crashed / "state.db-wal")
    store.close()
    db.close()
    with pytest.raises(StateDamaged, match=f"^{crashed / 'objects.db'}: lost its last commits"):
        _start(crashed)


def test_move_aside_keeps_each_file_with_its_wal(tmp_path: Path) -> None:
    for name in ("state.db", "state.db-wal", "objects.db"):
        (tmp_path / name).write_text(name)
    kept = move_aside((tmp_path / "state.db", tmp_path / "objects.db"), now=1_795_000_000.0)
    assert sorted(p.name for p in kept) == [
        "objects.db.20261118T110640Z", "state.db.20261118T110640Z", "state.db.20261118T110640Z-wal"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in kept)
    assert (tmp_path / "state.db.20261118T110640Z-wal").read_text() == "state.db-wal"
    (tmp_path / "state.db").write_text("again")
    with pytest.raises(StateDamaged, match="exists already"):
        move_aside((tmp_path / "state.db",), now=1_795_000_000.0)
    assert (tmp_path / "state.db").read_text() == "again"
