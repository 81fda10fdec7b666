"""The garbage collector: deletes dependents whose owners are gone and acts on the `orphan` and
`foregroundDeletion` finalizers, as kube-controller-manager's garbage collector does
(pkg/controller/garbagecollector: attemptToDeleteItem, processDeletingDependentsItem, orphanDependents).

Why: a delete with propagationPolicy Orphan or Foreground (or a kind's orphaning default) leaves the
owner with a finalizer and a deletionTimestamp (store/propagation.py); something must then orphan
the dependents (drop their ownerReference to it) or delete them, and remove the finalizer. A
dependent created or updated to name an owner that does not exist is garbage too. The store
already removes, in the same transaction, the dependents of an owner it removes (the background
cascade; store/txn.py), so that case needs nothing here.

Two parts: pure decisions (`dependent_action`, `owner_actions`) over an object and what its owners
or dependents look like, and `GarbageCollector`, a component of the control-plane loop
(controlplane/loop.py) that queues the objects each watch event concerns and applies the decisions
in one store transaction per object. The real kube-controller-manager's garbage collector can run
beside it or instead.

Differences from upstream, on purpose: an owner is looked up by its reference's kind, name and the
dependent's namespace in the store (upstream asks the API with the RESTMapper); a reference to a kind
the store does not know (a custom resource whose definition is gone) is left alone, upstream
retries it with backoff. Dependents are deleted through the store, so a pod goes at once rather
than gracefully (as the embedded namespace controller deletes them). Custom resource kinds
registered after start are not watched.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeagent.errors import NodeAgentError
from nodeagent.store import ObjectStore
from nodeagent.store.propagation import (
    BACKGROUND_POLICY,
    FOREGROUND,
    FOREGROUND_POLICY,
    ORPHAN,
    ORPHAN_POLICY,
    deletion_finalizers,
)
from nodeagent.store.txn import Transaction
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

RETRY = 1.0
"""Seconds before an object whose garbage is not all collected (blocking dependents left, a failed
write) is looked at again."""

Key = tuple[str, str, str]

SOLID, DANGLING, WAITING, UNKNOWN = "solid", "dangling", "waiting", "unknown"
"""An owner as a dependent sees it: present; absent (or another object under its name); present and
deleting its dependents in the foreground; of a kind nobody serves."""


@dataclass(frozen=True)
class Action:
    """One write: `strip` the ownerReferences to `uids` from `key`; `delete` `key` with `policy`;
    `unfinalize` (remove `finalizer` from) `key`."""

    verb: str
    key: Key
    uids: tuple[str, ...] = ()
    policy: str = ""
    finalizer: str = ""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    md = obj.get("metadata")
    # a dict is a Mapping: its exact-type test spares the ABC check, run for every watch event
    return md if type(md) is dict or isinstance(md, Mapping) else {}


def key_of(obj: Mapping[str, Any]) -> Key:
    md = _meta(obj)
    return (str(obj.get("kind") or ""), str(md.get("namespace") or ""), str(md.get("name") or ""))


def owner_refs(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in _meta(obj).get("ownerReferences") or () if isinstance(r, Mapping) and r.get("uid")]


def deleting_with(obj: Mapping[str, Any], finalizer: str) -> bool:
    md = _meta(obj)
    return bool(md.get("deletionTimestamp")) and finalizer in (md.get("finalizers") or ())


def owner_state(owner: Mapping[str, Any] | None, uid: str, known_kind: bool) -> str:
    """How a dependent sees the owner its reference (with `uid`) points at, given what is stored
    under the reference's coordinates (None: nothing)."""
    if not known_kind:
        return UNKNOWN
    if owner is None or _meta(owner).get("uid") != uid:
        return DANGLING
    return WAITING if deleting_with(owner, FOREGROUND) else SOLID


