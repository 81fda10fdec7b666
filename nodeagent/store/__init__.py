"""Embedded object store of Kubernetes-shaped objects (SQLite + cache + in-process watch).

The control plane's storage: resourceVersion and optimistic concurrency, finalizers,
ownerReference garbage collection, atomic multi-object transactions and watch. Kinds and
their validation come from the object model through a `KindRegistry`.
"""

from nodeagent.store.kinds import KindInfo, KindRegistry, Obj, builtin_kinds
from nodeagent.store.meta import InvalidObject, Key, clone
from nodeagent.store.selectors import Selector, from_label_selector, parse_selector
from nodeagent.store.store import OBJECTS_DB, ObjectList, ObjectStore, StoreBusy
from nodeagent.store.txn import CONFIGURED, CREATED, UNCHANGED, ApplyResult, Transaction
from nodeagent.store.watch import (
    ADDED,
    DELETED,
    MODIFIED,
    RESYNC,
    TooOldResourceVersion,
    Watch,
    WatchEvent,
)

__all__ = [
    "ADDED",
    "CONFIGURED",
    "CREATED",
    "DELETED",
    "MODIFIED",
    "OBJECTS_DB",
    "RESYNC",
    "UNCHANGED",
    "ApplyResult",
    "InvalidObject",
    "Key",
    "KindInfo",
    "KindRegistry",
    "Obj",
    "ObjectList",
    "ObjectStore",
    "Selector",
    "StoreBusy",
    "TooOldResourceVersion",
    "Transaction",
    "Watch",
    "WatchEvent",
    "builtin_kinds",
    "clone",
    "from_label_selector",
    "parse_selector",
]
