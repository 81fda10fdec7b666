"""The write rules of the object store, applied inside one SQLite transaction.

A `Transaction` sees the committed objects plus its own writes, turns create / update /
update_status / apply / delete into rows and watch events, and enforces the API server's
rules: resourceVersion and uid preconditions (Conflict), uniqueness (AlreadyExists),
system metadata (uid, creationTimestamp, generation), finalizers with deletionTimestamp,
and ownerReference garbage collection (background cascade, in the same transaction).
Every operation is atomic on its own (a SAVEPOINT), the whole block commits together in
`ObjectStore.transaction()`. Objects written here are new dicts, never mutated afterwards,
so the cache and the watch events may share them; callers always get copies.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from nodeagent.errors import RequestTooLarge, ValidationError
from nodeagent.store import interning, limits, meta, validation
from nodeagent.store.kinds import KindInfo, Obj
from nodeagent.store.meta import Key, clone
from nodeagent.store.selectors import Selector, as_selector
from nodeagent.store.sqlite import ObjectsDB, dumps
from nodeagent.store.watch import ADDED, DELETED, MODIFIED, WatchEvent

if TYPE_CHECKING:
    from nodeagent.store.store import ObjectStore

T = TypeVar("T")
_Objs = list[Obj]  # aliases: the `list` method shadows the builtin inside the class
_Events = list[WatchEvent]

CREATED = "created"
CONFIGURED = "configured"
UNCHANGED = "unchanged"

_SYSTEM_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
_NOT_CONTENT = ("apiVersion", "kind", "metadata", "status")
_OMIT_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences", "generateName")
_GENERATE_ATTEMPTS = 8


@dataclass(frozen=True)
class ApplyResult:
    """What `apply` did, in kubectl's words: created, configured or unchanged."""

    object: Obj
    action: str


