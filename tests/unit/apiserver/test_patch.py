"""JSON patch and merge patch: results and errors as the API server (evanphx/json-patch v4) gives them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodeagent.apiserver.patch import MAX_OPERATIONS, PatchError, json_patch, merge_patch
from nodeagent.apiserver.patch.errors import REJECTED
from nodeagent.apiserver.schema.gotext import go_s, go_v

POD: dict[str, Any] = {
    "metadata": {"name": "web", "labels": {"app": "web", "a/b": "x", "m~n": "y"}},
    "spec": {"containers": [{"name": "c0", "image": "nginx"}, {"name": "c1", "image": "redis"}], "replicas": 1},
}


def _pod(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(POD)
    out.update(changes)
    return out


JSON_PATCH_CASES: list[tuple[str, list[Any], Any]] = [
    ("add member", [{"op": "add", "path": "/metadata/labels/tier", "value": "fe"}],
     {"metadata": {"labels": {"app": "web", "a/b": "x", "m~n": "y", "tier": "fe"}}}),
    ("add overwrites member", [{"op": "add", "path": "/metadata/labels/app", "value": "db"}],
     {"metadata": {"labels": {"app": "db", "a/b": "x", "m~n": "y"}}}),
    ("add inserts at index", [{"op": "add", "path": "/spec/containers/1", "value": {"name": "n"}}],
     {"spec": {"containers": ["c0", "n", "c1"]}}),
    ("add appends with -", [{"op": "add", "path": "/spec/containers/-", "value": {"name": "n"}}],
     {"spec": {"containers": ["c0", "c1", "n"]}}),
    ("add at len appends", [{"op": "add", "path": "/spec/containers/2", "value": {"name": "n"}}],
     {"spec": {"containers": ["c0", "c1", "n"]}}),
    ("add negative index counts from the end", [{"op": "add", "path": "/spec/containers/-3", "value": {"name": "n"}}],
     {"spec": {"containers": ["n", "c0", "c1"]}}),
    ("add without value sets null", [{"op": "add", "path": "/spec/x"}], {"spec": {"x": None}}),
    ("escaped tokens", [{"op": "replace", "path": "/metadata/labels/a~1b", "value": "1"},
                        {"op": "remove", "path": "/metadata/labels/m~0n"}],
     {"metadata": {"labels": {"app": "web", "a/b": "1"}}}),
    ("remove member", [{"op": "remove", "path": "/spec/replicas"}], {"spec": {"replicas": None}}),
    ("remove element", [{"op": "remove", "path": "/spec/containers/0"}], {"spec": {"containers": ["c1"]}}),
    ("remove negative element", [{"op": "remove", "path": "/spec/containers/-1"}], {"spec": {"containers": ["c0"]}}),
    ("replace member", [{"op": "replace", "path": "/spec/replicas", "value": 3}], {"spec": {"replicas": 3}}),
    ("replace absent member adds it (evanphx v4)", [{"op": "replace", "path": "/spec/paused", "value": True}],
     {"spec": {"paused": True}}),
    ("replace element", [{"op": "replace", "path": "/spec/containers/1/image", "value": "valkey"}],
     {"spec": {"image1": "valkey"}}),
    ("move", [{"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/role"}],
     {"metadata": {"labels": {"role": "web", "a/b": "x", "m~n": "y"}}}),
    ("move element", [{"op": "move", "from": "/spec/containers/0", "path": "/spec/containers/-"}],
     {"spec": {"containers": ["c1", "c0"]}}),
    ("copy", [{"op": "copy", "from": "/spec/containers/0", "path": "/spec/containers/0"}],
     {"spec": {"containers": ["c0", "c0", "c1"]}}),
    ("copy from an absent member copies null", [{"op": "copy", "from": "/spec/nope", "path": "/spec/x"}],
     {"spec": {"x": None}}),
    ("test passes then applies", [{"op": "test", "path": "/metadata/name", "value": "web"},
                                  {"op": "replace", "path": "/metadata/name", "value": "web2"}],
     {"metadata": {"name": "web2"}}),
    ("test of an absent member against null passes", [{"op": "test", "path": "/spec/nope", "value": None}], {}),
    ("test of a whole object",
     [{"op": "test", "path": "/spec/containers/0", "value": {"image": "nginx", "name": "c0"}}], {}),
    ("replace the root", [{"op": "replace", "path": "", "value": {"kind": "X"}}], {"root": {"kind": "X"}}),
]


def _expect(base: dict[str, Any], change: dict[str, Any]) -> Any:
    """Build the expected document from a compact description of what changed."""
    if "root" in change:
        return change["root"]
    out = copy.deepcopy(base)
    for section, fields in change.items():
        for key, value in fields.items():
            if key == "containers":
                by_name = {c["name"]: c for c in base["spec"]["containers"]}
                out["spec"]["containers"] = [by_name.get(v, {"name": v}) for v in value]
            elif key == "image1":
                out["spec"]["containers"][1]["image"] = value
            elif section == "spec" and key == "replicas" and value is None:
                del out["spec"]["replicas"]
            else:
                out[section][key] = value
    return out


@pytest.mark.parametrize(("patch", "change"), [(p, c) for _, p, c in JSON_PATCH_CASES],
                         ids=[n for n, _, _ in JSON_PATCH_CASES])
def test_json_patch(patch: list[Any], change: Any) -> None:
    doc = copy.deepcopy(POD)
    assert json_patch(doc, patch) == _expect(POD, change)
    assert doc == POD  # the input is never modified


JSON_PATCH_FAILURES: list[tuple[str, list[Any], str]] = [
    ("test fails", [{"op": "test", "path": "/metadata/name", "value": "db"}],
     "testing value /metadata/name failed: test failed"),
    ("test compares number text (1 is not 1.0)", [{"op": "test", "path": "/spec/replicas", "value": 1.0}],
     "testing value /spec/replicas failed: test failed"),
    ("test without value fails", [{"op": "test", "path": "/spec/replicas"}],
     "testing value /spec/replicas failed: test failed"),
    ("test on missing parent", [{"op": "test", "path": "/status/phase", "value": "x"}],
     "test operation does not apply: is missing path: /status/phase: missing value"),
    ("add under missing parent", [{"op": "add", "path": "/status/phase", "value": "x"}],
     'add operation does not apply: doc is missing path: "/status/phase": missing value'),
    ("add at the root path", [{"op": "add", "path": "", "value": {}}],
     'add operation does not apply: doc is missing path: "": missing value'),
    ("add beyond the end", [{"op": "add", "path": "/spec/containers/3", "value": 1}],
     "error in add for path: '/spec/containers/3': Unable to access invalid index: 3: invalid index referenced"),
    ("add with a bad index", [{"op": "add", "path": "/spec/containers/x", "value": 1}],
     "error in add for path: '/spec/containers/x': value was not a proper array index: 'x': "
     'strconv.Atoi: parsing "x": invalid syntax'),
    ("remove absent member", [{"op": "remove", "path": "/spec/nope"}],
     "error in remove for path: '/spec/nope': Unable to remove nonexistent key: nope: missing value"),
    ("remove out of range", [{"op": "remove", "path": "/spec/containers/2"}],
     "error in remove for path: '/spec/containers/2': Unable to access invalid index: 2: invalid index referenced"),
    ("replace out of range", [{"op": "replace", "path": "/spec/containers/5", "value": 1}],
     "replace operation does not apply: doc is missing key: /spec/containers/5: missing value"),
    ("replace under missing parent", [{"op": "replace", "path": "/status/phase", "value": 1}],
     "replace operation does not apply: doc is missing path: /status/phase: missing value"),
    ("move from absent member", [{"op": "move", "from": "/spec/nope", "path": "/spec/x"}],
     "error in move for path: 'nope': Unable to remove nonexistent key: nope: missing value"),
    ("move without from", [{"op": "move", "path": "/spec/x"}],
     "move operation failed to decode from: operation, missing from field: missing value"),
    ("add without path", [{"op": "add", "value": 1}], "add operation failed to decode path: missing value"),
    ("replace without path", [{"op": "replace", "value": 1}],
     "replace operation failed to decode path: operation missing path field: missing value"),
    ("test with a non-string path", [{"op": "test", "path": 3, "value": 1}],
     "test operation failed to decode path: json: cannot unmarshal number into Go value of type string"),
    ("unknown op", [{"op": "merge", "path": "/a"}], "Unexpected kind: merge"),
    ("op missing", [{"path": "/a"}], "Unexpected kind: unknown"),
    ("later op fails, nothing applies", [{"op": "add", "path": "/spec/x", "value": 1},
                                         {"op": "remove", "path": "/spec/y"}],
     "error in remove for path: '/spec/y': Unable to remove nonexistent key: y: missing value"),
]


@pytest.mark.parametrize(("patch", "detail"), [(p, d) for _, p, d in JSON_PATCH_FAILURES],
                         ids=[n for n, _, _ in JSON_PATCH_FAILURES])
def test_json_patch_failure_is_generic_422(patch: list[Any], detail: str) -> None:
    doc = copy.deepcopy(POD)
    with pytest.raises(PatchError) as info:
        json_patch(doc, patch)
    assert (info.value.code, info.value.reason, info.value.message) == (422, "Invalid", REJECTED)
    assert info.value.detail == detail
    assert doc == POD
    assert info.value.status()["message"] == "the server rejected our request due to an error in our request"


@pytest.mark.parametrize(("patch", "message"), [
    ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
    ("x", "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
    ([{"op": "add", "path": "/a", "value": 1}, 7],
     "json: cannot unmarshal number into Go value of type jsonpatch.Operation"),
])
def test_json_patch_undecodable_is_400(patch: Any, message: str) -> None:
    with pytest.raises(PatchError) as info:
        json_patch(POD, patch)
    assert (info.value.code, info.value.reason, info.value.message) == (400, "BadRequest", message)


def test_json_patch_operation_limit() -> None:
    patch = [{"op": "test", "path": "/metadata/name", "value": "web"}] * (MAX_OPERATIONS + 1)
    with pytest.raises(PatchError) as info:
        json_patch(POD, patch)
    assert (info.value.code, info.value.reason) == (413, "RequestEntityTooLarge")
    assert info.value.message == ("Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
                                  "got 10001")
    assert json_patch(POD, patch[:MAX_OPERATIONS]) == POD


def test_json_patch_null_body_changes_nothing() -> None:
    assert json_patch(POD, None) == POD


MERGE_CASES: list[tuple[str, Any, Any, Any]] = [
    # RFC 7386 appendix A, one row each
    ("replace member", {"a": "b"}, {"a": "c"}, {"a": "c"}),
    ("add member", {"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ("null deletes", {"a": "b"}, {"a": None}, {}),
    ("null deletes one of two", {"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ("array replaces array", {"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ("value replaces array", {"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ("nested merge and delete", {"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ("array of objects replaced", {"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ("a null already in the document stays", {"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ("object replaces scalar, nulls pruned", {"a": "foo"}, {"a": {"b": None, "c": 1}}, {"a": {"c": 1}}),
    ("null member of a new subtree pruned", {}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ("nulls inside new arrays stay, their objects are pruned", {}, {"a": [None, {"x": None, "y": 1}]},
     {"a": [None, {"y": 1}]}),
    ("array body replaces the document", {"a": "b"}, ["c"], ["c"]),
    ("empty patch", {"a": {"b": 1}}, {}, {"a": {"b": 1}}),
    ("labels", {"metadata": {"labels": {"a": "1", "b": "2"}}}, {"metadata": {"labels": {"a": None, "c": "3"}}},
     {"metadata": {"labels": {"b": "2", "c": "3"}}}),
]


@pytest.mark.parametrize(("doc", "patch", "expected"), [c[1:] for c in MERGE_CASES], ids=[c[0] for c in MERGE_CASES])
def test_merge_patch(doc: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy((doc, patch))
    assert merge_patch(doc, patch) == expected
    assert (doc, patch) == before


@pytest.mark.parametrize("patch", [None, "x", 3, True])
def test_merge_patch_non_object_is_400(patch: Any) -> None:
    with pytest.raises(PatchError) as info:
        merge_patch({"a": 1}, patch)
    assert (info.value.code, info.value.reason, info.value.message) == (400, "BadRequest", "Invalid JSON Patch")
    assert info.value.status() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                   "message": "Invalid JSON Patch", "reason": "BadRequest", "code": 400}


@pytest.mark.parametrize(("value", "v", "s"), [
    ({"b": [1, "x"], "a": None}, "map[a:<nil> b:[1 x]]", "map[a:<nil> b:[1 x]]"),
    (1.5, "1.5", "%!s(float64=1.5)"),
    (1e6, "1e+06", "%!s(float64=1e+06)"),
    (123456.0, "123456", "%!s(float64=123456)"),
    (0.00001, "1e-05", "%!s(float64=1e-05)"),
    (7, "7", "%!s(int64=7)"),
    (True, "true", "%!s(bool=true)"),
    (None, "<nil>", "%!s(<nil>)"),
])
def test_go_formatting(value: Any, v: str, s: str) -> None:
    assert (go_v(value), go_s(value)) == (v, s)
