"""The generic registry: get, list, create, update, patch, delete and deletecollection for every kind.

Shaped like k8s.io/apiserver's registry/generic/registry.Store: the HTTP edge hands over a
parsed request (the Resource, namespace, name, subresource, options, decoded body); this
module converts between the request's version and the storage version, checks unknown
fields against the kind's schema, runs the kind's strategy, keeps managedFields, and writes
through the object store in one transaction, so a reply is sent only after the commit.
Watch lives in watching.py. Nothing here knows HTTP.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, MutableSequence, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from nodeagent.apiserver import conversion, patch, scale, scale_custom
from nodeagent.apiserver.apply import fieldmanager as ssa
from nodeagent.apiserver.apply.managedfields import sort_entries
from nodeagent.apiserver.catalog import Catalog, Resource
from nodeagent.apiserver.errors import APIError, bad_request, from_error, invalid, not_found
from nodeagent.apiserver.options import IGNORE, STRICT, BodyFacts, DeleteOptions, WriteOptions, body_facts
from nodeagent.apiserver.scale_custom import ScalePaths
from nodeagent.apiserver.schema import fields as schema_fields
from nodeagent.apiserver.schema import typed
from nodeagent.apiserver.schema.decoding import integral_floats_as_ints
from nodeagent.apiserver.schema.gotext import go_json, go_quote, json_kind
from nodeagent.apiserver.schema.model import Definitions, Schema
from nodeagent.apiserver.selection import FieldSelector, decode_continue, encode_continue
from nodeagent.apiserver.strategies import Prepared, Strategy
from nodeagent.errors import NodeAgentError, RequestTooLarge, ValidationError
from nodeagent.kinds.model import status_kept_meta
from nodeagent.objects import resourcequota
from nodeagent.store import ObjectStore, StoreBusy, propagation
from nodeagent.store.meta import rfc3339
from nodeagent.store.selectors import Selector
from nodeagent.store.txn import Transaction, metadata_errors, same_json, share_unchanged
from nodeagent.util.clock import Clock

if TYPE_CHECKING:
    from nodeagent.apiserver import crdrules

Obj = dict[str, Any]
_Objs = list[Obj]  # aliases: the `list` method shadows the builtin inside the class
_Strs = list[str]
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")


class _DryRun(Exception):
    """Raised inside a transaction to roll a dry-run write back after it was fully checked."""

    def __init__(self, result: Any) -> None:
        self.result = result


@dataclass(frozen=True)
class Written:
    """What a write answered: the object (in the request's version), whether it was created,
    and warnings for the Warning header."""

    object: Obj
    created: bool = False
    warnings: tuple[str, ...] = ()


@dataclass
class KindBehaviour:
    """How one served Resource is checked: its schema and strategy (built-in or from a CRD)."""

    schema: Schema
    strategy: Strategy
    custom: bool = False
    printer_columns: tuple[Mapping[str, Any], ...] = ()
    status_subresource: bool = False
    check_values: Callable[[Obj], list[tuple[str, str]]] | None = None
    check_rules: Callable[[Obj, Obj | None], crdrules.Result] | None = None
    """A custom resource's x-kubernetes-validations (crdrules.py), after the value checks: (new, old) in,
    errors and the ratcheted rules' warnings out."""
    prune: bool = False
    scale: ScalePaths | None = None  # a custom resource's subresources.scale
    fields_schema: Schema | None = None
    """What managedFields and server-side apply walk when it is not `schema`: a custom resource's with
    apiVersion, kind and metadata (schema/crd.kube_native)."""
    selectable_fields: tuple[str, ...] = ()
    """A custom resource version's selectableFields (their selector names), which its published
    definitions list (x-kubernetes-selectable-fields)."""


@dataclass(frozen=True)
class BindingGates:
    """The feature gates pods/binding reads (the emulated release's defaults unless set):
    ClearingNominatedNodeNameAfterBinding (beta, on from 1.35) and PodTopologyLabelsAdmission
    (beta, on from 1.35: the Binding's labels are copied onto the pod)."""

    clear_nominated_node_name: bool = True
    copy_labels: bool = True


class CleanBodies:
    """Create bodies of built-in kinds known to decode into their Go types and to hold no unknown
    field: a client creating objects from one template (a benchmark's or a controller's replicas,
    which differ in their names) sends the same text but for the name, and the two walks of the body
    (typed.type_error, schema_fields.unknown_fields: ~0.15 ms for a pod) answered the same for each.
    The key is the body's JSON text with metadata.name emptied (a string: its text is no part of
    either walk, which check its type alone; a name of another type is never remembered) and the
    schema it was walked with; what either walk refuses is walked again each time. Bounded: the
    table starts over when full."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._table: dict[tuple[int, bytes], tuple[Schema, Definitions]] = {}

    @staticmethod
    def key(schema: Schema, body: Any) -> tuple[int, bytes] | None:
        """The body's key, None for one never remembered (no metadata object, a name of another type,
        a value beyond JSON)."""
        md = body.get("metadata") if type(body) is dict else None
        if type(md) is not dict or type(md.get("name", "")) is not str:
            return None
        try:
            text = orjson.dumps({**body, "metadata": {**md, "name": ""}} if "name" in md else body)
        except TypeError:  # orjson.JSONEncodeError (an integer beyond 64 bits): walked each time
            return None
        return id(schema), text

    def seen(self, key: tuple[int, bytes], schema: Schema, defs: Definitions) -> bool:
        hit = self._table.get(key)
        return hit is not None and hit[0] is schema and hit[1] is defs

    def add(self, key: tuple[int, bytes], schema: Schema, defs: Definitions) -> None:
        if len(self._table) >= self._size:
            self._table.clear()
        self._table[key] = (schema, defs)


@dataclass
class Registry:
    store: ObjectStore
    catalog: Catalog
    defs: Definitions
    strategies: Mapping[str, Strategy]
    clock: Clock
    custom: dict[tuple[str, str, str], KindBehaviour] = field(default_factory=dict)
    binding: BindingGates = field(default_factory=lambda: BindingGates())
    after_create: dict[str, Callable[[Transaction, Obj], None]] = field(default_factory=dict)
    """store kind -> writes made in the transaction of each create of that kind."""
    _builtin: dict[tuple[str, str, str], KindBehaviour] = field(default_factory=dict)
    _created_sets: ssa.CreatedFields = field(default_factory=ssa.CreatedFields)
    _clean_bodies: CleanBodies = field(default_factory=lambda: CleanBodies())

    # --- per-resource behaviour ---

    def behaviour(self, res: Resource) -> KindBehaviour:
        key = (res.group, res.version, res.plural)
        found = self.custom.get(key) or self._builtin.get(key)
        if found is not None:
            return found
        strategy = self.strategies.get(res.store_kind) or Strategy(res.store_kind)
        found = KindBehaviour(Schema(ref=res.definition), strategy, status_subresource="status" in res.subresources)
        self._builtin[key] = found  # one schema node per resource: the schema walks' caches key on it
        return found

    def to_version(self, res: Resource, obj: Mapping[str, Any]) -> Obj:
        """A stored object in the request's version (a new dict only when it must differ)."""
        if res.kind in conversion.CLASSIC_KINDS and res.api_version != conversion.RESOURCE_V1ALPHA3:
            obj = conversion.without_classic_fields(obj)  # fields only v1alpha3 has (conversion.py)
        if obj.get("apiVersion") == res.api_version and obj.get("kind") == res.kind:
            return obj  # type: ignore[return-value]
        if (res.group, res.version, res.plural) in self.custom:
            out = dict(obj)
            # the store names the kind with its group (Widget.example.com); clients and patches see Widget
            out["apiVersion"], out["kind"] = res.api_version, res.kind
            return out
        return conversion.to_version(obj, res.api_version)

    def _to_storage_over(self, res: Resource, obj: Obj, cur: Mapping[str, Any]) -> Obj:
        """to_storage for a write over the stored `cur`: what the request's version cannot express
        of `cur` (classic DRA's fields, outside v1alpha3) is kept."""
        stored = self.to_storage(res, obj)
        if res.kind in conversion.CLASSIC_KINDS and res.api_version != conversion.RESOURCE_V1ALPHA3:
            stored = conversion.keep_classic_fields(stored, cur)
        return stored

    def to_storage(self, res: Resource, obj: Obj) -> Obj:
        if (res.group, res.version, res.plural) in self.custom:
            info = self.store.kinds.get(res.store_kind)
            # checked as the request's floats (upstream's validation sees a float64), stored and
            # answered as encoding/json writes them
            out = dict(integral_floats_as_ints(obj))
            out["apiVersion"] = info.api_versions[0]
            out["kind"] = res.store_kind
            return out
        return conversion.to_storage(obj)

    def from_store(self, res: Resource, obj: Mapping[str, Any]) -> Obj:
        """A stored object for the client: custom resources carry their own kind name."""
        out = self.to_version(res, obj)
        if out.get("kind") != res.kind:
            out = dict(out)
            out["kind"] = res.kind
        return out

    # --- reads ---

    def get(self, res: Resource, namespace: str, name: str) -> Obj:
        obj = self.store.peek(res.store_kind, namespace, name)
        if obj is None:
            raise not_found(res.group, res.plural, name)
        return self.from_store(res, obj)

    def list(
        self,
        res: Resource,
        namespace: str,
        labels: Selector | None,
        fields: FieldSelector | None,
        *,
        limit: int | None = None,
        continue_token: str = "",
    ) -> tuple[_Objs, int, str, int | None]:
        """(items, resourceVersion, continue, remainingItemCount) in the request's version."""
        rv = self.store.resource_version
        items = self.store.scan(res.store_kind, namespace or None, labels)
        getters = self.behaviour(res).strategy.field_getters()
        if fields is not None and fields.requirements:
            items = [o for o in items if fields.matches(o, getters)]
        if continue_token:
            cont = decode_continue(continue_token)
            rv = cont.rv
            items = [o for o in items if _key(o) > cont.key]
        token, remaining = "", None
        if limit and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            token = encode_continue(rv, _key(items[-1]))
        return [self.from_store(res, o) for o in items], rv, token, remaining

    # --- writes ---

    @contextmanager
    def _tx(self, res: Resource, name: str, dry_run: bool) -> Iterator[Transaction]:
        """A store transaction whose typed errors become Status answers; dry-run rolls back."""
        try:
            with self.store.transaction() as tx:
                yield tx
                if dry_run:
                    raise _DryRun(None)
        except _DryRun:
            return
        except StoreBusy:  # not begun (store.not_waiting): the caller writes again from a worker thread
            raise
        except NodeAgentError as err:
            raise from_error(err, group=res.group, kind=res.kind, plural=res.plural, name=name) from None

    def _check_body(self, res: Resource, body: Any, namespace: str, name: str | None, *,
                    typed_ok: bool = False, same: Mapping[str, Any] | None = None) -> Obj:
        """The body as an object of the resource's kind, or upstream's 400. `typed_ok`: the caller
        has checked its Go types already (a patch's result: _patched_types). `same`: the body's
        top-level values that are the stored object's to the byte (_same_parts): not type-walked."""
        if not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format - accepted media types include: "
                              "application/json, application/yaml")
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if api_version and api_version != res.api_version:
            raise bad_request(f"the API version in the data ({api_version}) does not match the expected API "
                              f"version ({res.api_version})")
        if kind and kind != res.kind:
            raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({res.kind})")
        beh = self.behaviour(res)
        if not beh.custom and not typed_ok:
            wrong = typed.type_error(body, beh.schema, self.defs, res.kind, same)
            if wrong is not None:
                raise bad_request(f"{res.kind} in version {go_quote(res.version)} cannot be handled as a {res.kind}: "
                                  f"{wrong}")
        # a null field decodes into the Go field's zero value: spec, status and metadata's fields
        # are omitted then (a null map or list among labels must not reach a strategy as None)
        obj = {k: v for k, v in body.items() if v is not None}
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        md = obj.get("metadata")
        if md is None:
            md = obj["metadata"] = {}
        if not isinstance(md, dict):  # a custom resource's (built-in kinds are checked above)
            raise bad_request(f"{res.kind} in version {go_quote(res.version)} cannot be handled as a {res.kind}: "
                              f"json: cannot unmarshal {json_kind(md)} into Go struct field .metadata of type "
                              "v1.ObjectMeta")
        md = obj["metadata"] = {k: v for k, v in md.items() if v is not None}
        if res.namespaced:
            given = md.get("namespace")
            if given and namespace and given != namespace:
                raise bad_request("the namespace of the provided object does not match the namespace sent on the "
                                  "request")
            md["namespace"] = given or namespace or "default"
        elif md.get("namespace"):
            md.pop("namespace")
        if name is not None and md.get("name") and md["name"] != name:
            raise bad_request(f"the name of the object ({md['name']}) does not match the name on the URL ({name})")
        if name is not None and not md.get("name"):
            md["name"] = name
        return obj

    def _unknown_fields(self, res: Resource, obj: Obj, duplicates: Sequence[str] | BodyFacts, opts: WriteOptions,
                        beh: KindBehaviour, old: Mapping[str, Any] | None = None, *,
                        same: Mapping[str, Any] | None = None, unknown: _Strs | None = None) -> tuple[Obj, _Strs]:
        """Strict field validation (400), Warn (warnings) or Ignore; unknown fields never reach the store
        (custom resources are pruned; built-in kinds lose them as upstream's typed decoding does).
        Fields already unknown in the stored object (`old`) are not the writer's: not reported; so
        the parts of a built-in object that are `old`'s own (a patch's result shares what the patch
        does not name) are not walked: stored built-in objects hold no unknown fields. `same`: in
        place of `old` for that, obj's parts that are old's to the byte (_same_parts). `unknown`: the
        caller walked `obj` already (a create: what the walk found, or [] for a CleanBodies hit)."""
        facts = body_facts(duplicates)
        if unknown is None:
            unchanged = (old if same is None else same) if not beh.custom else None
            unknown = schema_fields.unknown_fields(obj, beh.schema, self.defs, sorted_keys=facts.yaml,
                                                   unchanged=unchanged)
        if unknown:
            obj, _pruned = schema_fields.prune(obj, beh.schema, self.defs)
            if old is not None:
                known_before = set(schema_fields.unknown_fields(old, beh.schema, self.defs))
                unknown = [p for p in unknown if p not in known_before]
        if opts.field_validation == IGNORE or not (unknown or facts.duplicates):
            return obj, []
        if not beh.custom and facts.raw and facts.duplicates and not facts.yaml:
            errors = schema_fields.typed_strict_errors(facts.raw, beh.schema, self.defs)[1]
        else:
            errors = schema_fields.strict_errors(unknown, facts.duplicates, yaml=facts.yaml, quoted=not beh.custom)
        if opts.field_validation == STRICT:
            raise bad_request(schema_fields.decoding_error_message(res.kind, res.version, errors))
        if facts.yaml:
            return obj, schema_fields.strict_warnings(unknown, facts.duplicates, yaml=True, quoted=not beh.custom)
        return obj, errors

    def _validate(self, res: Resource, beh: KindBehaviour, obj: Obj, old: Mapping[str, Any] | None,
                  status: bool = False, prepared: Prepared | None = None) -> tuple[str, ...]:
        """The strategy's checks; a create (`old` None) passes what its preparation answered. Answers
        the warnings of rules ratcheted on an update (crdrules.py)."""
        name = str(obj["metadata"].get("name") or obj["metadata"].get("generateName") or "")
        errors: list[tuple[str, str]] = []
        warnings: list[str] = []
        if beh.check_values is not None:
            errors = beh.check_values(obj)
        if beh.check_rules is not None:  # the custom resource strategy's CEL validation, after the value checks
            from nodeagent.apiserver import crdrules  # CEL: loaded by the first custom resource with rules

            if crdrules.blocking(errors):
                errors = [*errors, ("<nil>", "Invalid value: null: " + crdrules.BLOCKED_TEXT)]
            else:
                verdict = beh.check_rules(obj, None if old is None else dict(old))
                errors = [*errors, *verdict.errors]
                warnings = verdict.warnings
        if errors:
            refused = invalid(res.group, res.kind, name, _unique(self._metadata_errors(res, obj, old), errors))
            refused.warnings = tuple(warnings)  # upstream's warnings reach the client with the 422 too
            raise refused
        try:
            if status and old is not None:
                beh.strategy.validate_status(obj, old, self.clock)
            elif old is None:
                beh.strategy.validate_prepared(obj, self.clock, prepared)
            else:
                beh.strategy.validate(obj, self.clock)
            if old is not None:
                beh.strategy.validate_update(obj, old, self.clock)
        except ValidationError as err:
            several = getattr(err, "errors", None)  # an ErrorList (ManyErrors): one cause each
            found = [(e.path, e.detail) for e in several] if several else [(err.path, err.detail)]
            refused = invalid(res.group, res.kind, name, _unique(self._metadata_errors(res, obj, old), found))
            refused.warnings = tuple(warnings)
            raise refused from None
        return tuple(warnings)

    def _metadata_errors(self, res: Resource, obj: Obj, old: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
        """The store's metadata checks of `obj`, listed before a strategy's errors as upstream's
        Validate<Kind> lists ValidateObjectMeta's first (the store checks them alone otherwise)."""
        info = self.store.kinds.lookup(res.store_kind)
        if info is None or info.metadata_apart or not isinstance(obj.get("metadata"), dict):
            return ()
        found = metadata_errors(info, obj, None if old is None else dict(old))
        return tuple((e.path, e.detail) for e in found)

    def _require_namespace(self, tx: Transaction, res: Resource, namespace: str, name: str = "") -> None:
        """The NamespaceLifecycle admission of a create: the namespace exists and is not
        Terminating (its phase, as upstream checks), else 404 / upstream's 403 naming the object
        (`name`: its name or generateName) with the NamespaceTerminating cause."""
        if not res.namespaced or namespace in ("default",):
            return
        ns = tx.try_get("Namespace", "", namespace)
        if ns is None:
            raise not_found("", "namespaces", namespace)
        if (ns.get("status") or {}).get("phase") == "Terminating":
            name = name or "Unknown"
            details: dict[str, Any] = {"name": name, "kind": res.plural}
            if res.group:
                details["group"] = res.group
            details["causes"] = [{"reason": "NamespaceTerminating", "message": f"namespace {namespace} is being "
                                  "terminated", "field": "metadata.namespace"}]
            raise APIError(403, "Forbidden", f'{res.group_resource} "{name}" is forbidden: unable to create new '
                           f"content in namespace {namespace} because it is being terminated", details=details)

    def _admit_quota(self, tx: Transaction, res: Resource, obj: Obj, old: Obj | None = None) -> None:
        """kube-apiserver's ResourceQuota admission of a create or update (objects/resourcequota.py), last of the
        validating plugins as upstream orders them: refused with its 403, or the namespace's quotas'
        status.used charged in the create's own transaction."""
        if not res.namespaced:
            return
        try:
            special = None
            if res.store_kind == "ResourceClaim":
                # imported at the first claim create, not at start (tests/integration/test_start_imports.py)
                from nodeagent.controlplane import quota as dra_quota
                special = dra_quota.EVALUATOR
            resourcequota.admit(tx, res.group, res.plural, obj, old, self.clock.now(), special)
        except resourcequota.QuotaRefused as err:
            name = str(obj["metadata"].get("name") or obj["metadata"].get("generateName") or "Unknown")
            details: dict[str, Any] = {"name": name, "kind": res.plural}
            if res.group:
                details["group"] = res.group
            raise APIError(403, "Forbidden", f'{res.group_resource} "{name}" is forbidden: {err}',
                           details=details) from None

    def create(self, res: Resource, namespace: str, body: Any, opts: WriteOptions,
               duplicates: Sequence[str] | BodyFacts = ()) -> Written:
        beh = self.behaviour(res)
        clean_key = None if beh.custom else self._clean_bodies.key(beh.schema, body)
        clean = clean_key is not None and self._clean_bodies.seen(clean_key, beh.schema, self.defs)
        obj = self._check_body(res, body, namespace, None, typed_ok=clean)
        walked: _Strs = [] if clean else schema_fields.unknown_fields(obj, beh.schema, self.defs,
                                                                       sorted_keys=body_facts(duplicates).yaml)
        if clean_key is not None and not clean and not walked:  # its types fit (else _check_body raised)
            self._clean_bodies.add(clean_key, beh.schema, self.defs)
        obj, warnings = self._unknown_fields(res, obj, duplicates, opts, beh, unknown=walked)
        for attr in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation",
                     "managedFields"):
            obj["metadata"].pop(attr, None)
        name = str(obj["metadata"].get("name") or obj["metadata"].get("generateName") or "")
        uid = self._uid_before_create(beh, obj)
        early = beh.strategy.defaults_apart
        if early:  # upstream's order: decoding's defaults, managedFields, then admission (Strategy.defaults_apart)
            beh.strategy.decode_defaults(obj)
            obj = self._created_fields(res, beh, obj, opts)
        self._admit_mutating(res, beh, obj, None)
        try:
            prepared = beh.strategy.prepare_for_create(obj, self.clock)
        except ValidationError as err:
            several = getattr(err, "errors", None)  # an ErrorList (ManyErrors): one cause each
            found = [(e.path, e.detail) for e in several] if several else [(err.path, err.detail)]
            raise invalid(res.group, res.kind, name, found) from None
        warnings = [*warnings, *self._validate(res, beh, obj, None, prepared=prepared)]
        if opts.admit is not None:
            opts.admit(obj, None, "")
        if not early:
            obj = self._created_fields(res, beh, obj, opts)
        stored = self.to_storage(res, obj)
        result: Obj | None = None
        with self._tx(res, name, opts.dry_run) as tx:
            self._require_namespace(tx, res, str(stored["metadata"].get("namespace") or ""), name)
            self._admit_quota(tx, res, obj)
            # only read from here on, as get's peek
            result = _unless_too_large(lambda o: tx.create(o, copy=False, uid=uid), stored)
            self._after_create(tx, res, result)
            if opts.dry_run:
                raise _DryRun(result)
        if result is None:  # dry run: the transaction was rolled back after the create succeeded
            result = stored
        if opts.dry_run:  # upstream's dry-run create answers the prepared object, never stored: no resourceVersion
            result = {**result, "metadata": {k: v for k, v in result["metadata"].items() if k != "resourceVersion"}}
        return Written(self.from_store(res, result), created=True, warnings=tuple(warnings))

    def _created_fields(self, res: Resource, beh: KindBehaviour, obj: Obj, opts: WriteOptions) -> Obj:
        """`obj` with the managedFields of its create: the writer owns every field it wrote."""
        return self._update_fields(res, beh, None, obj, opts.manager())

    def _update_fields(self, res: Resource, beh: KindBehaviour, old: Obj | None, obj: Obj, manager: str,
                       subresource: str = "") -> Obj:
        """`obj` with `manager`'s Update recorded in its managedFields (a create when `old` is None, its
        FieldsV1 remembered per template: CreatedFields), in `res`'s version: the one call every writer
        makes, REST requests and the embedded components' in-process writes alike."""
        return ssa.update_managed_fields(old, obj, manager=manager, operation="Update",
                                         schema=beh.fields_schema or beh.schema,
                                         defs=self.defs, api_version=res.api_version, now=self._now(),
                                         subresource=subresource, builtin_kind=not beh.custom,
                                         created=self._created_sets)

    def _after_create(self, tx: Transaction, res: Resource, created: Obj) -> None:
        """Writes that belong in the same transaction as a create of this kind (after_create: a
        namespace's companions, namespace_companions.py)."""
        hook = self.after_create.get(res.store_kind)
        if hook is not None:
            hook(tx, created)

    def _admit_mutating(self, res: Resource, beh: KindBehaviour, obj: Obj, old: Obj | None) -> None:
        """The kind's default mutating admission (strategy.admit) over this store; its refusal as
        the API error kube-apiserver answers (403 for a Forbidden)."""
        try:
            beh.strategy.admit(obj, old, self.store)
        except ValidationError as err:
            name = str(obj["metadata"].get("name") or "")
            raise from_error(err, group=res.group, kind=res.kind, plural=res.plural, name=name) from None

    @staticmethod
    def _uid_before_create(beh: KindBehaviour, obj: Obj) -> str:
        """The uid a create gets before its strategy runs, for a strategy that needs it (upstream's
        BeforeCreate fills every object's first); "" lets the store choose it."""
        if not beh.strategy.uid_before_create:
            return ""
        uid = str(uuid.uuid4())
        obj["metadata"]["uid"] = uid
        return uid

    def update(self, res: Resource, namespace: str, name: str, subresource: str, body: Any, opts: WriteOptions,
               duplicates: Sequence[str] | BodyFacts = ()) -> Written:
        beh = self.behaviour(res)
        stored = self.store.peek(res.store_kind, namespace, name)
        before = None if stored is None else self.to_version(res, stored)
        same = _same_parts(body, before) if before is not None and not beh.custom else None
        obj = self._check_body(res, body, namespace, name, same=same)
        obj, warnings = self._unknown_fields(res, obj, duplicates, opts, beh, before, same=same)
        warnings = list(warnings)
        written: Obj | None = None
        with self._tx(res, name, opts.dry_run) as tx:
            cur = tx.try_get(res.store_kind, namespace, name)
            if cur is None:
                raise not_found(res.group, res.plural, name)
            if (beh.custom or not res.unconditional_update) and not obj["metadata"].get("resourceVersion"):
                # the strategy does not AllowUnconditionalUpdate (custom resources, Leases, PDBs...):
                # the registry Store refuses, naming the resource as the request's context does
                raise invalid(res.group, res.plural, name, [
                    ("metadata.resourceVersion", "Invalid value: 0: must be specified for an update")])
            written = self._write(tx, res, beh, cur, obj, subresource, opts, warnings=warnings)
            if opts.dry_run:
                raise _DryRun(written)
        assert written is not None
        return Written(self.from_store(res, written), warnings=tuple(warnings))

    def _write(self, tx: Transaction, res: Resource, beh: KindBehaviour, cur: Obj, obj: Obj, subresource: str,
               opts: WriteOptions, *, operation: str = "Update", warnings: MutableSequence[str] | None = None) -> Obj:
        """Replace `cur` by `obj` (request version) as a spec write or a status write; the validation's
        warnings are added to `warnings`."""
        old = self.to_version(res, cur)
        if subresource == "status":
            # `cur` is the transaction's own copy: the new object shares its spec (nothing below
            # writes into it; the store copies what it stores), only metadata and status change.
            merged = dict(old)
            merged["metadata"] = self._status_metadata(beh, obj["metadata"], old["metadata"])
            merged["status"] = obj.get("status")
            if merged["status"] is None:
                merged.pop("status")
            if obj["metadata"].get("resourceVersion"):
                merged["metadata"]["resourceVersion"] = obj["metadata"]["resourceVersion"]
            obj = merged
            beh.strategy.prepare_for_status_update(obj, old)
        elif subresource == "approval":
            # certificatesigningrequests/approval (upstream's csrApprovalStrategy): the writer's
            # status.conditions only; spec, metadata and the rest of the status stay as stored
            merged = dict(old)
            merged["metadata"] = dict(old["metadata"])
            status = dict(old.get("status") or {})
            conditions = (obj.get("status") or {}).get("conditions")
            if conditions is None:
                status.pop("conditions", None)
            else:
                status["conditions"] = conditions
            merged["status"] = status
            if obj["metadata"].get("resourceVersion"):
                merged["metadata"]["resourceVersion"] = obj["metadata"]["resourceVersion"]
            obj = merged
        elif subresource == "finalize":
            # namespaces/finalize (upstream's namespaceFinalizeStrategy): the status is kept, the
            # spec's finalizers are the writer's; the strategy checks their names
            try:
                beh.strategy.validate_finalize(obj)
            except ValidationError as err:
                several = getattr(err, "errors", None)
                found = [(e.path, e.detail) for e in several] if several else [(err.path, err.detail)]
                raise invalid(res.group, res.kind, str(obj["metadata"].get("name") or ""), found) from None
            if "status" in old:
                obj["status"] = old["status"]
        else:
            self._admit_mutating(res, beh, obj, old)
            beh.strategy.prepare_for_update(obj, old)
            if beh.status_subresource and "status" in old:
                obj["status"] = old["status"]
        ratcheted = self._validate(res, beh, obj, old, status=subresource in ("status", "approval"))
        if warnings is not None:
            warnings.extend(ratcheted)
        if opts.admit is not None:
            opts.admit(obj, old, subresource)
        if not subresource:
            self._admit_quota(tx, res, obj, old)
        if operation == "Update":
            # the request's private object points at the old version's equal parts (both this
            # write's own copies, past every strategy): the field comparison skips what it shares
            share_unchanged(obj, old)
            obj = self._update_fields(res, beh, old, obj, opts.manager(), subresource)
            if subresource == "scale":
                obj = _scale_entry_times(old, obj)
        stored = self._to_storage_over(res, obj, cur)
        with_status = True
        if subresource in ("status", "approval"):
            stored["metadata"]["managedFields"] = obj["metadata"].get("managedFields")
            if stored["metadata"]["managedFields"] is None:
                stored["metadata"].pop("managedFields")
        elif beh.status_subresource:
            with_status = False
        return _unless_too_large(lambda o: tx.update(o, with_status=with_status, copy=False), stored,
                                 retry=operation != "Apply")

    @staticmethod
    def _status_metadata(beh: KindBehaviour, sent: Mapping[str, Any], stored: Mapping[str, Any]) -> Obj:
        """A /status write's metadata: what the writer sent, but the fields the kind's status strategy
        resets (its declared status_write `metadata.*`: ResetObjectMetaForStatus, a pod's
        ownerReferences, a Deployment's labels) or all of it (custom resources) as stored. System
        fields (uid, creationTimestamp, generation...) the store keeps on every write."""
        kept = status_kept_meta(beh.strategy.reset)
        if kept is None:  # statusStrategy.PrepareForUpdate keeps the new managedFields (a status apply's entry)
            out = dict(stored)
            out.pop("managedFields", None)
            if "managedFields" in sent:
                out["managedFields"] = sent["managedFields"]
            return out
        out = dict(sent)
        for name in kept:
            if name in stored:
                out[name] = stored[name]
            else:
                out.pop(name, None)
        return out

    def patch(self, res: Resource, namespace: str, name: str, subresource: str, patch_type: str, body: Any,
              opts: WriteOptions, duplicates: Sequence[str] | BodyFacts = ()) -> Written:
        beh = self.behaviour(res)
        created = False
        written: Obj | None = None
        warnings: list[str] = []
        with self._tx(res, name, opts.dry_run) as tx:
            cur = tx.try_get(res.store_kind, namespace, name)
            if cur is None and patch_type != APPLY_PATCH:
                raise not_found(res.group, res.plural, name)
            old = None if cur is None else self.to_version(res, cur)
            if patch_type == APPLY_PATCH and not beh.custom and isinstance(body, dict):
                self._patched_types(res, beh, body)
            new = self._patched(res, beh, old, patch_type, body, opts, subresource)
            if not beh.custom:
                self._patched_types(res, beh, new, old)
            new = self._check_body(res, new, namespace, name, typed_ok=not beh.custom)
            # the patch is not the object: its duplicates count, its raw text does not order errors
            facts = body_facts(duplicates)
            new, warnings = self._unknown_fields(res, new, BodyFacts(facts.duplicates, yaml=facts.yaml), opts, beh,
                                                 old)
            if cur is None:
                created = True
                for attr in ("uid", "resourceVersion", "creationTimestamp", "generation"):
                    new["metadata"].pop(attr, None)
                uid = self._uid_before_create(beh, new)
                self._admit_mutating(res, beh, new, None)
                prepared = beh.strategy.prepare_for_create(new, self.clock)
                warnings = [*warnings, *self._validate(res, beh, new, None, prepared=prepared)]
                if opts.admit is not None:
                    opts.admit(new, None, "")
                self._require_namespace(tx, res, str(new["metadata"].get("namespace") or ""),
                                        str(new["metadata"].get("name") or new["metadata"].get("generateName") or ""))
                self._admit_quota(tx, res, new)
                written = _unless_too_large(lambda o: tx.create(o, copy=False, uid=uid), self.to_storage(res, new),
                                            retry=patch_type != APPLY_PATCH)
                self._after_create(tx, res, written)
            else:
                if patch_type == APPLY_PATCH:
                    new["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
                op = "Apply" if patch_type == APPLY_PATCH else "Update"
                warnings = list(warnings)
                written = self._write(tx, res, beh, cur, new, subresource, opts, operation=op, warnings=warnings)
            if opts.dry_run:
                raise _DryRun(written)
        assert written is not None
        return Written(self.from_store(res, written), created=created, warnings=tuple(warnings))

    def _patched_types(self, res: Resource, beh: KindBehaviour, patched: Any,
                       stored: Mapping[str, Any] | None = None) -> None:
        """A patch whose result does not decode into the kind's Go struct is refused as upstream's
        patcher refuses it (applyPatchToCurrentObject): 422 on the field "patch" with the patched
        JSON as the value and encoding/json's error as the detail; never a half-typed object on.
        `stored`: the object the patch was applied to (its fields the result still shares are not
        walked again: the patch functions copy what they change)."""
        if not isinstance(patched, dict):
            return
        wrong = typed.type_error(patched, beh.schema, self.defs, res.kind, stored)
        if wrong is not None:
            err = invalid("", "", "", [("patch", f"Invalid value: {go_quote(go_json(patched))}: {wrong}")])
            if err.details is not None:
                err.details = {k: v for k, v in err.details.items() if v}
            raise err

    def _patched(self, res: Resource, beh: KindBehaviour, old: Obj | None, patch_type: str, body: Any,
                 opts: WriteOptions, subresource: str) -> Obj:
        try:
            if patch_type == JSON_PATCH:
                out = patch.json_patch(old, body)
            elif patch_type == MERGE_PATCH:
                out = patch.merge_patch(old, body)
            elif patch_type == STRATEGIC_PATCH:
                if beh.custom:
                    raise APIError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                                   "accepted media types include: application/json-patch+json, "
                                   "application/merge-patch+json, application/apply-patch+yaml")
                if not isinstance(body, dict):
                    raise bad_request("the body of the request was not a JSON object")
                # a status write changes nothing but what the merge writes: the rest stays shared
                out = patch.strategic_merge_patch(old or {}, body, beh.schema, self.defs,
                                                  share=subresource == "status")
            else:
                if not isinstance(body, dict):
                    raise bad_request("error decoding YAML: the apply configuration must be an object")
                applied = dict(body)
                if not applied.get("apiVersion") or not applied.get("kind"):
                    raise bad_request("invalid object type: /, Kind=")
                out = ssa.apply(old, applied, manager=opts.manager(), force=opts.force,
                                schema=beh.fields_schema or beh.schema,
                                defs=self.defs, api_version=res.api_version, now=self._now(),
                                ignore_paths=None if beh.status_subresource
                                else (), subresource=subresource, kind=res.kind,
                                builtin_kind=not beh.custom)
        except patch.PatchError as err:
            # upstream's generic 422 keeps the patch library's own text as an UnexpectedServerResponse cause
            causes = [{"type": "UnexpectedServerResponse", "message": err.detail}] if err.detail != err.message else []
            raise APIError(err.code, err.reason, str(err), details={"causes": causes} if causes else None) from None
        except ssa.ApplyConflict as err:
            name = (old or {}).get("metadata", {}).get("name", "")
            raise APIError(409, "Conflict", str(err), details={"name": name, "group": res.group, "kind": res.plural,
                                                               "causes": err.causes()}) from None
        if not isinstance(out, dict):
            raise bad_request("the patched object is not an object")
        return out

    def delete(self, res: Resource, namespace: str, name: str, opts: DeleteOptions) -> Obj:
        """The object as the delete left it (gone, or marked for a graceful or finalized deletion)."""
        return self.delete_answer(res, namespace, name, opts, status=False)

    def delete_answer(self, res: Resource, namespace: str, name: str, opts: DeleteOptions, *,
                      status: bool = True) -> Obj:
        """What a DELETE answers, as upstream's Store.Delete: the object while its deletion is pending
        (graceful, finalizers); once gone, the object for kinds whose store returns it
        (ReturnDeletedObject), else (with `status`) a Status `Success` with the object's name, group,
        resource and uid (finalizeDelete; its Kind field holds the resource, as upstream's does)."""
        return self.delete_outcome(res, namespace, name, opts, status=status)[0]

    def delete_outcome(self, res: Resource, namespace: str, name: str, opts: DeleteOptions, *,
                       status: bool = True) -> tuple[Obj, bool]:
        """delete_answer's answer and whether the object is gone (Store.Delete's `deleted`, from
        which the handler chooses 200 or 202)."""
        result: Mapping[str, Any] | None = None
        gone = False
        with self._tx(res, name, opts.dry_run) as tx:
            # read-only, as a GET answers (no copies): three copies of a pod of 10,000 containers, each
            # one C call holding the GIL 100-200 ms, stalled every other socket on its delete (issue 25)
            cur = tx.peek(res.store_kind, namespace, name)
            if cur is None:
                raise not_found(res.group, res.plural, name)
            result = self._delete_one(tx, res, cur, opts)
            gone = tx.peek(res.store_kind, namespace, name) is None
            if opts.dry_run:
                raise _DryRun(result)
        obj = self.from_store(res, result if result is not None else cur)
        if not status or not gone or res.returns_deleted:
            return obj, gone
        md = obj.get("metadata") or {}
        details = {"name": md.get("name") or name, "group": res.group, "kind": res.plural, "uid": md.get("uid")}
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {k: v for k, v in details.items() if v}}, gone

    def _delete_one(self, tx: Transaction, res: Resource, cur: Mapping[str, Any],
                    opts: DeleteOptions) -> Mapping[str, Any]:
        """The object as the delete left it; `cur` and the answer are the store's own (read-only)."""
        md = cur["metadata"]
        _delete_preconditions(res, md, opts)
        if res.store_kind == "Namespace":
            return self._delete_namespace(tx, cur)
        pending_graceful = "deletionTimestamp" in md and bool(md.get("deletionGracePeriodSeconds"))
        wanted = None if pending_graceful else propagation.deletion_finalizers(
            res.kind, res.api_version, list(md.get("finalizers") or ()), opts.propagation)
        if wanted is not None:
            # the garbage collector's finalizers (orphan, foregroundDeletion) for the propagation policy,
            # written with the deletion mark (updateForGracefulDeletionAndFinalizers); the garbage
            # collector (controlplane/controllers/garbagecollector.py, or kube-controller-manager's)
            # removes them once the dependents are orphaned or gone
            cur = tx.set_finalizers(res.store_kind, md.get("namespace") or "", md["name"], wanted)
            md = cur["metadata"]
        kept = self._graceful_delete(tx, res, cur, opts)
        if kept is not None:
            return kept
        return tx.delete(res.store_kind, md.get("namespace") or "", md["name"], copy=False)

    def _graceful_delete(self, tx: Transaction, res: Resource, cur: Mapping[str, Any],
                         opts: DeleteOptions) -> Mapping[str, Any] | None:
        """rest.BeforeDelete and the Store's graceful update, for kinds with graceful deletion
        (pods): the object as left when it is not deleted now, else None.

        A first deletion sets deletionTimestamp (now + the period) and deletionGracePeriodSeconds;
        the object stays until its node deletes it again with period 0 (the kubelet's status
        manager, once the pod is terminal). A deletion while one is pending may only shorten the
        period (the timestamp moves back by the difference); a longer or absent one leaves the
        object as it is. A period of 0 is written too before the object goes (watchers see the
        MODIFIED with deletionTimestamp, then the DELETED), unless finalizers keep it."""
        md = cur["metadata"]
        strategy = self.behaviour(res).strategy
        requested = opts.grace_period
        if "deletionTimestamp" in md:
            current = md.get("deletionGracePeriodSeconds")
            if strategy.graceful_delete_period(cur, requested) is None or not current:
                return None
            if requested is None or requested >= int(current):
                return cur  # graceful deletion pending: nothing changes
            period = requested
            stamp = _parse_time(str(md["deletionTimestamp"])) - int(current) + requested
        else:
            found = strategy.graceful_delete_period(cur, requested)
            if found is None:
                return None
            period, stamp = found, self.clock.now() + found
        marked = tx.mark_deleting(res.store_kind, md.get("namespace") or "", md["name"],
                                  deletion_timestamp=rfc3339(stamp), grace_period=period, copy=False)
        return marked if period > 0 or md.get("finalizers") else None

    def _delete_namespace(self, tx: Transaction, ns: Mapping[str, Any]) -> Mapping[str, Any]:
        """The namespace REST's Delete: the first one marks it Terminating (deletionTimestamp,
        status.phase) and keeps it; the namespace controller (controlplane/controllers/namespace.py,
        or kube-controller-manager's) deletes its content, removes the `kubernetes` finalizer and
        deletes it again, which removes it once spec.finalizers is empty (metadata.finalizers
        still hold it as for any object)."""
        md = ns["metadata"]
        name = md["name"]
        if name in PROTECTED_NAMESPACES:
            raise APIError(403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                           details={"name": name, "kind": "namespaces"})
        if not md.get("deletionTimestamp"):
            status = {**(ns.get("status") or {}), "phase": "Terminating"}
            return tx.mark_deleting("Namespace", "", name, deletion_timestamp=self._now(), grace_period=None,
                                    status=status, copy=False)
        if (ns.get("spec") or {}).get("finalizers"):
            return ns
        return tx.delete("Namespace", "", name, copy=False)

    def delete_collection(self, res: Resource, namespace: str, labels: Selector | None,
                          fields: FieldSelector | None, opts: DeleteOptions) -> _Objs:
        items, _rv, _c, _r = self.list(res, namespace, labels, fields)
        out: _Objs = []
        with self._tx(res, "", opts.dry_run) as tx:
            for obj in items:
                cur = tx.peek(res.store_kind, obj["metadata"].get("namespace") or "", obj["metadata"]["name"])
                if cur is not None:
                    out.append(self.from_store(res, self._delete_one(tx, res, cur, opts)))
        return out

    def bind(self, namespace: str, name: str, body: Any, opts: WriteOptions) -> None:
        """pods/binding: set spec.nodeName and PodScheduled=True in one write, as upstream's BindingREST
        (setPodNodeAndMetadata): the Binding's uid and resourceVersion are preconditions, a pod being
        deleted, already bound or still gated is refused, the Binding's annotations (and, with
        PodTopologyLabelsAdmission, labels) are merged in, and status.nominatedNodeName is cleared
        (ClearingNominatedNodeNameAfterBinding) so no stale nomination outlives the binding."""
        if not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format")
        wrong = typed.type_error(body, Schema(ref="io.k8s.api.core.v1.Binding"), self.defs, "Binding")
        if wrong is not None:
            raise bad_request(f'Binding in version "v1" cannot be handled as a Binding: {wrong}')
        target = body.get("target") or {}
        node = str(target.get("name") or "")
        if not node:
            raise invalid("", "Binding", name, [("target.name", "Required value")])
        md = body.get("metadata") or {}
        res = self.catalog.find("", "v1", "pods")
        assert res is not None

        def refuse(detail: str) -> APIError:
            return APIError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": {detail}',
                            details={"name": name, "kind": "pods/binding"})

        with self._tx(res, name, opts.dry_run) as tx:
            pod = tx.try_get("Pod", namespace, name)
            if pod is None:
                raise not_found("", "pods", name)
            for field_name, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
                want, have = md.get(field_name), pod["metadata"].get(field_name)
                if want and want != have:
                    # storage.Preconditions.Check's error through InterpretUpdateError: a conflict on
                    # pods (not pods/binding) that quotes the StorageError with its etcd key
                    raise APIError(409, "Conflict", f'Operation cannot be fulfilled on pods "{name}": StorageError: '
                                   f"invalid object, Code: 4, Key: /registry/pods/{namespace}/{name}, "
                                   f"ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: {label} in "
                                   f"precondition: {want}, {label} in object meta: {have}",
                                   details={"name": name, "kind": "pods"})
            if pod["metadata"].get("deletionTimestamp"):
                raise refuse(f"pod {name} is being deleted, cannot be assigned to a host")
            spec = pod.setdefault("spec", {})
            bound = spec.get("nodeName")
            if bound:
                raise refuse(f"pod {name} is already assigned to node \"{bound}\"")
            if spec.get("schedulingGates"):
                raise refuse(f"pod {name} has non-empty .spec.schedulingGates")
            spec["nodeName"] = node
            status = pod.setdefault("status", {})
            if self.binding.clear_nominated_node_name:
                status.pop("nominatedNodeName", None)
            if md.get("annotations"):
                pod["metadata"]["annotations"] = {**(pod["metadata"].get("annotations") or {}), **md["annotations"]}
            if md.get("labels") and self.binding.copy_labels:
                pod["metadata"]["labels"] = {**(pod["metadata"].get("labels") or {}), **md["labels"]}
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": self._now()})
            status["conditions"] = conds
            tx.update(pod, with_status=True, keep_generation=True)

    # --- the scale subresource ---

    def get_scale(self, res: Resource, namespace: str, name: str) -> Obj:
        """GET .../NAME/scale: the object's autoscaling/v1 Scale."""
        paths = self.behaviour(res).scale
        if paths is not None:
            return scale_custom.get(self.get(res, namespace, name), paths)
        return scale.of(self.get(res, namespace, name))

    def update_scale(self, res: Resource, namespace: str, name: str, body: Any, opts: WriteOptions) -> Obj:
        """PUT .../NAME/scale: spec.replicas from the Scale, written through the kind's update."""
        wanted = scale.check_body(body, name)
        return self._scale_write(res, namespace, name, lambda _current: wanted, opts)

    def patch_scale(self, res: Resource, namespace: str, name: str, patch_type: str, body: Any,
                    opts: WriteOptions) -> Obj:
        """PATCH .../NAME/scale (kubectl scale sends a merge patch of spec.replicas): the patch
        applies to the current Scale, whose replicas are then written as an update would."""
        if patch_type == APPLY_PATCH:
            raise scale.apply_unsupported()

        def patched(current: Obj) -> Obj:
            try:
                if patch_type == JSON_PATCH:
                    out = patch.json_patch(current, body)
                elif patch_type == MERGE_PATCH:
                    out = patch.merge_patch(current, body)
                else:
                    if not isinstance(body, dict):
                        raise bad_request("the body of the request was not a JSON object")
                    out = patch.strategic_merge_patch(current, body, Schema(ref=scale.SCALE_DEFINITION), self.defs)
            except patch.PatchError as err:
                raise APIError(err.code, err.reason, str(err)) from None
            return scale.check_body(out, name)

        return self._scale_write(res, namespace, name, patched, opts)

    def _scale_write(self, res: Resource, namespace: str, name: str, wanted: Callable[[Obj], Obj],
                     opts: WriteOptions) -> Obj:
        beh = self.behaviour(res)
        written: Obj | None = None
        with self._tx(res, name, opts.dry_run) as tx:
            cur = tx.try_get(res.store_kind, namespace, name)
            if cur is None:
                raise not_found(res.group, res.plural, name)
            old = self.to_version(res, cur)
            if beh.scale is not None:  # a custom resource's: no ValidateScale, its own checks answer
                new_scale = wanted(scale_custom.patch_base(old, beh.scale))
                obj = scale_custom.with_replicas(old, beh.scale, scale.replicas(new_scale, name, validate=False))
            else:
                new_scale = wanted(scale.of(old))
                replicas = scale.replicas(new_scale, name)
                obj = dict(old)
                obj["spec"] = {**(old.get("spec") or {}), "replicas": replicas}
            obj["metadata"] = dict(old["metadata"])
            given_rv = (new_scale.get("metadata") or {}).get("resourceVersion")
            if given_rv:
                obj["metadata"]["resourceVersion"] = str(given_rv)
            written = self._write(tx, res, beh, cur, obj, "scale", opts)
            if opts.dry_run:
                raise _DryRun(written)
        assert written is not None
        if beh.scale is not None:
            return scale_custom.view(self.from_store(res, written), beh.scale)[0]
        return scale.of(self.from_store(res, written))

    def in_process_fields(self, old: Obj | None, new: Obj, manager: str, subresource: str) -> Obj:
        """The store's field manager (ObjectStore.field_manager): an in-process writer's create or
        update recorded as kube-apiserver records the component's request (an Update by `manager`,
        in the stored object's version); a kind the catalog does not serve in that version is left
        as written."""
        res = self.catalog.for_kind(str(new.get("apiVersion") or ""), str(new.get("kind") or ""))
        if res is None:
            return new
        return self._update_fields(res, self.behaviour(res), old, new, manager, subresource)

    def _now(self) -> str:
        return rfc3339(self.clock.now())


