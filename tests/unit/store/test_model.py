"""Property test: random create/update/delete/finalizer/reopen sequences against a dict model.

The model predicts, for every step, the error (if any), every object's resourceVersion,
labels, finalizers and deletion mark, and the global resourceVersion, including the
ownerReference cascade (dependents in (kind, namespace, name) order, depth first).
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodeagent.errors import AlreadyExists, Conflict, NodeAgentError, NotFound
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

KINDS = ("Pod", "ResourceClaim")
NAMES = ("a", "b", "c")
FINALIZER = "example.com/hold"
MKey = tuple[str, str]


@dataclass
class MObj:
    uid: str
    rv: int
    label: str
    finalizer: bool
    deleting: bool = False
    owners: tuple[str, ...] = ()


@dataclass
class Model:
    objs: dict[MKey, MObj] = field(default_factory=dict)
    rv: int = 0

    def uids(self) -> set[str]:
        return {o.uid for o in self.objs.values()}

    def delete_obj(self, key: MKey) -> None:
        obj = self.objs[key]
        if obj.finalizer:
            if not obj.deleting:
                self.rv += 1
                obj.rv = self.rv
                obj.deleting = True
            return
        self.remove(key)

    def remove(self, key: MKey) -> None:
        self.rv += 1
        gone = self.objs.pop(key)
        for dep_key in sorted(k for k, o in self.objs.items() if gone.uid in o.owners):
            dep = self.objs.get(dep_key)
            if dep is None or any(u in self.uids() for u in dep.owners):
                continue
            self.delete_obj(dep_key)


def build(kind: str, name: str, label: str, finalizer: bool, owners: list[dict[str, Any]]) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "labels": {"v": label}}
    if finalizer:
        md["finalizers"] = [FINALIZER]
    if owners:
        md["ownerReferences"] = owners
    api = "v1" if kind == "Pod" else "resource.k8s.io/v1"
    return {"apiVersion": api, "kind": kind, "metadata": md, "spec": {"x": 1}}


kinds_st = st.sampled_from(KINDS)
names_st = st.sampled_from(NAMES)
labels_st = st.sampled_from(["1", "2"])
target_st = st.integers(0, 7)
"""An existing object by index (modulo the count), or for 6 and 7 one that never exists."""


def target(model: Model, pick: int) -> MKey:
    existing = sorted(model.objs)
    if pick >= 6 or not existing:
        return ("Pod", "missing")
    return existing[pick % len(existing)]


create_st = st.tuples(
    st.just("create"), kinds_st, names_st, labels_st, st.booleans(), st.lists(st.integers(0, 6), min_size=1, max_size=2)
)
ops_st = st.lists(
    st.one_of(
        create_st,
        create_st,
        st.tuples(st.just("update"), target_st, labels_st, st.booleans()),
        st.tuples(st.just("unfinalize"), target_st),
        st.tuples(st.just("delete"), target_st),
        st.tuples(st.just("delete"), target_st),
        st.tuples(st.just("reopen")),
    ),
    min_size=10,
    max_size=40,
)


def expect_error(store_call: Any, error: type[NodeAgentError] | None) -> Any:
    if error is None:
        return store_call()
    try:
        store_call()
    except error:
        return None
    raise AssertionError(f"expected {error.__name__}")


def step(store: ObjectStore, model: Model, op: tuple[Any, ...]) -> None:
    if op[0] == "create":
        _, kind, name, label, fin, owner_picks = op
        existing = sorted(model.objs)
        owner_keys = dict.fromkeys(existing[i % len(existing)] for i in owner_picks) if existing else {}
        owners = [
            {"apiVersion": "v1", "kind": k, "name": n, "uid": model.objs[(k, n)].uid}
            for k, n in owner_keys
            if (k, n) != (kind, name)
        ]
        obj = build(kind, name, label, fin, owners)
        if (kind, name) in model.objs:
            expect_error(lambda: store.create(obj), AlreadyExists)
            return
        got = store.create(obj)
        model.rv += 1
        model.objs[(kind, name)] = MObj(
            got["metadata"]["uid"], model.rv, label, fin, owners=tuple(o["uid"] for o in owners)
        )
    elif op[0] == "update":
        _, pick, label, stale = op
        kind, name = target(model, pick)
        cur = model.objs.get((kind, name))
        if cur is None:
            expect_error(lambda: store.update(build(kind, name, label, False, [])), NotFound)
            return
        obj = store.get(kind, "default", name)
        obj["metadata"]["labels"] = {"v": label}
        if stale:
            obj["metadata"]["resourceVersion"] = str(cur.rv - 1)
            expect_error(lambda: store.update(obj), Conflict)
            return
        store.update(obj)
        if label != cur.label:
            model.rv += 1
            cur.rv, cur.label = model.rv, label
    elif op[0] == "unfinalize":
        kind, name = target(model, op[1])
        cur = model.objs.get((kind, name))
        if cur is None:
            return
        obj = store.get(kind, "default", name)
        obj["metadata"]["finalizers"] = []
        store.update(obj)
        if cur.finalizer:
            model.rv += 1
            cur.rv, cur.finalizer = model.rv, False
            if cur.deleting:
                model.remove((kind, name))
    elif op[0] == "delete":
        kind, name = target(model, op[1])
        if (kind, name) not in model.objs:
            expect_error(lambda: store.delete(kind, "default", name), NotFound)
            return
        store.delete(kind, "default", name)
        model.delete_obj((kind, name))


def check(store: ObjectStore, model: Model) -> None:
    assert store.resource_version == model.rv
    seen: dict[MKey, MObj] = {}
    for kind in KINDS:
        for obj in store.list(kind):
            md = obj["metadata"]
            seen[(kind, md["name"])] = MObj(
                md["uid"],
                int(md["resourceVersion"]),
                md["labels"]["v"],
                bool(md.get("finalizers")),
                "deletionTimestamp" in md,
                tuple(r["uid"] for r in md.get("ownerReferences") or []),
            )
    assert seen == model.objs


@settings(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops_st)
def test_store_matches_model(ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory(prefix="na-store-") as tmp:
        path = Path(tmp) / "objects.db"
        clock = FakeClock()
        store = ObjectStore(path, builtin_kinds(), clock, rng=random.Random(0))
        model = Model()
        try:
            for n, op in enumerate(ops):
                if op[0] == "reopen":
                    store.close()
                    store = ObjectStore(path, builtin_kinds(), clock, rng=random.Random(n))
                else:
                    step(store, model, op)
                check(store, model)
        finally:
            store.close()
