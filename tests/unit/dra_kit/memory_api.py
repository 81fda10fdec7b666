"""An APIPort in memory, for the kit's and the drivers' tests (and the store behind fake_apiserver).

It keeps Nodes, ResourceClaims and ResourceSlices with resourceVersions and an event history,
so list + watch behave as the API server's do: a watch replays the events after its
resourceVersion, then follows new ones; `compact()` forgets the history so a watch from
before it gets 410 Gone. Errors carry the API server's texts. `fail` makes named calls
raise Unavailable (the daemon going away).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import AsyncIterator, Mapping
from typing import Any

from nodeagent.errors import AlreadyExists, Conflict, NotFound, Unavailable
from plugins.dra_kit.kube import Gone, WatchEvent

SLICES = "resourceslices.resource.k8s.io"


def _selected(obj: Mapping[str, Any], selector: str) -> bool:
    spec = obj.get("spec") or {}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        field = key.removeprefix("spec.")
        if str(spec.get(field, "")) != value:
            return False
    return True


class MemoryAPI:
    def __init__(self, node: str = "node-a", node_uid: str = "node-uid-1") -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.claims: dict[tuple[str, str], dict[str, Any]] = {}
        self.slices: dict[str, dict[str, Any]] = {}
        self.history: list[tuple[int, str, dict[str, Any]]] = []
        self.rv = 0
        self.compacted = 0  # watches from below this resourceVersion get 410
        self.calls: list[str] = []
        self.fail: set[str] = set()
        self.claim_versions: set[str] = {"v1", "v1beta2", "v1beta1"}
        self._names = itertools.count()
        self._uids = itertools.count(1)
        self._changed = asyncio.Event()
        if node:
            self.put_node(node, node_uid)

    # ------------------------------------------------------------------ test helpers

    def _bump(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        if kind:
            self.history.append((self.rv, kind, copy.deepcopy(obj)))
            self._changed.set()
        return obj

    def put_node(self, name: str, uid: str) -> None:
        self.nodes[name] = self._bump("", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid}})

    def put_claim(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.claims[(meta.get("namespace", "default"), meta["name"])] = self._bump("", copy.deepcopy(obj))

    def remove_slice(self, name: str) -> None:
        """Deleted by someone else (the daemon at start, kubectl)."""
        obj = self.slices.pop(name)
        self._bump("DELETED", obj)

    def compact(self) -> None:
        self.history.clear()
        self.compacted = self.rv + 1

    def disconnect(self, *calls: str) -> None:
        """Those calls (default: all) fail from now on; open watches end."""
        self.fail |= set(calls or ("get_node", "get_claim", "list_slices", "watch_slices", "create_slice",
                                   "update_slice", "delete_slice"))
        self._changed.set()

    def _check(self, call: str) -> None:
        self.calls.append(call)
        if call in self.fail:
            raise Unavailable(f"{call}: connection refused")

    # ------------------------------------------------------------------ APIPort

    async def get_node(self, name: str) -> dict[str, Any]:
        self._check("get_node")
        if name not in self.nodes:
            raise NotFound(f'nodes "{name}" not found')
        return copy.deepcopy(self.nodes[name])

    async def get_claim(self, namespace: str, name: str) -> dict[str, Any]:
        self._check("get_claim")
        obj = self.claims.get((namespace, name))
        if obj is None:
            raise NotFound(f'resourceclaims.resource.k8s.io "{name}" not found')
        return copy.deepcopy(obj)

    async def list_slices(self, field_selector: str) -> tuple[list[dict[str, Any]], str]:
        self._check("list_slices")
        items = [copy.deepcopy(o) for o in self.slices.values() if _selected(o, field_selector)]
        return items, str(self.rv)

    async def watch_slices(self, field_selector: str, resource_version: str) -> AsyncIterator[WatchEvent]:
        self._check("watch_slices")
        after = int(resource_version or 0)
        if after + 1 < self.compacted:
            raise Gone(f"too old resource version: {after} ({self.compacted - 1})")
        while True:
            pending = [h for h in self.history if h[0] > after]
            if not pending:
                if "watch_slices" in self.fail:
                    raise Unavailable("watch: connection reset")
                self._changed.clear()
                await self._changed.wait()
                continue
            for rv, kind, obj in pending:
                after = rv
                if _selected(obj, field_selector):
                    yield WatchEvent(kind, copy.deepcopy(obj))

    async def create_slice(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self._check("create_slice")
        new = copy.deepcopy(dict(obj))
        meta = new.setdefault("metadata", {})
        if not meta.get("name"):
            meta["name"] = f"{meta.pop('generateName', 'slice-')}{next(self._names):05d}"
        if meta["name"] in self.slices:
            raise AlreadyExists(f'{SLICES} "{meta["name"]}" already exists')
        meta["uid"] = f"slice-uid-{next(self._uids)}"
        self.slices[meta["name"]] = self._bump("ADDED", new)
        return copy.deepcopy(new)

    async def update_slice(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self._check("update_slice")
        new = copy.deepcopy(dict(obj))
        name = new["metadata"]["name"]
        old = self.slices.get(name)
        if old is None:
            raise NotFound(f'{SLICES} "{name}" not found')
        if new["metadata"].get("resourceVersion") != old["metadata"]["resourceVersion"]:
            raise Conflict(f'Operation cannot be fulfilled on {SLICES} "{name}": the object has been modified; '
                           "please apply your changes to the latest version and try again")
        new["metadata"]["uid"] = old["metadata"]["uid"]
        self.slices[name] = self._bump("MODIFIED", new)
        return copy.deepcopy(new)

    async def delete_slice(self, name: str, *, uid: str, resource_version: str) -> None:
        self._check("delete_slice")
        old = self.slices.get(name)
        if old is None:
            raise NotFound(f'{SLICES} "{name}" not found')
        meta = old["metadata"]
        if uid and uid != meta["uid"]:
            raise Conflict(f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta['uid']}")
        if resource_version and resource_version != meta["resourceVersion"]:
            raise Conflict(f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                           f"ResourceVersion in object meta: {meta['resourceVersion']}")
        self.remove_slice(name)

    async def close(self) -> None:
        self.calls.append("close")