def _scale_entry_times(old: Mapping[str, Any], obj: Obj) -> Obj:
    """The /scale writers' managedFields entries carry the time the parent object's entry of the same
    manager had, none for a new one: upstream's ScaleHandler.ToParent rebuilds the parent's entries
    with the parent's times only (kubectl scale's entry has no time)."""
    entries = obj["metadata"].get("managedFields")
    if not isinstance(entries, list) or not any(isinstance(e, dict) and e.get("subresource") == "scale"
                                                for e in entries):
        return obj

    def ident(e: Mapping[str, Any]) -> tuple[Any, ...]:
        return (e.get("manager"), e.get("operation"), e.get("apiVersion"), e.get("subresource"))

    before = {ident(e): e.get("time") for e in (old.get("metadata") or {}).get("managedFields") or ()
              if isinstance(e, dict)}
    fixed = []
    for e in entries:
        if isinstance(e, dict) and e.get("subresource") == "scale":
            kept = before.get(ident(e))  # in place of the new time, the key order kept
            e = {k: kept if k == "time" else v for k, v in e.items() if k != "time" or kept}
        fixed.append(e)
    # and sorted again, as ToParent's entries are encoded (an entry without a time sorts as second 0)
    return {**obj, "metadata": {**obj["metadata"], "managedFields": sort_entries(fixed)}}