def dependent_action(obj: Mapping[str, Any], states: Mapping[str, str], has_dependents: bool) -> Action | None:
    """attemptToDeleteItem for one object with owners, `states` by owner uid: None to keep it as it is.

    With a solid owner left it stays, less its references to dangling owners and owners deleting in the
    foreground; with none it is garbage: deleted in the foreground when an owner waits for it and it
    has dependents of its own, else with the policy its own finalizers ask for (Background by default).
    An object already being deleted is left to its own finalizers, and one with an owner of an
    unknown kind is kept."""
    md = _meta(obj)
    refs = owner_refs(obj)
    if not refs or md.get("deletionTimestamp"):
        return None
    found = [states.get(str(r["uid"]), UNKNOWN) for r in refs]
    if UNKNOWN in found:
        return None
    if SOLID in found:
        drop = tuple(str(r["uid"]) for r, s in zip(refs, found, strict=True) if s in (DANGLING, WAITING))
        return Action("strip", key_of(obj), uids=drop) if drop else None
    if WAITING in found and has_dependents:
        return Action("delete", key_of(obj), policy=FOREGROUND_POLICY)
    finalizers = md.get("finalizers") or ()
    policy = ORPHAN_POLICY if ORPHAN in finalizers else FOREGROUND_POLICY if FOREGROUND in finalizers \
        else BACKGROUND_POLICY
    return Action("delete", key_of(obj), policy=policy)


def owner_actions(owner: Mapping[str, Any], dependents: Sequence[Mapping[str, Any]]) -> tuple[list[Action], bool]:
    """What an owner being deleted with a garbage-collection finalizer needs, and whether its
    dependents must be looked at one by one (the foreground case: each is `dependent_action`'s).

    `orphan` (orphanDependents): every dependent loses its references to the owner, then the
    finalizer goes. `foregroundDeletion` (processDeletingDependentsItem): the finalizer goes once no
    dependent blocks the owner's deletion (blockOwnerDeletion on its reference); until then the
    dependents are collected."""
    md = _meta(owner)
    uid = str(md.get("uid") or "")
    if deleting_with(owner, ORPHAN):
        strips = [Action("strip", key_of(d), uids=(uid,)) for d in dependents]
        return [*strips, Action("unfinalize", key_of(owner), finalizer=ORPHAN)], False
    if deleting_with(owner, FOREGROUND):
        blocking = [d for d in dependents
                    if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in owner_refs(d))]
        if not blocking:
            return [Action("unfinalize", key_of(owner), finalizer=FOREGROUND)], False
        return [], True
    return [], False


