"""StateDB's document encoding: orjson's speed, json.dumps's meaning, for every document.

Table: each value is stored and read back through a real database; what comes back must be
what json.dumps/json.loads gave before (NaN and Infinity kept, tuples as lists, integer keys
as strings, integers beyond 64 bits exact), and types json refuses are still refused.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from nodeagent.state.db import StateDB, encode

CASES: list[tuple[str, Any]] = [
    ("plain", {"b": 1, "a": [1, 2.5, True, None, "x"], "c": {"z": {}, "y": []}}),
    ("non-ascii", {"name": "café ✓", "emoji": "\U0001f600"}),
    ("tuples", {"t": (1, (2, 3)), "l": [(4,)]}),
    ("int keys", {"numa": {1: [3], 0: [1, 2]}}),
    ("big int", {"n": 1 << 70, "m": -(1 << 64)}),
    ("infinity", {"finishAt": math.inf, "low": -math.inf}),
    ("floats", {"t": 1795493620.8986237, "e": 1e-7, "big": 1e300, "whole": 2.0}),
]


@pytest.mark.parametrize(("name", "value"), CASES, ids=[c[0] for c in CASES])
def test_round_trip_as_json(tmp_path: Path, name: str, value: Any) -> None:
    db = StateDB(tmp_path / "state.db")
    db.put("b", name, value)
    expected = json.loads(json.dumps(value, separators=(",", ":"), sort_keys=True))
    assert db.get("b", name) == expected
    assert json.loads(encode(value)) == expected
    db.close()


def test_nan_kept() -> None:
    back = json.loads(encode({"x": math.nan}))["x"]
    assert isinstance(back, float) and math.isnan(back)
    nested = json.loads(encode({"a": [None, {"b": math.nan}], "c": None}))
    assert nested["a"][0] is None and math.isnan(nested["a"][1]["b"]) and nested["c"] is None


@pytest.mark.parametrize("value", [math.nan, [math.nan], [1, math.inf], {"a": "/dev/null", "b": -math.inf},
                                   {"x": ["null", math.nan]}])
def test_non_finite_found_wherever_it_is(value: Any) -> None:
    """Wherever orjson would write a non-finite float as null (first in an array, after a comma,
    as a member, the whole document), the text is json.dumps's."""
    assert encode(value) == json.dumps(value, separators=(",", ":"), sort_keys=True)


def test_null_inside_strings_is_plain_text() -> None:
    value = {"host_path": "/dev/null", "l": ["nullable", "x:null"], "n": None}
    assert encode(value) == json.dumps(value, separators=(",", ":"), sort_keys=True)


def test_sorted_compact() -> None:
    assert encode({"b": 1, "a": {"d": 2, "c": [1, 2]}}) == '{"a":{"c":[1,2],"d":2},"b":1}'


def test_refused_as_json_refuses() -> None:
    with pytest.raises(TypeError):
        encode({"s": {1, 2}})
    with pytest.raises(TypeError):
        encode({1: "a", "b": 2, "c": object()})