def _unless_too_large(write: Callable[[Obj], Obj], stored: Obj, *, retry: bool = True) -> Obj:
    """`write(stored)`; when the store refuses it for its size (RequestTooLarge, etcd's limit), once more
    without managedFields, as kube-apiserver's create, update and patch handlers do (isTooLargeError;
    not for a server-side apply): the object is stored without any, its earlier entries gone too."""
    try:
        return write(stored)
    except RequestTooLarge:
        if not retry or "managedFields" not in stored["metadata"]:
            raise
    return write({**stored, "metadata": {k: v for k, v in stored["metadata"].items() if k != "managedFields"}})


def _same_parts(body: Any, before: Mapping[str, Any]) -> dict[str, Any] | None:
    """The values of a PUT's body (top level, and metadata's) whose JSON is byte for byte the stored
    version's, each mapped to itself: a client's update sends back what it read, with one part
    changed (kube-scheduler's claim finalizer or status), and those parts were type-checked and
    freed of unknown fields when they were stored, so the body's checks need not walk them again.
    Bytes, not ==: 1, 1.0 and true are equal in Python, never in a JSON decode's types. None: no
    such part (or a body that is not an object)."""
    if type(body) is not dict:
        return None
    out = _same_values(body, before)
    md, kept_md = body.get("metadata"), before.get("metadata")
    if "metadata" not in out and type(md) is dict and type(kept_md) is dict:
        same_md = _same_values(md, kept_md)
        if same_md:
            out["metadata"] = same_md
    return out or None


