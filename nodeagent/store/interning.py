"""Equal values of different stored objects held once: strings, integers, and whole dicts and lists.

Why: committed objects are decoded JSON, so every pod holds its own copy of every string
(`default`, `pause`, `ClusterFirst`, a node's name, a second's timestamp) and of every subtree it
has in common with its siblings (the defaulted tolerations, the ServiceAccount volume's projected
sources, `securityContext: {}`, a claim's request from its template, the FieldsV1 trees of
managedFields, whose empty `{}` leaves alone were half of a pod's dicts). Measured with
bench/scheduler_peer.py at 100 nodes (1000 pods, 1000 claims, 1000 events): the store's current
objects were 22 MiB as Python objects, 6 MiB of it repeated strings. The store keeps committed
objects immutable (its copy rule: readers copy before changing), so equal values may be one object,
as the versions of one object already share their unchanged parts (txn.share_unchanged).

A subtree's key is the hash of its JSON text; a hit is taken only when the kept copy's text is the
same bytes (so `1`, `1.0` and `true`, or two key orders, are never joined: what is written encodes
exactly as before). The walk is top-down: a subtree found whole is not walked into. A miss builds a
new container of the kept children: what it is given is never changed (it may be committed already).

The tables are bounded: two generations of `size` entries each; when the young one is full it
becomes the old one and the old one goes, and a hit in the old one moves the entry back to the
young one. What objects keep using survives; the unique values every write brings (uids, names,
resourceVersions) pass through and go. The tables hold what they keep alive: at most two
generations of values whose objects may be gone.
"""

from __future__ import annotations

from typing import Any

import orjson

DEFAULT_SIZE = 16384
"""Entries per generation, per table (subtrees; strings and integers)."""

MAX_STRING = 128
"""Longer strings are not looked up: repeated values are short (names, images, enums, timestamps)."""

MAX_OBJECT_BYTES = 32 * 1024
"""Objects larger than this as JSON are left as written: the walk's cost is a JSON encoding per
level, and large objects (CRDs' schemas, big ConfigMaps) are the ones that do not repeat."""


class _Generations:
    """A bounded map: the young and old tables, the young one starting over when full. With `by_id`
    the kept values are also found by identity (`kept`): a subtree the table holds (the unchanged
    parts a new version shares with the one it replaces) is not encoded again to be found."""

    __slots__ = ("_by_id", "_old", "_old_ids", "_size", "_young", "_young_ids")

    def __init__(self, size: int, *, by_id: bool = False) -> None:
        self._size = size
        self._by_id = by_id
        self._young: dict[Any, Any] = {}
        self._old: dict[Any, Any] = {}
        # id -> value: an entry keeps its value alive, so an id is never reused while it names one
        self._young_ids: dict[int, Any] = {}
        self._old_ids: dict[int, Any] = {}

    def get(self, key: Any) -> Any:
        hit = self._young.get(key)
        if hit is None:
            hit = self._old.pop(key, None)
            if hit is not None:
                self.put(key, hit)
        return hit

    def kept(self, value: Any) -> bool:
        """Whether `value` itself is a kept value."""
        return self._young_ids.get(id(value)) is value or self._old_ids.get(id(value)) is value

    def put(self, key: Any, value: Any) -> None:
        if len(self._young) >= self._size:
            self._old, self._old_ids = self._young, self._young_ids
            self._young, self._young_ids = {}, {}
        self._young[key] = value
        if self._by_id:
            self._young_ids[id(value)] = value

    def __len__(self) -> int:
        return len(self._young) + len(self._old)


class ValueInterner:
    """The store's table of kept values (one per store, used under its write lock)."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self._trees = _Generations(size, by_id=True)
        self._scalars = _Generations(size)

    def __len__(self) -> int:
        return len(self._trees) + len(self._scalars)

    def share(self, obj: dict[str, Any]) -> None:
        """Point `obj`'s values at the kept equal ones, before `obj` is committed: its top level and its
        metadata dict are the write's own and are changed in place (callers hold them, and the
        metadata gets its resourceVersion there); everything below is replaced, never changed."""
        for k, v in obj.items():
            if k == "metadata" and type(v) is dict:
                for mk, mv in v.items():
                    shared = self.value(mv) if mk == "managedFields" else self.value(mv, empties=False)
                    if shared is not mv:
                        v[mk] = shared  # an existing key: the dict's size does not change while iterating
            else:
                shared = self.value(v, empties=False)
                if shared is not v:
                    obj[k] = shared

    def value(self, v: Any, empties: bool = True) -> Any:
        """The kept value equal to `v` (`v` itself when it is new: then it is kept, or a copy of it
        made of kept parts). `empties` False: an empty dict or list is left as it is, never one
        object with the others: a reader's copy.deepcopy keeps the aliases it copies, and code that
        fills an empty map of its copy in place (a template's `metadata: {}` getting labels) would
        fill every alias of it (its `resources: {}`, its `securityContext: {}`). Only managedFields'
        FieldsV1 leaves, which no one fills, are shared empty."""
        t = type(v)
        if t is str:
            if len(v) > MAX_STRING:
                return v
            hit = self._scalars._young.get(v)  # the usual hit, without a call
            return hit if hit is not None and type(hit) is str else self._scalar(v)
        if t is dict or t is list:
            if not v and not empties:
                return v
            return v if self._trees.kept(v) else self._tree(v, empties)
        if t is int and not -5 <= v <= 256:  # CPython holds one copy of the small ones already
            return self._scalar(v)
        return v

    def _scalar(self, v: str | int) -> Any:
        hit = self._scalars._young.get(v)
        if hit is None:
            hit = self._scalars.get(v)
            if hit is None:
                self._scalars.put(v, v)
                return v
        return hit if type(hit) is type(v) else v

    def _tree(self, v: dict[str, Any] | list[Any], empties: bool = True) -> Any:
        try:
            text = orjson.dumps(v)
        except orjson.JSONEncodeError:  # not JSON (an integer beyond 64 bits): left as it is
            return v
        key = hash(text)
        hit = self._trees._young.get(key)
        if hit is None:
            hit = self._trees.get(key)
        # the kept copy's own text decides: `==` would join `1`, `1.0` and `true`, or two key orders
        if hit is not None and (hit is v or (type(hit) is type(v) and orjson.dumps(hit) == text)):
            return hit
        value = self.value
        out = {k: value(x, empties) for k, x in v.items()} if type(v) is dict else [value(x, empties) for x in v]
        if hit is None:  # else a different value with the same hash keeps the entry
            self._trees.put(key, out)
        return out