def _content(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What metadata.generation tracks: everything but apiVersion, kind, metadata and status."""
    return {k: v for k, v in obj.items() if k not in _NOT_CONTENT}


_GENERATION_ON_CREATE = ("spec", "create", "spec+labels")
"""The kinds.model GENERATION_* rules that set metadata.generation to 1 on create."""


def _bumps_generation(info: KindInfo, new: Obj, cur: Obj) -> bool:
    """Whether an update raises metadata.generation, by the kind's rule (kinds.model GENERATION_*):
    a change of the content ("spec", "update"), or of the content or labels ("spec+labels")."""
    rule = info.generation
    if rule not in ("spec", "update", "spec+labels"):
        return False
    if _content(new) != _content(cur):
        return True
    return rule == "spec+labels" and new["metadata"].get("labels") != cur["metadata"].get("labels")


def _out(obj: Obj, copy: bool) -> Obj:
    return clone(obj) if copy else obj


def share_unchanged(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """Point the parts of `new` that equal `old`'s at old's objects, in place, before `new` is written.

    Why: a write of one field (the scheduler's binding sets spec.nodeName and one condition, a node's
    status write a few conditions) arrives as a whole new copy of the object, while the version it
    replaces stays alive in the watch history and the encoded-line caches: two full trees per pod
    where one and a small difference would do. Committed objects are never mutated (the store's
    copy rule), so versions may share every unchanged dict, list and string. "Unchanged" is the same
    JSON value (same_json): `==` takes 1, 1.0 and true for one another, so a write turning a nested 1
    into true would keep the 1 (kube-apiserver compares the encoded bytes); and a caller's next
    step may tell changed fields by identity (the API server's managedFields of a client's write).
    The metadata dict itself stays new's own (_write sets its resourceVersion), its parts are
    shared. Only containers that differ are walked: a few C-level comparisons per changed path,
    and one JSON encoding of each pair found equal."""
    md, old_md = new.get("metadata"), old.get("metadata")
    _share_dict(new, old, _DEPTH, "metadata")
    if type(md) is dict and type(old_md) is dict:
        _share_dict(md, old_md, _DEPTH, "")


_DEPTH = 8


def _share_dict(new: dict[str, Any], old: Mapping[str, Any], depth: int, skip: str = "") -> None:
    for k, v in new.items():
        if k != skip:
            shared = _shared(v, old.get(k, _MISSING), depth)
            if shared is not v:
                new[k] = shared  # an existing key: the dict's size does not change while iterating


def _share_items(new: list[Any], old: list[Any], depth: int) -> None:
    for i, (v, o) in enumerate(zip(new, old, strict=False)):  # a longer or shorter list: its common prefix
        shared = _shared(v, o, depth)
        if shared is not v:
            new[i] = shared


def _shared(v: Any, o: Any, depth: int) -> Any:
    """`o` where it is `v` to the byte; else `v`, its own unchanged parts pointed at o's (down to `depth`)."""
    if o is v or type(o) is not type(v):
        return v
    if v == o and (type(v) not in (dict, list) or same_json(v, o)):
        return o
    if depth and type(v) is dict:
        _share_dict(v, o, depth - 1, "")
    elif depth and type(v) is list:
        _share_items(v, o, depth - 1)
    return v


def same_json(a: Any, b: Any) -> bool:
    """Whether `a` and `b` are the same JSON value: `==` with JSON's types (== takes 1, 1.0 and true
    for one another), key order aside (a canonical encoding, as upstream's, has none)."""
    try:
        return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError: beyond JSON: not shared
        return False


_MISSING = object()


def _owner_uids(obj: Mapping[str, Any]) -> list[str]:
    return [str(ref.get("uid")) for ref in obj["metadata"].get("ownerReferences") or [] if ref.get("uid")]


FieldManagerHook = Callable[[Obj | None, Obj, str, str], Obj]
"""(stored or None, new, manager, subresource) -> `new` with its managedFields entry for `manager`'s
Update, as kube-apiserver's field manager records a component's create or update (the store has no
schemas: the API server supplies it, ObjectStore.field_manager)."""


class Transaction:
    """Reads and writes against the store inside one `with store.transaction() as tx:` block."""

    def __init__(self, store: ObjectStore, db: ObjectsDB, rng: random.Random, *, savepoints: bool,
                 manager: str = "") -> None:
        self._store = store
        self.manager = manager
        """The in-process writer whose managedFields this transaction records ("" none: ObjectStore.transaction)."""
        self._db = db
        self._rng = rng
        self._savepoints = savepoints
        self.overlay: dict[Key, Obj | None] = {}
        """Objects written in this transaction; None marks a deletion."""
        self.events: _Events = []
        self.rv = store.resource_version

    # --- reads ---

    def _current(self, key: Key) -> Obj | None:
        if key in self.overlay:
            return self.overlay[key]
        return self._store._committed(key)

    def generate_name(self, prefix: str) -> str:
        """`prefix` + five random characters of the API server's alphabet (ObjectStore.generate_name)."""
        return meta.generated_name(prefix, self._rng)

    def record_fields(self, old: Obj | None, new: Obj, subresource: str = "") -> Obj:
        """`new` with the managedFields of this transaction's manager writing it over `old` (None: a
        create); `new` as it is when the transaction has no manager or the store no field manager.
        For a writer whose create the API server would record before admission changes it (a
        controller's pod): called on the object as sent, the create then keeps that entry."""
        hook = self._store.field_manager
        if not self.manager or hook is None:
            return new
        return hook(old, new, self.manager, subresource)

    def _records_fields(self) -> bool:
        """Whether this transaction's writes get their managedFields from record_fields."""
        return bool(self.manager) and self._store.field_manager is not None

    def any_committed(self, kind: str, namespace: str | None = None) -> bool:
        """Whether the store holds any object of `kind` (in `namespace`; committed: this
        transaction's own writes are not looked at), for a check hot paths skip when there is
        nothing: one dict lookup for an empty kind, a pass over its keys for a namespace."""
        objs = self._store._cache.get(kind)
        if not objs:
            return False
        if namespace is None:
            return True
        ns = self._store._ns(self._store.kinds.get(kind), namespace)
        return any(k[0] == ns for k in objs)

    def peek(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The object as this transaction sees it, not copied: must not be mutated (copy the
        parts to change, as `dict(obj)` for a new status). For writers that read to decide."""
        info = self._store.kinds.get(kind)
        return self._current((kind, self._store._ns(info, namespace), name))

    def get(self, kind: str, namespace: str, name: str) -> Obj:
        info = self._store.kinds.get(kind)
        obj = self._current((kind, self._store._ns(info, namespace), name))
        if obj is None:
            raise meta.not_found(info, name)
        return clone(obj)  # type: ignore[no-any-return]

    def try_get(self, kind: str, namespace: str, name: str) -> Obj | None:
        info = self._store.kinds.get(kind)
        obj = self._current((kind, self._store._ns(info, namespace), name))
        return None if obj is None else clone(obj)

    def list(
        self, kind: str, namespace: str | None = None, selector: Selector | str | Mapping[str, str] | None = None
    ) -> _Objs:
        info = self._store.kinds.get(kind)
        ns = None if namespace is None else self._store._ns(info, namespace)
        sel = as_selector(selector)
        merged: dict[Key, Obj | None] = {
            (kind, *k): v for k, v in self._store._kind_objects(kind).items() if ns is None or k[0] == ns
        }
        for key, obj in self.overlay.items():
            if key[0] == kind and (ns is None or key[1] == ns):
                merged[key] = obj
        return [
            clone(merged[k])
            for k in sorted(merged)
            if merged[k] is not None and sel.matches(merged[k]["metadata"].get("labels"))  # type: ignore[index]
        ]

    # --- writes ---

    # Writes return a copy the caller may change; `copy=False` returns the stored object itself
    # (shared with the cache and watch events: read-only), for callers that only keep it to read,
    # such as the control plane's caches. The input is always copied on the way in.

    def create(self, obj: Mapping[str, Any], *, copy: bool = True, uid: str = "") -> Obj:
        """Create; `uid` is the one the API server chose before its strategy ran (upstream's
        BeforeCreate fills it first: a Job's generated selector names it), else a new one."""
        return self._atomic(lambda: _out(self._create(obj, uid), copy))

    def update(self, obj: Mapping[str, Any], *, with_status: bool = False, copy: bool = True,
               keep_generation: bool = False, subresource: str = "") -> Obj:
        """Replace spec and metadata (status is kept as stored), or with `with_status` write the
        status too in the same write: what the API server's internal writes do, such as the
        pods/binding subresource setting spec.nodeName and the PodScheduled condition at once.
        `keep_generation`: a write that goes to storage without the kind's update strategy, as
        BindingREST's setPodNodeAndMetadata does, so spec.nodeName set by a binding leaves
        metadata.generation as it was. `subresource`: what the write stands for in managedFields (a
        controller's UpdateStatus whose status strategy keeps the metadata it changed, such as the
        deployment controller's revision annotation)."""
        return self._atomic(lambda: _out(self._update(obj, status_only=False, with_status=with_status,
                                                      keep_generation=keep_generation, subresource=subresource), copy))

    def update_status(self, obj: Mapping[str, Any], *, copy: bool = True) -> Obj:
        return self._atomic(lambda: _out(self._update(obj, status_only=True), copy))

    def apply(self, obj: Mapping[str, Any]) -> ApplyResult:
        return self._atomic(lambda: self._apply(obj))

    def delete(
        self, kind: str, namespace: str, name: str, *, resource_version: str | None = None, uid: str | None = None,
        copy: bool = True,
    ) -> Obj:
        """Delete now, or set deletionTimestamp while finalizers remain; returns the object as left
        (`copy=False`: the stored or deleted object itself, read-only, as the writes above)."""
        info = self._store.kinds.get(kind)
        key = (kind, self._store._ns(info, namespace), name)
        return self._atomic(lambda: _out(self._delete(info, key, resource_version, uid), copy))

    def mark_deleting(self, kind: str, namespace: str, name: str, *, deletion_timestamp: str,
                      grace_period: int | None, status: Mapping[str, Any] | None = None, copy: bool = True) -> Obj:
        """Set deletionTimestamp and deletionGracePeriodSeconds (a graceful deletion's first phase,
        rest.BeforeDelete's update): system metadata no client write may set. The generation goes
        up on the first mark, as BeforeDelete bumps it; a shortened grace period keeps it.
        `grace_period` None leaves deletionGracePeriodSeconds unset and `status` replaces the
        status in the same write (a namespace's delete: Terminating, as its REST Delete writes it).
        `copy=False` returns the written object itself (read-only), as the writes above."""
        info = self._store.kinds.get(kind)
        key = (kind, self._store._ns(info, namespace), name)

        def mark() -> Obj:
            cur = self._current(key)
            if cur is None:
                raise meta.not_found(info, name)
            md = dict(cur["metadata"])
            if "deletionTimestamp" not in md and int(md.get("generation") or 0) > 0:
                md["generation"] = int(md["generation"]) + 1
            md["deletionTimestamp"] = deletion_timestamp
            if grace_period is not None:
                md["deletionGracePeriodSeconds"] = grace_period
            new = dict(cur)
            new["metadata"] = md
            if status is not None:
                new["status"] = dict(status)
            return _out(self._write(key, new, MODIFIED, owners_changed=False), copy)

        return self._atomic(mark)

    def set_finalizers(self, kind: str, namespace: str, name: str, finalizers: Sequence[str]) -> Obj:
        """Replace metadata.finalizers as part of a delete (the generic store's
        updateForGracefulDeletionAndFinalizers writes them with the deletion mark, past the strategy:
        a deleting object may get `orphan` or `foregroundDeletion` this way, which no client update
        may add). An object being deleted that is left with none goes, as an update would remove it."""
        info = self._store.kinds.get(kind)
        key = (kind, self._store._ns(info, namespace), name)

        def write() -> Obj:
            cur = self._current(key)
            if cur is None:
                raise meta.not_found(info, name)
            new = dict(cur)
            new["metadata"] = dict(cur["metadata"], finalizers=list(finalizers))
            if not finalizers:
                new["metadata"].pop("finalizers")
            if new == cur and same_json(new, cur):
                return _out(cur, True)
            new = self.record_fields(cur, new)  # a component's patch of them (the job controller's)
            written = self._write(key, new, MODIFIED, owners_changed=False)
            wmd = written["metadata"]
            if "deletionTimestamp" in wmd and not finalizers and not wmd.get("deletionGracePeriodSeconds"):
                return _out(self._remove(key, written), True)
            return _out(written, True)

        return self._atomic(write)

    def dependents(self, owner_uid: str) -> _Objs:
        """The objects whose ownerReferences name `owner_uid` (copies), as this transaction sees them."""
        out: _Objs = []
        for key in self._db.dependents(owner_uid):
            cur = self._current(key)
            if cur is not None and any(r.get("uid") == owner_uid for r in cur["metadata"].get("ownerReferences") or ()):
                out.append(_out(cur, True))
        return out

    def collect_garbage(self) -> int:
        """Delete every object whose owners are all gone; the number of objects deleted or marked."""
        return self._atomic(self._collect_garbage)

    def expire(self, key: Key) -> int:
        """Remove the object at `key` because its TTL ran out (ObjectStore.expire): at once, whatever
        its finalizers, as etcd drops a key whose lease expired; 1 if it was there."""
        cur = self._current(key)
        if cur is None:
            return 0
        self._atomic(lambda: self._remove(key, cur))
        return 1

    # --- machinery ---

    @contextmanager
    def group(self) -> Iterator[None]:
        """Several operations as one: an exception leaving the block undoes them (and only
        them) and propagates; the transaction itself goes on. Lets a controller batch the work
        of many objects into one commit while each object's writes stay all-or-nothing."""
        with self._savepoint("grp"):
            yield

    def _atomic(self, fn: Callable[[], T]) -> T:
        if not self._savepoints:
            return fn()
        with self._savepoint("op"):
            return fn()

    @contextmanager
    def _savepoint(self, name: str) -> Iterator[None]:
        mark, rv = len(self.events), self.rv
        self._db.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self._db.execute(f"ROLLBACK TO {name}")
            self._db.execute(f"RELEASE {name}")
            del self.events[mark:]
            self.rv = rv
            self.overlay = {}
            for ev in self.events:
                self.overlay[meta.key_of(dict(ev.object))] = None if ev.type == DELETED else ev.object  # type: ignore[assignment]
            raise
        self._db.execute(f"RELEASE {name}")

    def _write(self, key: Key, obj: Obj, event: str, owners_changed: bool, *, retry_fields: bool = False) -> Obj:
        """Store `obj` at `key`; RequestTooLarge when etcd would refuse it (limits.py). `retry_fields`:
        an in-process writer's create or update whose managedFields this transaction recorded, tried
        again without them when too large, as kube-apiserver's handlers do for a client's write."""
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        body = dumps(obj)
        try:
            try:
                self._check_size(key, obj, len(body), update=event != ADDED)
            except RequestTooLarge:
                if not (retry_fields and "managedFields" in obj["metadata"]):
                    raise
                del obj["metadata"]["managedFields"]  # the write's own object (never committed yet)
                body = dumps(obj)
                self._check_size(key, obj, len(body), update=event != ADDED)
        except RequestTooLarge:
            self.rv -= 1
            raise
        size = self._db.put(key, obj, _owner_uids(obj) if owners_changed else None, body)
        if size <= interning.MAX_OBJECT_BYTES:
            self._store._values.share(obj)
        self.overlay[key] = obj
        self.events.append(WatchEvent(event, obj, self.rv, size))
        return obj

    def _check_size(self, key: Key, obj: Obj, json_bytes: int, *, update: bool) -> None:
        """RequestTooLarge when the object's stored encoding is more than etcd takes: its JSON (and
        Go's newline) when that fits, since a built-in kind's protobuf is smaller than its JSON
        (a pod of 10,000 containers: 1.41 MB of protobuf, 1.5x that of JSON), else the protobuf the
        API server's encoder gives (ObjectStore.stored_size), encoded only for such large objects."""
        info = self._store.kinds.get(key[0])
        klen = limits.etcd_key(info, key[1], key[2])
        lease = info.ttl > 0
        # etcd's value has no resourceVersion (the key's revision is it) and ends with Go's newline
        as_json = json_bytes - len('"resourceVersion":"",') - len(obj["metadata"]["resourceVersion"]) + 1
        if limits.fits(klen, as_json, update=update, revision=self.rv, lease=lease):
            return
        sizer = None if info.custom else self._store.stored_size
        stored = sizer(info, obj) if sizer is not None else None
        limits.check(klen, as_json if stored is None else stored, update=update, revision=self.rv, lease=lease)

    def _key(self, info: KindInfo, obj: Mapping[str, Any]) -> Key:
        md = obj.get("metadata")
        if type(md) is not dict and not isinstance(md, Mapping):  # the exact-type test spares the ABC check
            raise meta.InvalidObject(info, "", "metadata", "Required value")
        return (info.kind, self._store._ns(info, str(md.get("namespace") or "")), str(md.get("name") or ""))

    def _prepare(self, obj: Mapping[str, Any], status_only: bool = False) -> tuple[KindInfo, Obj]:
        """Copy the input, check kind and apiVersion, fix the namespace for the kind's scope.

        `status_only`: a status write takes only the status (and reads the metadata's preconditions):
        the status is copied, the metadata's top level, the rest not (a pod's spec and managedFields
        were cloned for nothing on every status write)."""
        info = self._store.kinds.get(str(obj.get("kind", "")))
        if status_only:
            out: Obj = dict(obj)
            if "status" in out:
                out["status"] = clone(out["status"])
            if isinstance(out.get("metadata"), Mapping):
                out["metadata"] = dict(out["metadata"])
        else:
            out = clone(dict(obj))
        version = out.get("apiVersion", "")
        if version not in info.api_versions:
            supported = ", ".join(f'"{v}"' for v in info.api_versions)
            raise ValidationError("apiVersion", f'Unsupported value: "{version}": supported values: {supported}')
        md = out.get("metadata")
        if md is None:
            md = out["metadata"] = {}
        if not isinstance(md, dict):
            raise ValidationError("metadata", f"Invalid value: must be an object, not {validation.go_type(md)}")
        for attr in _OMIT_EMPTY:  # omitempty on the wire: an empty list or map is the same as none
            if attr in md and not md[attr]:
                del md[attr]
        if info.namespaced:
            md["namespace"] = md.get("namespace") or "default"
        else:
            md.pop("namespace", None)
        return info, out

    def _admit(self, info: KindInfo, obj: Obj, old: Obj | None) -> Obj:
        """Defaulting, metadata checks and the kind's validation hooks; errors name the object."""
        name = str(obj["metadata"].get("name") or "")
        given = obj
        errors: list[ValidationError] = []
        try:
            if old is not None and info.default_update is not None:
                obj = info.default_update(obj, old)
            elif info.default is not None:
                obj = info.default(obj)
        except ValidationError as err:
            if isinstance(err, meta.InvalidObject):
                raise
            errors, obj = _each(err), given  # the hook validates as it defaults
        # every error in one answer, the metadata's first, as upstream's Validate<Kind> lists
        # ValidateObjectMeta's before the spec's
        first = metadata_errors(info, obj, old)
        if not errors:
            try:
                if info.validate is not None:
                    info.validate(obj)
                if old is None and info.admit is not None and not first:
                    info.admit(obj, self)
                if old is not None and info.validate_update is not None:
                    info.validate_update(obj, old)
            except ValidationError as err:
                if isinstance(err, meta.InvalidObject) and not first:
                    raise
                errors = _each(err)
        # a hook that checks the metadata itself (a Service's DNS-label name, the DRA kinds' labels)
        # answers for those fields: the generic check's errors on them are left out
        own = {e.path for e in errors}
        first = [e for e in first if e.path not in own]
        found = (errors or first) if info.metadata_apart else [*first, *errors]
        if found:
            raise meta.InvalidObject.wrap(info, name, found[0] if len(found) == 1 else meta.ErrorList(found))
        return self._go_fields(info, obj, old)

    def _go_fields(self, info: KindInfo, obj: Obj, old: Obj | None) -> Obj:
        """`obj` with the fields its Go types always write (ObjectStore.go_fields), as kube-apiserver
        stores it: after defaulting and validation, before the no-op check; what it shares with the
        stored version `old` is complete already."""
        fills = self._store.go_fields
        if fills is None or info.custom:
            return obj
        fill = fills(info.kind)
        return obj if fill is None else fill(obj, old)

    def _admit_status(self, info: KindInfo, obj: Obj, old: Obj) -> Obj:
        """A status-only write: the kind's status hook when it has one (metadata and spec are the
        stored ones, admitted before), else the full admission."""
        if info.default_status is None:
            return self._admit(info, obj, old)
        name = str(obj["metadata"].get("name") or "")
        try:
            obj = info.default_status(obj, old)
            if info.validate_update is not None:
                info.validate_update(obj, old)
        except ValidationError as err:
            raise meta.InvalidObject.wrap(info, name, err) from None
        return self._go_fields(info, obj, old)

    def _create(self, src: Mapping[str, Any], uid: str = "") -> Obj:
        info, obj = self._prepare(src)
        md = obj["metadata"]
        generate = md.get("generateName") if not md.get("name") else None
        if generate:
            md["name"] = meta.generated_name(str(generate), self._rng)
        elif not md.get("name"):
            raise meta.InvalidObject(info, "", "metadata.name", "Required value: name or generateName is required")
        for attr in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            md.pop(attr, None)
        recorded = "managedFields" not in md  # else recorded before (record_fields) or the writer's own
        if recorded:
            obj = self.record_fields(None, obj)
        obj = self._admit(info, obj, None)
        md = obj["metadata"]
        key = self._key(info, obj)
        attempts = _GENERATE_ATTEMPTS if generate else 1
        while self._current(key) is not None:
            attempts -= 1
            if attempts <= 0:
                raise meta.already_exists(info, key[2])
            md["name"] = meta.generated_name(str(generate), self._rng)
            key = self._key(info, obj)
        md["uid"] = uid or str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        md["creationTimestamp"] = meta.rfc3339(self._store.clock.now())
        if info.generation in _GENERATION_ON_CREATE:
            md["generation"] = 1
        else:
            md.pop("generation", None)
        return self._write(key, obj, ADDED, owners_changed=bool(md.get("ownerReferences")),
                           retry_fields=recorded and self._records_fields())

    def _preconditions(self, info: KindInfo, cur: Obj, resource_version: Any, uid: Any) -> None:
        name = cur["metadata"]["name"]
        if uid and uid != cur["metadata"]["uid"]:
            raise meta.uid_conflict(info, name, str(uid), cur["metadata"]["uid"])
        if resource_version and str(resource_version) != cur["metadata"]["resourceVersion"]:
            raise meta.conflict(info, name)

    def _update(self, src: Mapping[str, Any], *, status_only: bool, with_status: bool = False,
                keep_generation: bool = False, subresource: str = "") -> Obj:
        info, obj = self._prepare(src, status_only)
        key = self._key(info, obj)
        cur = self._current(key)
        if cur is None:
            raise meta.not_found(info, key[2])
        md = obj["metadata"]
        self._preconditions(info, cur, md.get("resourceVersion"), md.get("uid"))
        return self._replace(info, key, cur, obj, status_only=status_only, with_status=with_status,
                             keep_generation=keep_generation, subresource=subresource)

    def _replace(
        self, info: KindInfo, key: Key, cur: Obj, obj: Obj, *, status_only: bool, with_status: bool = False,
        keep_generation: bool = False, subresource: str = "",
    ) -> Obj:
        """Write `obj` over `cur`, keeping what the caller may not change; a no-op writes nothing."""
        old_md = cur["metadata"]
        if status_only:
            new = dict(cur)
            new["metadata"] = dict(old_md)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
        else:
            new = obj
            md = new["metadata"]
            for attr in _SYSTEM_META:
                if attr in old_md:
                    md[attr] = old_md[attr]
                else:
                    md.pop(attr, None)
            if not with_status:  # else the caller's status is written as given (validated with the rest)
                if "status" in cur:
                    new["status"] = cur["status"]
                else:
                    new.pop("status", None)
            new = self._admit(info, new, cur)
            md = new["metadata"]
            if "deletionTimestamp" in old_md:
                added = sorted(set(md.get("finalizers") or []) - set(old_md.get("finalizers") or []))
                if added:
                    raise meta.InvalidObject(
                        info,
                        key[2],
                        "metadata.finalizers",
                        "Forbidden: no new finalizers can be added if the object is being deleted, "
                        f"found new finalizers {added}",
                    )
            if not keep_generation and _bumps_generation(info, new, cur):
                md["generation"] = int(old_md.get("generation") or 0) + 1
        new["metadata"]["resourceVersion"] = old_md["resourceVersion"]
        if status_only:
            new = self._admit_status(info, new, cur)
        if new == cur and same_json(new, cur):  # kube-apiserver's no-op check compares the encoded bytes too
            return cur
        if not keep_generation:  # a storage-level write (a binding) is no field manager's, as upstream
            if self._records_fields():
                # shared first (the comparison tells changes by identity), so the field manager's
                # comparison skips them (a status write's copied status was walked in full)
                share_unchanged(new, cur)
            new = self.record_fields(cur, new, "status" if status_only else subresource)
        share_unchanged(new, cur)
        owners_changed = new["metadata"].get("ownerReferences") != old_md.get("ownerReferences")
        written = self._write(key, new, MODIFIED, owners_changed,
                              retry_fields=not keep_generation and self._records_fields())
        wmd = written["metadata"]
        # ShouldDeleteDuringUpdate: the last finalizer gone from an object being deleted with no
        # grace period left; one in its grace period (a pod the node still terminates) stays. A
        # Namespace also needs spec.finalizers empty (upstream's ShouldDeleteNamespaceDuringUpdate):
        # a Terminating one stays until the namespace controller has emptied it.
        if "deletionTimestamp" in wmd and not wmd.get("finalizers") and not wmd.get("deletionGracePeriodSeconds") \
                and not (info.kind == "Namespace" and (written.get("spec") or {}).get("finalizers")):
            return self._remove(key, written)
        return written

    def _apply(self, src: Mapping[str, Any]) -> ApplyResult:
        info, obj = self._prepare(src)
        key = self._key(info, obj)
        cur = self._current(key)
        if cur is None:
            return ApplyResult(clone(self._create(src)), CREATED)
        md = obj["metadata"]
        self._preconditions(info, cur, md.get("resourceVersion"), md.get("uid"))
        new: Obj = {k: v for k, v in cur.items() if k in ("metadata", "status")}
        new.update({k: v for k, v in obj.items() if k not in ("metadata", "status")})
        new_md = dict(cur["metadata"])
        for attr in ("labels", "annotations"):
            if md.get(attr):
                new_md[attr] = md[attr]
            else:
                new_md.pop(attr, None)
        src_md = src.get("metadata") or {}
        for attr in ("ownerReferences", "finalizers"):
            if attr in src_md:  # given, even as an empty list: replace; absent: keep
                if md.get(attr):
                    new_md[attr] = md[attr]
                else:
                    new_md.pop(attr, None)
        new["metadata"] = new_md
        written = self._replace(info, key, cur, new, status_only=False)
        action = UNCHANGED if written is cur else CONFIGURED
        return ApplyResult(clone(written), action)

    def _delete(self, info: KindInfo, key: Key, resource_version: str | None, uid: str | None) -> Obj:
        cur = self._current(key)
        if cur is None:
            raise meta.not_found(info, key[2])
        self._preconditions(info, cur, resource_version, uid)
        return self._delete_obj(key, cur)

    def _delete_obj(self, key: Key, cur: Obj) -> Obj:
        md = cur["metadata"]
        if md.get("finalizers"):
            if "deletionTimestamp" in md and not md.get("deletionGracePeriodSeconds"):
                return cur
            # markAsDeleting: now (or the earlier timestamp a graceful deletion set), no grace left
            now = meta.rfc3339(self._store.clock.now())
            stamp = md["deletionTimestamp"] if "deletionTimestamp" in md and md["deletionTimestamp"] <= now else now
            new = dict(cur)
            new["metadata"] = dict(md, deletionTimestamp=stamp)
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            return self._write(key, new, MODIFIED, owners_changed=False)
        return self._remove(key, cur)

    def _remove(self, key: Key, cur: Obj) -> Obj:
        """Delete the row, then collect the dependents whose owners are all gone (background cascade)."""
        self.rv += 1
        gone = dict(cur)
        gone["metadata"] = dict(cur["metadata"], resourceVersion=str(self.rv))
        size = self._db.remove(key, had_owners=bool(cur["metadata"].get("ownerReferences")))
        self.overlay[key] = None
        # weighed as the row it was (the resourceVersion's digits aside): no second encoding (ObjectsDB.remove)
        self.events.append(WatchEvent(DELETED, gone, self.rv, size))
        for dep_key in self._db.dependents(str(cur["metadata"]["uid"])):
            dep = self._current(dep_key)
            if dep is None or any(self._db.uid_exists(u) for u in _owner_uids(dep)):
                continue
            self._delete_obj(dep_key, dep)  # recurses through _remove for the dependent's own dependents
        return gone

    def _collect_garbage(self) -> int:
        count = 0
        for key, obj in self._store._all_committed():
            if key in self.overlay:
                continue
            uids = _owner_uids(obj)
            if not uids or "deletionTimestamp" in obj["metadata"]:
                continue
            if any(self._db.uid_exists(u) for u in uids):
                continue
            self._delete_obj(key, obj)
            count += 1
        return count


_CHECKED_METADATA = ("name", "namespace", "labels", "annotations", "ownerReferences", "finalizers")


def _checked_metadata_changed(new: Obj, old: Obj) -> bool:
    """Whether an update changes what `_check_metadata` looks at (the stored object passed it):
    most updates (bindings, status) leave it as it was, and the check was 3% of a pod's cost."""
    n, o = new["metadata"], old["metadata"]
    return any(n.get(attr) != o.get(attr) for attr in _CHECKED_METADATA)


def metadata_errors(info: KindInfo, obj: Obj, old: Obj | None = None) -> list[ValidationError]:
    """What `_check_metadata` finds in `obj` (none when an update leaves the checked metadata as
    stored), as a list: for the callers that list every error of an object in one answer."""
    if old is not None and not _checked_metadata_changed(obj, old):
        return []
    try:
        _check_metadata(info, obj)
    except ValidationError as err:
        return _each(err)
    return []


def _each(err: ValidationError) -> list[ValidationError]:
    """The errors of an ErrorList (ManyErrors, ErrorList), or `err` alone."""
    return list(getattr(err, "errors", None) or [err])


def _check_metadata(info: KindInfo, obj: Obj) -> None:
    md = obj["metadata"]
    for attr in ("name", "namespace"):  # a YAML `name: 12345` is a number: stored, it broke every list
        if not isinstance(md.get(attr, ""), str):
            detail = f"must be a string, not {validation.go_type(md[attr])}"
            raise validation.invalid(f"metadata.{attr}", md[attr], detail)
    if info.path_segment_names:
        validation.check_path_segment("metadata.name", str(md.get("name", "")))
    elif info.ip_names:
        validation.check_ip("metadata.name", str(md.get("name", "")))
    else:
        validation.check_dns_subdomain("metadata.name", str(md.get("name", "")))
    if info.namespaced:
        validation.check_dns_label("metadata.namespace", str(md.get("namespace", "")))
    labels = md.get("labels")
    if labels is not None:
        if not isinstance(labels, dict):
            detail = f"Invalid value: must be an object, not {validation.go_type(labels)}"
            raise ValidationError("metadata.labels", detail)
        validation.check_labels("metadata.labels", labels)
    annotations = md.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, dict):
            raise ValidationError(
                "metadata.annotations", f"Invalid value: must be an object, not {validation.go_type(annotations)}"
            )
        validation.check_annotations("metadata.annotations", annotations)
    for i, ref in enumerate(md.get("ownerReferences") or []):
        for attr in ("apiVersion", "kind", "name", "uid"):
            if not isinstance(ref, dict) or not ref.get(attr):
                raise validation.required(f"metadata.ownerReferences[{i}].{attr}")
    for i, fin in enumerate(md.get("finalizers") or []):
        validation.check_qualified_name(f"metadata.finalizers[{i}]", str(fin))