class GarbageCollector:
    """A Component of the control plane loop (controlplane/loop.py), watching every built-in kind."""

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.kinds = tuple(info.kind for info in store.kinds)
        self._queue: dict[Key, float] = {}  # object -> monotonic time it is due
        self._refs: dict[Key, tuple[str, ...]] = {}  # the owner uids last seen per object with owners

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        self._queue.clear()
        self._refs.clear()
        for obj in objs:
            self.handle("ADDED", obj)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        key = key_of(obj)
        refs = tuple(str(r["uid"]) for r in owner_refs(obj))
        now = self.clock.monotonic()
        if event_type == "DELETED":
            self._refs.pop(key, None)
            self._queue.pop(key, None)
            # an owner deleting in the foreground may now be free of its last blocking dependent
            namespace = key[1]
            for ref in owner_refs(obj):
                self._queue.setdefault((str(ref.get("kind") or ""), namespace, str(ref.get("name") or "")), now)
            return
        md = _meta(obj)
        changed = self._refs.get(key, ()) != refs
        if refs:
            self._refs[key] = refs
        else:
            self._refs.pop(key, None)
        if (refs and changed and not self._all_solid(obj)) or deleting_with(obj, ORPHAN) \
                or deleting_with(obj, FOREGROUND):
            self._queue.setdefault(key, now)
        elif md.get("deletionTimestamp") and refs:
            self._queue.pop(key, None)

    def _all_solid(self, obj: Mapping[str, Any]) -> bool:
        """Every owner present and not waiting for its dependents, read from the committed state without
        a transaction: the usual new dependent (a claim of its pod, a lease of its node) needs no round."""
        namespace = str(_meta(obj).get("namespace") or "")
        for ref in owner_refs(obj):
            kind = str(ref.get("kind") or "")
            if kind not in self.store.kinds:
                return False
            info = self.store.kinds.get(kind)
            owner = self.store.peek(kind, namespace if info.namespaced else "", str(ref.get("name") or ""))
            if owner_state(owner, str(ref["uid"]), True) != SOLID:
                return False
        return True

    def work(self, limit: int) -> int:
        now = self.clock.monotonic()
        done = 0
        for key, due in sorted(self._queue.items(), key=lambda item: item[1]):
            if done >= limit or due > now:
                break
            done += 1
            try:
                finished = self.sync(key)
            except NodeAgentError as err:
                logger.warning("garbage collection failed object=%s/%s/%s err=%s", *key, err)
                finished = False
            if finished:
                self._queue.pop(key, None)
            else:
                self._queue[key] = now + RETRY
        return done

    def deadline(self) -> float | None:
        return min(self._queue.values()) if self._queue else None

    def idle(self) -> bool:
        due = self.deadline()
        return due is None or due > self.clock.monotonic()

    # --- one object ---

    def sync(self, key: Key) -> bool:
        """One round for an object: True when nothing more is to be done for it now."""
        kind, namespace, name = key
        if kind not in self.store.kinds:
            return True
        with self.store.transaction(manager="kube-controller-manager") as tx:
            obj = tx.try_get(kind, namespace, name)
            if obj is None:
                return True
            obj.setdefault("kind", kind)
            uid = str(obj["metadata"].get("uid") or "")
            actions, each = owner_actions(obj, tx.dependents(uid))
            if each:
                for dep in tx.dependents(uid):
                    action = self._dependent(tx, dep)
                    if action is not None:
                        self._apply(tx, action)
                # the dependents deleted at once may have been the last blocking ones
                actions, each = owner_actions(obj, tx.dependents(uid))
                if each:
                    return False  # looked at again once its blocking dependents go (their DELETED) or after RETRY
            if not actions:
                action = self._dependent(tx, obj)
                actions = [action] if action is not None else []
            for action in actions:
                self._apply(tx, action)
        return True

    def _dependent(self, tx: Transaction, obj: Mapping[str, Any]) -> Action | None:
        namespace = str(_meta(obj).get("namespace") or "")
        states: dict[str, str] = {}
        for ref in owner_refs(obj):
            ref_kind = str(ref.get("kind") or "")
            known = ref_kind in self.store.kinds
            owner = None
            if known:
                info = self.store.kinds.get(ref_kind)
                owner = tx.try_get(ref_kind, namespace if info.namespaced else "", str(ref.get("name") or ""))
            states[str(ref["uid"])] = owner_state(owner, str(ref["uid"]), known)
        uid = str(_meta(obj).get("uid") or "")
        return dependent_action(obj, states, has_dependents=bool(uid and tx.dependents(uid)))

    def _apply(self, tx: Transaction, action: Action) -> None:
        kind, namespace, name = action.key
        cur = tx.try_get(kind, namespace, name)
        if cur is None:
            return
        md = cur["metadata"]
        if action.verb == "strip":
            refs = [r for r in md.get("ownerReferences") or () if r.get("uid") not in action.uids]
            if refs == list(md.get("ownerReferences") or ()):
                return
            md["ownerReferences"] = refs
            if not refs:
                md.pop("ownerReferences")
            tx.update(cur, with_status=True)
        elif action.verb == "unfinalize":
            tx.set_finalizers(kind, namespace, name, [f for f in md.get("finalizers") or () if f != action.finalizer])
        elif action.verb == "delete":
            logger.info("garbage collector deleting object=%s/%s/%s policy=%s", kind, namespace, name, action.policy)
            wanted = deletion_finalizers(kind, "", list(md.get("finalizers") or ()), action.policy)
            if wanted is not None:
                tx.set_finalizers(kind, namespace, name, wanted)
            tx.delete(kind, namespace, name)
