"""The store's file: JSON text and copies (orjson for speed, the json module's text, fallbacks for
what orjson refuses: integers beyond 64 bits, values that are not JSON) and the schema version
(schema 1 files are migrated, unknown ones refused)."""

from __future__ import annotations

import datetime
import json
import sqlite3
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodeagent.errors import StartupError
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.store.meta import clone
from nodeagent.store.sqlite import dumps
from nodeagent.util.clock import FakeClock

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_dumps_is_the_json_modules_compact_text(value: Any) -> None:
    assert dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@given(json_values)
def test_clone_is_an_equal_independent_copy(value: Any) -> None:
    before = json.dumps(value)
    copy = clone([value])
    assert copy == [value]
    _change_every_container(copy)
    assert json.dumps(value) == before  # nothing of the original was shared


def _change_every_container(value: Any) -> None:
    children = value if isinstance(value, list) else list(value.values())
    for child in children:
        if isinstance(child, (list, dict)):
            _change_every_container(child)
    if isinstance(value, list):
        value.append("changed")
    else:
        value["\x00changed"] = True


def test_clone_keeps_what_orjson_refuses() -> None:
    when = datetime.datetime(2026, 11, 22, tzinfo=datetime.UTC)
    nested = {"a": [1, {"b": 2**80}], "t": when}
    copy = clone(nested)
    assert copy == nested and copy["a"][1] is not nested["a"][1]


def test_unicode_and_big_numbers_survive_a_reopen(tmp_path: Any) -> None:
    path = tmp_path / "objects.db"
    store = ObjectStore(path, builtin_kinds(), FakeClock())
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "annotations": {"note": "größe ✓", "big": str(2**80)}}, "spec": {"priority": 2**70}})
    store.close()
    again = ObjectStore(path, builtin_kinds(), FakeClock())
    got = again.get("Pod", "default", "p")
    assert got["metadata"]["annotations"] == {"note": "größe ✓", "big": str(2**80)}
    assert got["spec"]["priority"] == 2**70
    again.close()


SCHEMA_1 = """
CREATE TABLE objects (kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, uid TEXT NOT NULL,
    rv INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (kind, namespace, name)) WITHOUT ROWID;
CREATE INDEX objects_uid ON objects(uid);
CREATE TABLE owners (owner_uid TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY (owner_uid, kind, namespace, name)) WITHOUT ROWID;
CREATE INDEX owners_dependent ON owners(kind, namespace, name);
CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
PRAGMA user_version = 1;
"""


def test_schema_1_file_is_migrated_with_its_objects(tmp_path: Any) -> None:
    """Stores written before schema 2 (WITHOUT ROWID objects) open with every object, owner and
    version kept, and go on from there."""
    path = tmp_path / "objects.db"
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA_1)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "7", "generation": 1,
        "creationTimestamp": "2026-11-22T00:00:00Z"}, "spec": {}}
    conn.execute("INSERT INTO objects VALUES ('Pod', 'default', 'p', 'u1', 7, ?)", (json.dumps(pod),))
    conn.commit()
    conn.close()
    store = ObjectStore(path, builtin_kinds(), FakeClock())
    assert store.get("Pod", "default", "p")["metadata"]["uid"] == "u1"
    assert store.resource_version == 7
    assert store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"}})["metadata"][
        "resourceVersion"] == "8"
    store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    assert conn.execute("SELECT COUNT(*) FROM objects").fetchone()[0] == 2
    conn.close()


def test_unknown_schema_is_refused(tmp_path: Any) -> None:
    path = tmp_path / "objects.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 9")
    conn.close()
    with pytest.raises(StartupError, match="object store schema 9, expected 2"):
        ObjectStore(path, builtin_kinds(), FakeClock())
