"""ClusterReader over the object store: the read-only view a driver controller gets.

Reads go to the store's committed in-memory objects (`scan`/`peek`, no copies), so a
driver deriving its state from every claim stays cheap. Drivers must not mutate them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.classic.common import CLAIM, DEVICE_CLASS, NODE
from nodeagent.store import ObjectStore


class StoreReader:
    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    def claims(self) -> Iterable[Mapping[str, Any]]:
        return self._store.scan(CLAIM)

    def node_labels(self, name: str) -> Mapping[str, str]:
        node = self._store.peek(NODE, "", name)
        if node is None:
            return {}
        return (node.get("metadata") or {}).get("labels") or {}

    def device_class(self, name: str) -> Mapping[str, Any] | None:
        return self._store.peek(DEVICE_CLASS, "", name)