def _same_values(new: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """new's dict and list values that are old's value of the same key as JSON (same_json)."""
    return {k: v for k, v in new.items()
            if type(v) in (dict, list) and type(old.get(k)) is type(v) and same_json(v, old[k])}


def _unique(generic: Sequence[tuple[str, str]], own: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The generic metadata errors, then the kind's: a kind that checks a metadata field itself (its
    own name rule) answers for it, so the generic errors on the fields it reports are left out."""
    paths = {path for path, _ in own}
    return [*(e for e in generic if e[0] not in paths), *own]


def _delete_preconditions(res: Resource, md: Mapping[str, Any], opts: DeleteOptions) -> None:
    """DeleteOptions.preconditions with rest.BeforeDelete's texts (they name the kind, not the resource)."""
    what = f"{res.kind}.{res.group}" if res.group else res.kind
    if opts.uid and opts.uid != md.get("uid"):
        detail = (f"the UID in the precondition ({opts.uid}) does not match the UID in record ({md.get('uid')}). "
                  "The object might have been deleted and then recreated")
    elif opts.resource_version and opts.resource_version != md.get("resourceVersion"):
        detail = (f"the ResourceVersion in the precondition ({opts.resource_version}) does not match the "
                  f"ResourceVersion in record ({md.get('resourceVersion')}). The object might have been modified")
    else:
        return
    details = {"name": md.get("name", ""), "group": res.group, "kind": res.kind} if res.group else \
        {"name": md.get("name", ""), "kind": res.kind}
    raise APIError(409, "Conflict", f'Operation cannot be fulfilled on {what} "{md.get("name", "")}": {detail}',
                   details=details)


def _parse_time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    md = obj["metadata"]
    return (str(md.get("namespace") or ""), str(md.get("name") or ""))
