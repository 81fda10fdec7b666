"""The kubelet state files nodeagent writes, byte for byte as the v1.37.2 kubelet's own code writes them.

The golden files are what the kubelet's MarshalCheckpoint wrote for the states of states.py
(tests/fixtures/kubelet-checkpoints read nodeagent's file with the real packages, then let them
write it again); tests/integration/test_kubelet_state_files.py repeats that comparison live
wherever Go and the module proxy are available. Here: no Go needed."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from nodeagent.kubeletstate import formats, gohash
from nodeagent.kubeletstate.gohash import Map, NilPointer, Pointer, Scalar, Slice, Struct
from tests.unit.kubeletstate.states import STATES

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", sorted(STATES))
def test_bytes_equal_the_kubelets(name: str) -> None:
    assert STATES[name][1]().decode() == (GOLDEN / f"{name}.json").read_text()


def test_every_state_has_a_golden_file() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(STATES)


def test_data_checksums_cover_the_data_string() -> None:
    doc = json.loads(STATES["cpu-static"][1]())
    assert doc["dataChecksum"] == gohash.fnv32a(("(string)" + doc["data"]).encode())
    assert json.loads(doc["data"])["entries"] == doc["entries"]
    dra = json.loads(STATES["dra"][1]())
    assert dra["Checksum"] == zlib.crc32(dra["Data"].encode())


@pytest.mark.parametrize(("value", "text"), [
    (Scalar("string", "a b"), "(string)a b"),
    (Scalar("bool", False), "(bool)false"),
    (Slice("[]int", None), "([]int)<nil>"),
    (Slice("[]int", []), "([]int)[]"),
    (Map("map[string]int", None), "(map[string]int)<nil>"),
    (Map("map[int]string", {10: Scalar("string", "x"), -1: Scalar("string", "y"), 2: Scalar("string", "z")}),
     "(map[int]string)map[-1:y 2:z 10:x]"),
    (Pointer(Struct("p.T", (("A", Scalar("int", 1)), ("B", Slice("[]string", [Scalar("string", "s")]))))),
     "(*p.T){A:(int)1 B:([]string)[s]}"),
    (Struct("p.T", (("P", NilPointer("*types.UID")),)), "(p.T){P:(*types.UID)<nil>}"),
    (Map("map[string]*p.T", {"k": Pointer(Struct("p.T", (("A", Scalar("int", 1)),)))}),
     "(map[string]*p.T)map[k:<*>{A:(int)1}]"),
    (Slice("[]p.T", [Struct("p.T", (("A", Scalar("uint64", 7)),))]), "([]p.T)[{A:(uint64)7}]"),
])
def test_spew_rendering(value: gohash.GoValue, text: str) -> None:
    """go-spew `%#v` with the kubelet's hash settings: types on struct fields and at the top,
    none on map keys, map values and slice items; pointers as (*T) or <*>."""
    assert gohash.spew(value) == text


def test_fnv32a_reference_values() -> None:
    assert gohash.fnv32a(b"") == 0x811C9DC5
    assert gohash.fnv32a(b"a") == 0xE40C292C
    assert gohash.fnv32a(b"foobar") == 0xBF9CF968


def test_go_json_escapes_like_encoding_json() -> None:
    assert gohash.go_json({"a": "<&>\u2028", "b": [1, None], "c": "é"}) == \
        '{"a":"\\u003c\\u0026\\u003e\\u2028","b":[1,null],"c":"é"}'


def test_paths_are_the_kubelets() -> None:
    assert (formats.CPU_FILE, formats.MEMORY_FILE, formats.DEVICES_FILE, formats.DRA_FILE) == (
        "cpu_manager_state", "memory_manager_state", "kubelet_internal_checkpoint", "dra_manager_state")
