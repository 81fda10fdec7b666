"""plan_pool: the API calls that publish one pool, as the resourceslice controller decides them."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.dra_kit import slices
from plugins.dra_kit.slices import Create, Delete, Update

DRIVER, NODE, UID = "gpu.example.com", "node-a", "node-uid-1"
A, B = {"name": "gpu-0"}, {"name": "gpu-1"}


def existing(name: str, gen: int, devices: list[dict[str, Any]], *, pool: str = "p", rv: str = "7",
             count: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": rv,
                     "ownerReferences": [slices.owner_reference(NODE, UID)]},
        "spec": {"driver": DRIVER, "nodeName": NODE, "devices": devices,
                 "pool": {"name": pool, "generation": gen, "resourceSliceCount": count}, **spec},
    }


def test_new_slice_is_named_and_owned_as_upstream() -> None:
    obj = slices.new_slice(DRIVER, NODE, UID, "pool-a", [A], 1)
    assert obj == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "generateName": "node-a-gpu.example.com-",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "node-uid-1",
                                 "controller": True}],
        },
        "spec": {"driver": DRIVER, "pool": {"name": "pool-a", "generation": 1, "resourceSliceCount": 1},
                 "nodeName": NODE, "devices": [{"name": "gpu-0"}]},
    }
    assert slices.field_selector(DRIVER, NODE) == "spec.driver=gpu.example.com,spec.nodeName=node-a"


def _summary(actions: list[slices.Action]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for a in actions:
        if isinstance(a, Delete):
            out.append(("delete", a.name, a.uid, a.resource_version))
        else:
            spec = a.obj["spec"]
            name = a.obj["metadata"].get("name") or a.obj["metadata"].get("generateName")
            out.append(("create" if isinstance(a, Create) else "update", name, spec["pool"]["generation"],
                        [d["name"] for d in spec["devices"]]))
    return out


@pytest.mark.parametrize(
    ("devices", "current", "want"),
    [
        # nothing there yet: create at generation 1
        ([A, B], [], [("create", "node-a-gpu.example.com-", 1, ["gpu-0", "gpu-1"])]),
        # the same slice: nothing to do
        ([A, B], [existing("s1", 4, [A, B])], []),
        # the device list changed: one update, generation bumped
        ([A], [existing("s1", 4, [A, B])], [("update", "s1", 5, ["gpu-0"])]),
        # the pool's other fields were edited: fixed in place, generation kept
        ([A], [existing("s1", 4, [A], count=3)], [("update", "s1", 4, ["gpu-0"])]),
        # fields a node-local driver never sets are dropped
        ([A], [existing("s1", 2, [A], allNodes=True)], [("update", "s1", 2, ["gpu-0"])]),
        # an older generation is obsolete; the newest matches
        ([A], [existing("old", 1, [B], rv="3"), existing("s1", 2, [A])], [("delete", "old", "uid-old", "3")]),
        # two at the newest generation: the one with the same devices stays, the other goes
        ([A], [existing("x", 2, [B], rv="5"), existing("y", 2, [A])], [("delete", "x", "uid-x", "5")]),
        # two at the newest and none matches: create a new generation, delete both
        ([A], [existing("x", 2, [B], rv="5"), existing("y", 2, [B, A], rv="6")],
         [("create", "node-a-gpu.example.com-", 3, ["gpu-0"]), ("delete", "x", "uid-x", "5"),
          ("delete", "y", "uid-y", "6")]),
        # the pool is no longer published: its slices go
        (None, [existing("s1", 2, [A], rv="9")], [("delete", "s1", "uid-s1", "9")]),
    ],
)
def test_plan_pool(devices: list[dict[str, Any]] | None, current: list[dict[str, Any]],
                   want: list[tuple[Any, ...]]) -> None:
    assert _summary(slices.plan_pool(DRIVER, NODE, UID, "p", devices, current)) == want


def test_update_keeps_metadata_for_optimistic_concurrency() -> None:
    cur = existing("s1", 1, [A], rv="42")
    (action,) = slices.plan_pool(DRIVER, NODE, UID, "p", [B], [cur])
    assert isinstance(action, Update)
    assert action.obj["metadata"] == cur["metadata"]  # name, uid, resourceVersion, owner
    assert action.obj["spec"]["devices"] == [B]
    assert cur["spec"]["devices"] == [A]  # the cached object is not touched


def test_newer_compares_resource_versions_as_integers() -> None:
    assert slices.newer({"metadata": {"resourceVersion": "10"}}, {"metadata": {"resourceVersion": "9"}})
    assert not slices.newer({"metadata": {"resourceVersion": "9"}}, {"metadata": {"resourceVersion": "10"}})
