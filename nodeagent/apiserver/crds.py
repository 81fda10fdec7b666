"""CustomResourceDefinitions: their validation on write, and serving their custom resources.

Why a controller: a CRD is an ordinary stored object, and what it declares (a resource in
each served version, its schema, status subresource, printer columns) must appear in
discovery, OpenAPI, routing, the store's kinds and the registry as soon as it is written, and
go with its objects when it is deleted, as apiextensions-apiserver does. `sync()` makes all of
that match the stored CRDs; it runs after every REST write of a CRD and on every store event
of the kind (so CRDs written any other way are served too), and sets the CRD's
NamesAccepted/Established conditions.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nodeagent.apiserver import scale_custom
from nodeagent.apiserver.catalog import Catalog, Resource
from nodeagent.apiserver.registry import KindBehaviour, Registry
from nodeagent.apiserver.scale_custom import ScalePaths
from nodeagent.apiserver.schema import crd as crd_schema
from nodeagent.apiserver.schema import selectable
from nodeagent.apiserver.schema.model import Schema
from nodeagent.apiserver.strategies import Prepared, Strategy
from nodeagent.errors import NodeAgentError, ValidationError
from nodeagent.kinds.model import FieldGetter, Reset
from nodeagent.store import KindInfo, ObjectStore
from nodeagent.store.meta import ErrorList, rfc3339
from nodeagent.util.clock import Clock

if TYPE_CHECKING:
    from nodeagent.apiserver import crdrules

logger = logging.getLogger(__name__)

CRD_KIND = "CustomResourceDefinition"


@dataclass(frozen=True)
class CRDStrategy(Strategy):
    """CRD objects: validated as apiextensions does; status is the controller's (reset on create)."""

    def prepare_for_create(self, obj: dict[str, Any], clock: Clock) -> Prepared | None:
        checked = super().prepare_for_create(obj, clock)
        crd_schema.set_defaults(obj)
        return checked

    def prepare_for_update(self, new: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_update(new, old)
        crd_schema.set_defaults(new)

    def validate(self, obj: dict[str, Any], clock: Clock) -> None:
        errors = crd_schema.validate_crd(obj)
        if len(errors) == 1:
            raise ValidationError(*errors[0])
        if errors:  # every one, as upstream's field.ErrorList (the 422 lists each as a cause)
            raise ErrorList([ValidationError(path, detail) for path, detail in errors])
        found = _rule_compile_errors(obj)
        if len(found) == 1:
            raise ValidationError(*found[0])
        if found:
            raise ErrorList([ValidationError(path, detail) for path, detail in found])

    def validate_update(self, new: dict[str, Any], old: Mapping[str, Any], clock: Clock) -> None:
        self.validate(new, clock)
        if (new.get("spec") or {}).get("group") != (old.get("spec") or {}).get("group"):
            raise ValidationError("spec.group", f'Invalid value: "{(new.get("spec") or {}).get("group")}": '
                                  "field is immutable")
        if (new.get("spec") or {}).get("scope") != (old.get("spec") or {}).get("scope"):
            raise ValidationError("spec.scope", f'Invalid value: "{(new.get("spec") or {}).get("scope")}": '
                                  "field is immutable")


@dataclass(frozen=True)
class CustomResourceStrategy(Strategy):
    """Custom resources: structural defaulting from the version's schema on every write; the field
    selectors of the version (`fields`: its selectableFields) beside metadata.name, and metadata.namespace
    only when namespaced (apiextensions' crConverter.ConvertFieldLabel)."""

    schema: Schema = field(default_factory=Schema)
    registry: Registry | None = None
    namespaced: bool = True

    def field_getters(self) -> Mapping[str, FieldGetter]:
        getters = super().field_getters()
        if self.namespaced:
            return getters
        return {k: v for k, v in getters.items() if k != "metadata.namespace"}

    def _defaulted(self, obj: dict[str, Any]) -> None:
        if self.registry is None:
            return
        out = crd_schema.defaults(obj, self.schema, self.registry.defs)
        obj.clear()
        obj.update(out)

    def prepare_for_create(self, obj: dict[str, Any], clock: Clock) -> None:
        super().prepare_for_create(obj, clock)
        self._defaulted(obj)

    def prepare_for_update(self, new: dict[str, Any], old: Mapping[str, Any]) -> None:
        self._defaulted(new)


CUSTOM_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
"""A custom resource's verbs in the order apiextensions' discovery controller lists them."""

_CUSTOM_RESET = Reset(status_write=("spec", "metadata"))
"""A custom resource's /status write changes its status only (metadata as stored; managedFields the
field manager's), as apiextensions' customresource statusStrategy.PrepareForUpdate."""


def store_kind(group: str, kind: str) -> str:
    """The store's name for a custom kind: the kind qualified by its group (two CRDs may share a Kind)."""
    return f"{kind}.{group}"


class CustomResources:
    """Keeps the catalog, the store's kinds and the registry in line with the stored CRDs."""

    def __init__(self, store: ObjectStore, catalog: Catalog, registry: Registry, clock: Clock,
                 on_change: Callable[[], None]) -> None:
        self._store = store
        self._catalog = catalog
        self._registry = registry
        self._clock = clock
        self._on_change = on_change
        self._served: dict[str, tuple[Any, ...]] = {}  # CRD name -> what was registered (for change detection)
        self._resources: dict[str, list[Resource]] = {}

    def sync(self) -> None:
        crds = {o["metadata"]["name"]: o for o in self._store.scan(CRD_KIND)}
        changed = False
        for name in list(self._served):
            if name not in crds:
                self._unserve(name)
                changed = True
        for name, crd in crds.items():
            fingerprint = (crd["metadata"].get("generation"), repr(crd.get("spec")))
            if self._served.get(name) != fingerprint:
                if name in self._served:
                    self._unregister(name)
                try:
                    self._serve(crd)
                except (NodeAgentError, ValueError, KeyError, TypeError) as err:
                    logger.warning("crd not served name=%s error=%s", name, err)
                    continue
                self._served[name] = fingerprint
                changed = True
            self._set_status(crd)
        if changed:
            self._on_change()

    async def run(self) -> None:
        """Follow CRD writes from any path."""
        self.sync()
        async with self._store.watch((CRD_KIND,)) as watch:
            async for _ev in watch:
                while watch.get_nowait() is not None:
                    pass
                self.sync()
                await asyncio.sleep(0)

    def _serve(self, crd: Mapping[str, Any]) -> None:
        spec = crd["spec"]
        group, names = spec["group"], spec["names"]
        kind = names["kind"]
        namespaced = spec.get("scope", "Namespaced") == "Namespaced"
        versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
        storage = next((v["name"] for v in spec.get("versions") or [] if v.get("storage")), versions[0]["name"])
        skind = store_kind(group, kind)
        api_versions = (f"{group}/{storage}", *(f"{group}/{v['name']}" for v in versions if v["name"] != storage))
        self._store.kinds.register(KindInfo(skind, api_versions, namespaced=namespaced,
                                            resource=f"{names['plural']}.{group}",
                                            short_names=tuple(names.get("shortNames") or ()), custom=True))
        resources = []
        for v in versions:
            sub = v.get("subresources") or {}
            res = Resource(group, v["name"], names["plural"], kind, namespaced,
                           definition=_definition_name(group, v["name"], kind),
                           singular=names.get("singular") or kind.lower(),
                           short_names=tuple(names.get("shortNames") or ()),
                           categories=tuple(names.get("categories") or ()),
                           subresources=tuple(k for k in ("status", "scale") if k in sub), verbs=CUSTOM_VERBS,
                           store_kind=skind, storage_version=v["name"] == storage, custom=True,
                           list_kind=names.get("listKind") or kind + "List")
            props = ((v.get("schema") or {}).get("openAPIV3Schema")) or {"type": "object",
                                                                          "x-kubernetes-preserve-unknown-fields": True}
            schema = crd_schema.schema_from_openapi_v3(props)
            scale = ScalePaths.of(sub["scale"]) if isinstance(sub.get("scale"), Mapping) else None
            selectable_names = selectable.names(v.get("selectableFields"))
            self._registry.custom[(group, v["name"], names["plural"])] = KindBehaviour(
                schema=schema,
                # the custom resource status strategy copies the whole stored object but its status
                strategy=CustomResourceStrategy(skind, reset_status_on_create="status" in sub, schema=schema,
                                                registry=self._registry, reset=_CUSTOM_RESET,
                                                fields={n: selectable.getter(n) for n in selectable_names},
                                                namespaced=namespaced),
                custom=True,
                printer_columns=tuple(v.get("additionalPrinterColumns") or ()),
                status_subresource="status" in sub,
                check_values=_value_checker(schema, self._registry, scale),
                check_rules=_rule_checker(schema, self._registry) if _has_rules(props) else None,
                prune=True,
                scale=scale,
                fields_schema=crd_schema.kube_native(schema),
                selectable_fields=selectable_names,
            )
            self._catalog.add(res)
            resources.append(res)
        self._resources[crd["metadata"]["name"]] = resources

    def _unregister(self, name: str) -> None:
        for res in self._resources.pop(name, []):
            self._catalog.remove(res.group, res.version, res.plural)
            self._registry.custom.pop((res.group, res.version, res.plural), None)
        self._served.pop(name, None)

    def _unserve(self, name: str) -> None:
        """The CRD is gone: its custom resources go too (apiextensions' customresourcecleanup)."""
        resources = self._resources.get(name, [])
        if resources:
            skind = resources[0].store_kind
            with self._store.transaction() as tx:
                for obj in tx.list(skind):
                    tx.delete(skind, obj["metadata"].get("namespace") or "", obj["metadata"]["name"])
        self._unregister(name)

    def _set_status(self, crd: Mapping[str, Any]) -> None:
        spec = crd["spec"]
        status = dict(crd.get("status") or {})
        conds = {c.get("type"): c for c in status.get("conditions") or []}
        if conds.get("Established", {}).get("status") == "True" and status.get("acceptedNames") == spec["names"]:
            return
        now = rfc3339(self._clock.now())
        storage = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
        new = dict(crd)
        new["status"] = {
            "acceptedNames": spec["names"],
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts",
                 "message": "no conflicts found"},
                {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted"},
            ],
            "storedVersions": sorted(set(status.get("storedVersions") or []) | set(storage)),
        }
        try:
            self._store.update_status(new)
        except NodeAgentError as err:
            logger.debug("crd status not written name=%s error=%s", crd["metadata"]["name"], err)


