"""The namespace controller: empties a Terminating namespace and lets it go, as
kube-controller-manager's namespace controller does (pkg/controller/namespace).

Why: a namespace's delete marks it Terminating (deletionTimestamp, status.phase) and keeps it
while spec.finalizers holds `kubernetes`; something must then delete its content, remove that
finalizer (namespaces/NAME/finalize upstream; a store write here, the same change) and delete the
namespace again, which then goes. The real kube-controller-manager can do the same against the
embedded API server. Each round deletes what the namespace still holds in one transaction;
objects kept by finalizers of their own (or pods a node is still stopping) keep the namespace
Terminating, and the controller looks again after RETRY seconds. Differences from upstream: no
NamespaceDeletion* conditions are written, and content goes through the store's delete (a pod
is removed at once, as the embedded API server's namespace delete did before).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock

KINDS = ("Namespace",)
FINALIZER = "kubernetes"
RETRY = 1.0
"""Seconds before a namespace whose content is not all gone is looked at again."""


class NamespaceController:
    """A Component of the control plane loop (controlplane/loop.py)."""

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._queue: dict[str, float] = {}  # namespace -> monotonic time it is due

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        self._queue.clear()
        for obj in objs:
            self.handle("ADDED", obj)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        md = obj.get("metadata") or {}
        name = str(md.get("name") or "")
        if event_type == "DELETED" or not md.get("deletionTimestamp"):
            self._queue.pop(name, None)
            return
        self._queue.setdefault(name, self.clock.monotonic())

    def work(self, limit: int) -> int:
        now = self.clock.monotonic()
        done = 0
        for name, due in sorted(self._queue.items(), key=lambda item: item[1]):
            if done >= limit or due > now:
                break
            done += 1
            if self.sync(name):
                self._queue.pop(name, None)
            else:
                self._queue[name] = now + RETRY
        return done

    def deadline(self) -> float | None:
        return min(self._queue.values()) if self._queue else None

    def idle(self) -> bool:
        due = self.deadline()
        return due is None or due > self.clock.monotonic()

    def sync(self, name: str) -> bool:
        """One round for a Terminating namespace: True when nothing more is to be done for it."""
        with self.store.transaction(manager="kube-controller-manager") as tx:
            ns = tx.try_get("Namespace", "", name)
            if ns is None or not ns["metadata"].get("deletionTimestamp"):
                return True
            finalizers = list((ns.get("spec") or {}).get("finalizers") or [])
            if FINALIZER in finalizers:
                left = 0
                for info in self.store.kinds:
                    if not info.namespaced:
                        continue
                    for obj in tx.list(info.kind, name):
                        md = obj["metadata"]
                        if tx.try_get(info.kind, name, md["name"]) is None:
                            continue  # gone with an owner deleted before it (the store's cascade)
                        if md.get("finalizers"):
                            left += 1  # marked now or before: its own finalizers' controllers remove it
                        tx.delete(info.kind, name, md["name"])
                if left:
                    return False
                finalizers.remove(FINALIZER)
                ns["spec"] = {**(ns.get("spec") or {}), "finalizers": finalizers}
                if not finalizers:
                    ns["spec"].pop("finalizers")
                tx.update(ns)
                ns = tx.try_get("Namespace", "", name)
                if ns is None:
                    return True  # the store removes a deleting object its last finalizer leaves
            if (ns.get("spec") or {}).get("finalizers"):
                return True  # other finalizers: their controllers' to remove; a later event brings it back
            tx.delete("Namespace", "", name)
            return True
