"""The store's JSON text and copies: orjson for speed, the json module's text, and fallbacks for
what orjson refuses (integers beyond 64 bits, values that are not JSON)."""

from __future__ import annotations

import datetime
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nodeagent.clock import FakeClock
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.store.meta import clone
from nodeagent.store.sqlite import dumps

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
