"""Strategic merge patch against a small Pod schema with upstream's patch strategies and merge keys.

Cases restate the behaviour of k8s.io/apimachinery/pkg/util/strategicpatch (patch_test.go and
its raw cases), on Pod fields instead of the test's MergeItem type; list orders are exact.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodeagent.apiserver.patch import PatchError, strategic_merge_patch
from nodeagent.apiserver.patch.errors import REJECTED
from nodeagent.apiserver.schema.model import Definitions, Schema

STR = Schema(type="string")
STR_MAP = Schema(type="object", additional_properties=STR)


def _obj(**props: Schema) -> Schema:
    return Schema(type="object", properties=props)


def _list(ref: str, *, strategy: str = "", key: str = "") -> Schema:
    return Schema(type="array", items=Schema(ref=ref), patch_strategy=strategy, patch_merge_key=key)


DEFS = Definitions({
    "Pod": _obj(metadata=Schema(ref="ObjectMeta"), spec=Schema(ref="PodSpec"), status=Schema(ref="PodStatus")),
    "ObjectMeta": _obj(
        name=STR, labels=STR_MAP, annotations=STR_MAP,
        finalizers=Schema(type="array", items=STR, patch_strategy="merge"),
        ownerReferences=_list("OwnerReference", strategy="merge", key="uid"),
    ),
    "OwnerReference": _obj(uid=STR, name=STR, kind=STR),
    "PodSpec": _obj(
        containers=_list("Container", strategy="merge", key="name"),
        volumes=_list("Volume", strategy="merge,retainKeys", key="name"),
        tolerations=_list("Toleration"),
        nodeSelector=STR_MAP,
        priority=Schema(type="integer"),
    ),
    "Container": _obj(
        name=STR, image=STR, args=Schema(type="array", items=STR),
        env=_list("EnvVar", strategy="merge", key="name"),
        ports=_list("ContainerPort", strategy="merge", key="containerPort"),
    ),
    "EnvVar": _obj(name=STR, value=STR),
    "ContainerPort": _obj(containerPort=Schema(type="integer"), protocol=STR, name=STR),
    "Volume": _obj(name=STR, emptyDir=Schema(type="object"), configMap=_obj(name=STR), hostPath=_obj(path=STR)),
    "Toleration": _obj(key=STR, operator=STR, effect=STR),
    "PodStatus": _obj(phase=STR, conditions=_list("PodCondition", strategy="merge", key="type")),
    "PodCondition": _obj(type=STR, status=STR),
})
POD = Schema(ref="Pod")


def spec(**fields: Any) -> dict[str, Any]:
    return {"spec": fields}


def meta(**fields: Any) -> dict[str, Any]:
    return {"metadata": fields}


def c(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


CASES: list[tuple[str, dict[str, Any], Any, dict[str, Any]]] = [
    ("add a field", meta(name="p"), meta(labels={"a": "1"}), meta(name="p", labels={"a": "1"})),
    ("null deletes a field", meta(name="p", labels={"a": "1"}), meta(labels=None), meta(name="p")),
    ("null for an absent field is dropped", meta(name="p"), meta(annotations=None), meta(name="p")),
    ("maps merge and null deletes a key", meta(labels={"a": "1", "b": "2"}), meta(labels={"b": None, "c": "3"}),
     meta(labels={"a": "1", "c": "3"})),
    ("scalar replaced", spec(priority=1), spec(priority=2), spec(priority=2)),
    ("empty patch", spec(priority=1), {}, spec(priority=1)),
    ("merge list item by key keeps its other fields",
     spec(containers=[c("a", image="x", args=["1"]), c("b", image="y")]), spec(containers=[c("b", image="z")]),
     spec(containers=[c("a", image="x", args=["1"]), c("b", image="z")])),
    ("a new item goes before the server-only items",
     spec(containers=[c("a"), c("b")]), spec(containers=[c("n", image="i")]),
     spec(containers=[c("n", image="i"), c("a"), c("b")])),
    ("a changed item keeps its place",
     spec(containers=[c("a"), c("b"), c("c")]), spec(containers=[c("b", image="i")]),
     spec(containers=[c("a"), c("b", image="i"), c("c")])),
    ("patch order wins for the items it names",
     spec(containers=[c("1"), c("2", image="b"), c("3")]),
     spec(containers=[c("3", image="c"), c("1", image="a"), c("2", args=["x"])]),
     spec(containers=[c("3", image="c"), c("1", image="a"), c("2", image="b", args=["x"])])),
    ("server-only items interleave by live order",
     spec(containers=[c("1"), c("2", image="b"), c("3")]), spec(containers=[c("3", image="c"), c("1", image="a")]),
     spec(containers=[c("2", image="b"), c("3", image="c"), c("1", image="a")])),
    ("nested merge lists (env in a container)",
     spec(containers=[c("a", env=[{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}])]),
     spec(containers=[c("a", env=[{"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}])]),
     spec(containers=[c("a", env=[{"name": "X", "value": "1"}, {"name": "Y", "value": "3"},
                                  {"name": "Z", "value": "4"}])])),
    ("integer merge key (ports by containerPort)",
     spec(containers=[c("a", ports=[{"containerPort": 80, "protocol": "TCP"}])]),
     spec(containers=[c("a", ports=[{"containerPort": 80, "name": "http"}, {"containerPort": 443}])]),
     spec(containers=[c("a", ports=[{"containerPort": 80, "protocol": "TCP", "name": "http"},
                                    {"containerPort": 443}])])),
    ("$patch: delete removes the item",
     spec(containers=[c("a"), c("b"), c("c")]), spec(containers=[{"name": "b", "$patch": "delete"}]),
     spec(containers=[c("a"), c("c")])),
    ("$patch: delete removes every duplicate",
     spec(containers=[c("1"), c("1"), c("2", image="a"), c("3"), c("3")]),
     spec(containers=[{"name": "1", "$patch": "delete"}, {"name": "3", "$patch": "delete"}]),
     spec(containers=[c("2", image="a")])),
    ("$patch: delete of every item leaves an empty list",
     spec(containers=[c("1"), c("2")]),
     spec(containers=[{"name": "1", "$patch": "delete"}, {"name": "2", "$patch": "delete"}]), spec(containers=[])),
    ("$patch: replace in a list replaces it with the other items",
     spec(containers=[c("a", image="x"), c("b")]), spec(containers=[{"$patch": "replace"}, c("a", args=["1"])]),
     spec(containers=[c("a", args=["1"])])),
    ("$patch: replace alone empties the list", spec(containers=[c("a"), c("b")]),
     spec(containers=[{"$patch": "replace"}]), spec(containers=[])),
    ("$patch: replace on a map", spec(nodeSelector={"a": "1", "b": "2"}),
     spec(nodeSelector={"$patch": "replace", "c": "3"}), spec(nodeSelector={"c": "3"})),
    ("$patch: delete on a map", spec(nodeSelector={"a": "1"}), spec(nodeSelector={"$patch": "delete"}),
     spec(nodeSelector={})),
    ("$patch: replace at the top", {"metadata": {"name": "p"}, "spec": {}}, {"$patch": "replace", "spec": {}},
     {"spec": {}}),
    ("list without strategy is replaced (tolerations)",
     spec(tolerations=[{"key": "a"}, {"key": "b"}]), spec(tolerations=[{"key": "c"}]),
     spec(tolerations=[{"key": "c"}])),
    ("list of scalars without strategy is replaced", spec(containers=[c("a", args=["1", "2"])]),
     spec(containers=[c("a", args=["2", "3"])]), spec(containers=[c("a", args=["2", "3"])])),
    ("merge list of scalars is a union", meta(finalizers=["a", "b"]), meta(finalizers=["b", "c"]),
     meta(finalizers=["a", "b", "c"])),
    ("union follows the patch order", meta(finalizers=["1", "2", "3"]), meta(finalizers=["3", "1"]),
     meta(finalizers=["2", "3", "1"])),
    ("$deleteFromPrimitiveList removes values", meta(finalizers=["a", "b", "c", "b"]),
     {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}, meta(finalizers=["a", "c"])),
    ("$deleteFromPrimitiveList of an absent value", meta(finalizers=["a"]),
     {"metadata": {"$deleteFromPrimitiveList/finalizers": ["z"]}}, meta(finalizers=["a"])),
    ("$deleteFromPrimitiveList never adds the field", meta(name="p"),
     {"metadata": {"$deleteFromPrimitiveList/finalizers": ["z"]}}, meta(name="p")),
    ("$deleteFromPrimitiveList with additions", meta(finalizers=["1", "2", "3"]),
     {"metadata": {"$setElementOrder/finalizers": ["1", "2", "4"], "$deleteFromPrimitiveList/finalizers": ["3"],
                   "finalizers": ["4"]}}, meta(finalizers=["1", "2", "4"])),
    ("$setElementOrder with deletions keeps server-only values last", meta(finalizers=["1", "2", "3", "4"]),
     {"metadata": {"$setElementOrder/finalizers": ["1", "2"], "$deleteFromPrimitiveList/finalizers": ["3"]}},
     meta(finalizers=["1", "2", "4"])),
    ("$setElementOrder orders new and old items",
     spec(containers=[c("1", image="a"), c("2", args=["b"])]),
     {"spec": {"$setElementOrder/containers": [{"name": "4"}, {"name": "1"}, {"name": "2"}, {"name": "3"}],
               "containers": [c("4", image="4"), c("3", image="3")]}},
     spec(containers=[c("4", image="4"), c("1", image="a"), c("2", args=["b"]), c("3", image="3")])),
    ("$setElementOrder alone reorders; names not in the list are ignored",
     spec(containers=[c("1"), c("3")]),
     {"spec": {"$setElementOrder/containers": [{"name": "3"}, {"name": "2"}, {"name": "1"}]}},
     spec(containers=[c("3"), c("1")])),
    ("$setElementOrder with an item delete",
     spec(containers=[c("a"), c("b"), c("c")]),
     {"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
               "containers": [{"name": "b", "$patch": "delete"}]}},
     spec(containers=[c("c"), c("a")])),
    ("$retainKeys clears the fields not listed (volume source switch)",
     spec(volumes=[{"name": "v", "emptyDir": {}}, {"name": "w", "hostPath": {"path": "/x"}}]),
     spec(volumes=[{"name": "v", "configMap": {"name": "cm"}, "$retainKeys": ["configMap", "name"]}]),
     spec(volumes=[{"name": "v", "configMap": {"name": "cm"}}, {"name": "w", "hostPath": {"path": "/x"}}])),
    ("retainKeys list merges normally without the directive",
     spec(volumes=[{"name": "v", "emptyDir": {}}]), spec(volumes=[{"name": "v", "hostPath": {"path": "/h"}}]),
     spec(volumes=[{"name": "v", "emptyDir": {}, "hostPath": {"path": "/h"}}])),
    ("conditions merge by type",
     {"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Init", "status": "True"}]}},
     {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
     {"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Init", "status": "True"}]}}),
    ("nulls inside a new value are discarded", meta(name="p"), meta(labels={"a": None, "b": "1"}),
     meta(name="p", labels={"b": "1"})),
    ("directives inside a new value are removed", spec(priority=1),
     spec(containers=[c("a", env=[{"name": "X", "$patch": "delete"}, {"name": "Y"}])]),
     spec(priority=1, containers=[c("a", env=[{"name": "Y"}])])),
    ("a new value that is itself a directive is dropped", spec(priority=1),
     spec(nodeSelector={"$patch": "replace", "a": "1"}), spec(priority=1)),
    ("a value of another type replaces", spec(priority="high"), spec(priority={"value": 1, "drop": None}),
     spec(priority={"value": 1})),
    ("unknown map fields merge like a merge patch", spec(extra={"a": 1, "b": {"c": 2}}),
     spec(extra={"b": {"d": 3}, "a": None}), spec(extra={"b": {"c": 2, "d": 3}})),
    ("unknown list fields are replaced", spec(extraList=[{"name": "a"}]), spec(extraList=[{"name": "b"}]),
     spec(extraList=[{"name": "b"}])),
    ("null body changes nothing", meta(name="p"), None, meta(name="p")),
]


@pytest.mark.parametrize(("doc", "patch", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_strategic_merge_patch(doc: dict[str, Any], patch: Any, expected: dict[str, Any]) -> None:
    before = copy.deepcopy((doc, patch))
    assert strategic_merge_patch(doc, patch, POD, DEFS) == expected
    assert (doc, patch) == before


FAILURES: list[tuple[str, dict[str, Any], Any, tuple[int, str, str]]] = [
    ("missing merge key", spec(containers=[c("a")]), spec(containers=[{"image": "httpd"}]),
     (500, "", "map: map[image:httpd] does not contain declared merge key: name")),
    ("server item without merge key", spec(containers=[{"image": "x"}]), spec(containers=[c("a")]),
     (500, "", "map: map[image:x] does not contain declared merge key: name")),
    ("unknown $patch in a list item", spec(containers=[c("a")]), spec(containers=[{"name": "a", "$patch": "nope"}]),
     (500, "", "unknown patch type: nope in map: map[$patch:nope name:a]")),
    ("unknown $patch in a map", spec(nodeSelector={}), spec(nodeSelector={"$patch": 1}),
     (500, "", "unknown patch type: %!s(int64=1) in map: map[$patch:1]")),
    ("$patch: merge in a list", spec(containers=[c("a")]), spec(containers=[{"name": "a", "$patch": "merge"}]),
     (500, "", "merging lists cannot yet be specified in the patch")),
    ("$setElementOrder disagrees with the patch list", spec(containers=[c("1"), c("3"), c("2")]),
     {"spec": {"$setElementOrder/containers": [{"name": "1"}, {"name": "2"}, {"name": "3"}],
               "containers": [c("3", image="3"), c("1", image="1")]}},
     (500, "", "the order in patch list:\n[map[image:3 name:3] map[image:1 name:1]]\n doesn't match "
               "$setElementOrder list:\n[map[name:1] map[name:2] map[name:3]]")),
    ("$setElementOrder disagrees for scalars", meta(finalizers=["1", "3", "2"]),
     {"metadata": {"$setElementOrder/finalizers": ["1", "2", "3"], "finalizers": ["3", "1"]}},
     (500, "", "the order in patch list:\n[3 1]\n doesn't match $setElementOrder list:\n[1 2 3]")),
    ("field not in $retainKeys", spec(volumes=[{"name": "v"}]),
     spec(volumes=[{"name": "v", "emptyDir": {}, "$retainKeys": ["name"]}]),
     (400, "BadRequest", "invalid patch format of retainKeys")),
    ("$retainKeys not a list", spec(volumes=[{"name": "v"}]), spec(volumes=[{"name": "v", "$retainKeys": "name"}]),
     (400, "BadRequest", "invalid patch format of retainKeys")),
    ("malformed $deleteFromPrimitiveList key", meta(finalizers=["a"]),
     {"metadata": {"$deleteFromPrimitiveListX/finalizers": ["a"]}},
     (400, "BadRequest", "invalid patch format of primitive list")),
    ("malformed $setElementOrder key", meta(finalizers=["a"]), {"metadata": {"$setElementOrder": ["a"]}},
     (400, "BadRequest", "invalid patch format of setElementOrder list")),
    ("$setElementOrder not a list", meta(finalizers=["a"]), {"metadata": {"$setElementOrder/finalizers": "a"}},
     (500, "", "expected a []interface {}, but received a string")),
    ("mixed element types", meta(finalizers=["a"]), meta(finalizers=[1]),
     (500, "", "list element types are not identical: [[a] [1]]")),
    ("body not an object", {}, [{"op": "add"}],
     (400, "BadRequest", "json: cannot unmarshal array into Go value of type map[string]interface {}")),
]


@pytest.mark.parametrize(("doc", "patch", "status"), [c[1:] for c in FAILURES], ids=[c[0] for c in FAILURES])
def test_strategic_merge_patch_errors(doc: dict[str, Any], patch: Any, status: tuple[int, str, str]) -> None:
    with pytest.raises(PatchError) as info:
        strategic_merge_patch(doc, patch, POD, DEFS)
    assert (info.value.code, info.value.reason, info.value.message) == status


def test_list_of_lists_is_the_generic_422() -> None:
    with pytest.raises(PatchError) as info:
        strategic_merge_patch(meta(finalizers=[["a"]]), meta(finalizers=[["b"]]), POD, DEFS)
    assert (info.value.code, info.value.reason, info.value.message) == (422, "Invalid", REJECTED)
    assert info.value.detail == "lists of lists are not supported"


def test_a_500_has_no_reason_in_its_status() -> None:
    with pytest.raises(PatchError) as info:
        strategic_merge_patch(spec(containers=[c("a")]), spec(containers=[{"image": "httpd"}]), POD, DEFS)
    status = info.value.status()
    assert "reason" not in status and status["code"] == 500