def _definition_name(group: str, version: str, kind: str) -> str:
    return ".".join(reversed(group.split("."))) + f".{version}.{kind}"


def _value_checker(schema: Schema, registry: Registry,
                   scale: ScalePaths | None = None) -> Callable[[dict[str, Any]], list[tuple[str, str]]]:
    """The schema's checks, then (with a scale subresource) ValidateScaleSpec and ValidateScaleStatus."""
    def check(obj: dict[str, Any]) -> list[tuple[str, str]]:
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        errors = crd_schema.validate_values(body, schema, registry.defs)
        if scale is not None:
            errors += scale_custom.checks(obj, scale)
        return errors

    return check


def _has_rules(raw: Any) -> bool:
    """Whether an openAPIV3Schema holds any x-kubernetes-validations (without compiling them)."""
    if isinstance(raw, Mapping):
        return bool(raw.get("x-kubernetes-validations")) or any(_has_rules(v) for v in raw.values())
    if isinstance(raw, list):
        return any(_has_rules(v) for v in raw)
    return False


def _rule_checker(schema: Schema, registry: Registry) -> Callable[[dict[str, Any], dict[str, Any] | None],
                                                                    crdrules.Result]:
    """The version's x-kubernetes-validations, compiled once, at the first write that needs them (as
    upstream's strategy builds its CEL validator with the CRD's handler, at each change of the CRD;
    not at the catalog's load: a start compiles no CEL, tests/integration/test_start_imports.py)."""
    compiled: list[crdrules.Node | None] = []

    def check(obj: dict[str, Any], old: dict[str, Any] | None) -> crdrules.Result:
        from nodeagent.apiserver import crdrules

        if not compiled:
            compiled.append(crdrules.compile_node(schema, registry.defs))
        node = compiled[0]
        return crdrules.Result() if node is None else crdrules.validate(node, obj, old, registry.defs)

    return check


def _rule_compile_errors(crd: Mapping[str, Any]) -> list[tuple[str, str]]:
    """x-kubernetes-validations rules that do not compile (apiextensions' validation compiles each
    rule against its node's type once the schema itself has no error): under
    spec.validation.openAPIV3Schema when every version shares the schema, else under each version's."""
    from nodeagent.apiserver import crdrules
    from nodeagent.apiserver.schema.model import Definitions

    versions = [v for v in (crd.get("spec") or {}).get("versions") or [] if isinstance(v, Mapping)]
    schemas = [((v.get("schema") or {}).get("openAPIV3Schema")) for v in versions]
    errors: list[tuple[str, str]] = []
    shared = bool(schemas) and all(s and s == schemas[0] for s in schemas)
    for i, raw in enumerate(schemas[:1] if shared else schemas):
        if not isinstance(raw, Mapping):
            continue
        path = "spec.validation.openAPIV3Schema" if shared else f"spec.versions[{i}].schema.openAPIV3Schema"
        errors += crdrules.compile_errors(crd_schema.schema_from_openapi_v3(raw), Definitions(), path)
    return errors
