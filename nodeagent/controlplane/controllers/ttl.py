"""The TTL controller (upstream pkg/controller/ttl): every Node carries `node.alpha.kubernetes.io/ttl`,
how long a kubelet may cache the Secrets and ConfigMaps its pods use, by the cluster's size.

Why: kube-controller-manager runs it by default, so every Node of a real cluster shows the
annotation (`"0"` up to 100 nodes); a twin run against the real control plane showed nodeagent's
Nodes without it. As upstream: the node count moves a step through the boundaries (0 s up to 100
nodes, 15 s from 90 to 500, 30 s from 450 to 1,000, 60 s from 900 to 2,000, then 300 s; a step up
when the count passes the step's maximum, down when it falls below its minimum, so it does not
flap), and a Node is brought to the current value when it is added or updated (a boundary crossed
reaches the other Nodes at their next update, as upstream's, which never enqueues them all).
Synchronous; driven by loop.py as a component. The annotation is written in a normal update, as
kube-controller-manager's strategic merge patch.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import NodeAgentError
from nodeagent.store import ObjectStore

logger = logging.getLogger(__name__)

KINDS = ("Node",)
ANNOTATION = "node.alpha.kubernetes.io/ttl"  # v1.ObjectTTLAnnotationKey
BOUNDARIES = ((0, 100, 0), (90, 500, 15), (450, 1000, 30), (900, 2000, 60), (1800, 2**31 - 1, 300))
"""ttlBoundaries: (sizeMin, sizeMax, ttlSeconds)."""


class TTLController:
    """Node count -> desired TTL -> each added or updated Node's annotation. A loop.py component."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._names: set[str] = set()
        self._step = 0
        self._queue: dict[str, None] = {}  # insertion-ordered set of node names

    @property
    def desired(self) -> int:
        return BOUNDARIES[self._step][2]

    # --- Component ---

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        for obj in objs:
            self.handle("ADDED", obj)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        name = str((obj.get("metadata") or {}).get("name") or "")
        if not name:
            return
        if event_type == "DELETED":
            if name in self._names:
                self._names.discard(name)
                if len(self._names) < BOUNDARIES[self._step][0]:
                    self._step -= 1
            self._queue.pop(name, None)
            return
        if name not in self._names:
            self._names.add(name)
            if len(self._names) > BOUNDARIES[self._step][1]:
                self._step += 1
        if _current(obj) != self.desired:
            self._queue[name] = None

    def work(self, limit: int) -> int:
        done = 0
        while self._queue and done < max(limit, 1):
            name = next(iter(self._queue))
            del self._queue[name]
            done += 1
            try:
                self._sync(name)
            except NodeAgentError as err:  # the next update of the Node brings it back
                logger.warning("ttl: could not annotate node=%s err=%s", name, err)
        return done

    def deadline(self) -> float | None:
        return None

    def idle(self) -> bool:
        return not self._queue

    # --- work ---

    def _sync(self, name: str) -> None:
        with self.store.transaction(savepoints=False, manager="kube-controller-manager") as tx:
            node = tx.try_get("Node", "", name)
            if node is None or _current(node) == self.desired:
                return
            md = dict(node["metadata"])
            md["annotations"] = {**(md.get("annotations") or {}), ANNOTATION: str(self.desired)}
            tx.update({**node, "metadata": md})


def _current(node: Mapping[str, Any]) -> int | None:
    """getIntFromAnnotation: the annotation's integer, None when missing or not an integer."""
    value = ((node.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    try:
        return int(str(value)) if value is not None else None
    except ValueError:
        return None
