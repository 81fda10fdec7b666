"""What a kind's declaration says: names, scope, versions, subresources, reset fields, field labels.

Why one record per kind: the object store's kind registry (store/kinds.py), the API catalog
(apiserver/catalog.py), version conversion (apiserver/conversion.py), the strategies
(apiserver/strategies.py), the table printers (apiserver/tables/) and the object model's
admission hooks (objects/kinds.py) all read the same `Kind`, so a kind's versions or names are
written once. Upstream writes the Go type once and each kind's folder under pkg/registry holds
its strategy and storage; here the data part of those is this record, and the behaviour that
needs the object model (pod parsing, DRA validation) is named by key and found in the layer
that owns it, so this package stays a leaf the store may import. Pure: no I/O, no imports
from the rest of nodeagent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
FieldGetter = Callable[[Mapping[str, Any]], str]
"""A field label's value in an object, as a fieldSelector compares it (upstream's GetAttrs)."""
Convert = Callable[[Mapping[str, Any]], Obj]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


def group_of(api_version: str) -> str:
    """`resource.k8s.io` of `resource.k8s.io/v1`, "" for the core group's `v1`."""
    return api_version.rpartition("/")[0]


def version_of(api_version: str) -> str:
    """`v1` of `resource.k8s.io/v1`."""
    return api_version.rpartition("/")[2]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def path(*keys: str, text: Callable[[Any], str] = _text) -> FieldGetter:
    """The value at keys as `text` writes it (by default the string, booleans as "true"/"false"); ""
    when a step is missing or not an object, or the value is null."""

    def get(obj: Mapping[str, Any]) -> str:
        cur: Any = obj
        for key in keys:
            if not isinstance(cur, Mapping):
                return ""
            cur = cur.get(key)
        return "" if cur is None else text(cur)

    return get


def flag(*keys: str) -> FieldGetter:
    """A boolean field label: "true" when set and truthy, else "false" (an unset bool is false)."""
    parent, last = keys[:-1], keys[-1]

    def get(obj: Mapping[str, Any]) -> str:
        cur: Any = obj
        for key in parent:
            cur = (cur.get(key) if isinstance(cur, Mapping) else None) or {}
        return "true" if isinstance(cur, Mapping) and cur.get(last) else "false"

    return get


@dataclass(frozen=True)
class Conversion:
    """One non-storage version's shape change: `to_hub` brings an object of that version to the
    storage version's shape, `from_hub` the reverse (apiVersion is set by the caller)."""

    to_hub: Convert
    from_hub: Convert


@dataclass(frozen=True)
class Reset:
    """Upstream's reset fields (GetResetFields of the strategy and of the status strategy), and
    what a create drops.

    - `on_create`: top-level fields a create drops (PrepareForCreate; a status subresource's
      status is the controllers', so a client's is dropped). Pods and Namespaces replace their
      status in their strategy instead, and a Node keeps what it was created with, as upstream.
    - `spec_write`: what a write of the main resource keeps from the stored object (the main
      strategy's reset fields).
    - `status_write`: what a write of /status keeps from the stored object (the status
      strategy's reset fields). `metadata.<field>` keeps that metadata field, `metadata` all of
      it; any other metadata a /status write sends is written, as upstream's status strategies
      take the new object's ObjectMeta (pods, PVCs, nodes... keep the labels and annotations a
      status write sets) unless their PrepareForUpdate resets it (ResetObjectMetaForStatus:
      STATUS_RESET_META).
    """

    on_create: tuple[str, ...] = ()
    spec_write: tuple[str, ...] = ()
    status_write: tuple[str, ...] = ()


GENERATION_NONE = ""
GENERATION_SPEC = "spec"
GENERATION_CREATE = "create"
GENERATION_UPDATE = "update"
GENERATION_LABELS = "spec+labels"
GENERATIONS = (GENERATION_NONE, GENERATION_SPEC, GENERATION_CREATE, GENERATION_UPDATE, GENERATION_LABELS)
"""How a kind keeps metadata.generation (Kind.generation)."""

STATUS_RESET = Reset(on_create=("status",), spec_write=("status",), status_write=("spec",))
"""The usual kind with a status subresource: status is the controllers', spec the users'."""

META_RESET_FOR_STATUS = tuple(f"metadata.{name}" for name in (
    "deletionTimestamp", "generation", "selfLink", "labels", "annotations", "finalizers", "ownerReferences"))
"""What apimachinery's ResetObjectMetaForStatus copies from the stored object on a /status write."""

STATUS_RESET_META = Reset(on_create=("status",), spec_write=("status",), status_write=("spec", *META_RESET_FOR_STATUS))
"""A kind whose status strategy also calls ResetObjectMetaForStatus (ResourceClaims, CSINodes,
VolumeAttachments...): a /status write changes the status only."""


def status_kept_meta(reset: Reset) -> tuple[str, ...] | None:
    """The metadata fields a /status write keeps from the stored object; None: all of it."""
    if "metadata" in reset.status_write:
        return None
    return tuple(f.removeprefix("metadata.") for f in reset.status_write if f.startswith("metadata."))


@dataclass(frozen=True)
class Kind:
    """One kind: every fact about it that more than one layer needs.

    - `versions`: the apiVersions it is served in, the storage version first (the hub of
      conversion; the store keeps only that one). A version may be in another group
      (Event: core `v1` and `events.k8s.io/v1`).
    - `store_versions`: the apiVersions the object store accepts on a write (defaults to every
      served version not in `optional_versions`); the first is the storage version.
    - `optional_versions`: served only when the API server's option of that name is on
      (`classic_dra`: classic DRA's v1alpha3 claims); the store never sees them.
    - `conversions`: per non-storage apiVersion, its shape change; a version not listed has
      the storage version's shape (only apiVersion differs).
    - `subresources`, `short_names`, `categories`, `verbs`, `singular`: discovery's APIResource.
    - `reset`: upstream's reset fields (Reset).
    - `field_labels`: the fields a fieldSelector may name beyond metadata.name and
      metadata.namespace, with how each is read.
    - `store_hooks`: the objects/ module whose hooks the store runs on every write of this kind
      ("resource": objects/resource/validation.py, "core": objects/core.py; "" none), so the layer
      that checks a kind is named per kind.
    - `strategy`: the API server's strategy beyond the generic one (a key of
      apiserver/strategies.py's SPECIAL; "" the generic strategy, which the reset fields and
      field labels above already make this kind's).
    - `printer`: the table printer's key in apiserver/tables/ ("" the generic Name, Created At).
    - `path_segment_names`: names are checked as path segments (not `.`/`..`, no `/` or `%`: the
      RBAC kinds, upstream's ValidateRBACName) instead of DNS subdomains.
    - `ip_names`: names are IP addresses in canonical form (IPAddress, upstream's ValidateIPAddressName)
      instead of DNS subdomains.
    - `returns_deleted`: an immediate DELETE answers the deleted object (True: in every version; a
      tuple: in those apiVersions) as upstream's registry Store with ReturnDeletedObject does; else
      (the Store's default) a Status `Success` naming the object (name, group, resource, uid).
    - `unconditional_update`: upstream's strategy AllowUnconditionalUpdate: an update (PUT, /status
      too) without metadata.resourceVersion overwrites the stored object (True), or is refused with
      "metadata.resourceVersion: Invalid value: 0: must be specified for an update" (False: Leases,
      PDBs, the CSI kinds, PCRs, CRDs...); a tuple: allowed only in those apiVersions (DeviceTaintRule
      keeps its old versions' behaviour).
    - `metadata_apart`: upstream's Validate<Kind> does not call ValidateObjectMeta (PodDisruptionBudget),
      so the registry's generic metadata check (rest.BeforeCreate/BeforeUpdate) runs after it and
      answers alone; otherwise the metadata's errors are listed first among the kind's.
    - `generation`: how metadata.generation is kept, as the kind's upstream strategy sets it (the
      generic registry never does): GENERATION_NONE (ConfigMaps, Secrets, Leases, ResourceClaims...),
      GENERATION_SPEC (1 on create, +1 per change of anything but metadata and status: the
      workloads, Pods, PDBs, DeviceClasses...), GENERATION_CREATE (PriorityClass: 1, never bumped),
      GENERATION_UPDATE (CSIDriver: none on create, +1 per spec change), GENERATION_LABELS
      (EndpointSlice: as SPEC, and a change of the labels bumps it too).
    - `ttl`: objects expire this many seconds after their last write (0: never), as kube-apiserver
      stores Events under an etcd lease of --event-ttl (1 h by default) that every write renews
      (pkg/registry/core/event/storage: TTLFunc answers the full TTL on create and on update).
    - `definition`: the OpenAPI definition's package per group (`io.k8s.api.core`), the name is
      `<package>.<version>.<kind>`.
    """

    kind: str
    plural: str
    namespaced: bool
    versions: tuple[str, ...]
    definition: Mapping[str, str]
    store_versions: tuple[str, ...] = ()
    optional_versions: Mapping[str, str] = field(default_factory=dict)
    conversions: Mapping[str, Conversion] = field(default_factory=dict)
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    reset: Reset = Reset()
    field_labels: Mapping[str, FieldGetter] = field(default_factory=dict)
    store_hooks: str = ""
    strategy: str = ""
    printer: str = ""
    path_segment_names: bool = False
    returns_deleted: bool | tuple[str, ...] = False
    ip_names: bool = False
    generation: str = ""
    metadata_apart: bool = False
    ttl: float = 0.0
    unconditional_update: bool | tuple[str, ...] = True

    def __post_init__(self) -> None:
        if not self.versions:
            raise ValueError(f"kind {self.kind} needs at least one version")
        if self.generation not in GENERATIONS:
            raise ValueError(f"kind {self.kind}: unknown generation rule {self.generation!r}")
        if not self.singular:
            object.__setattr__(self, "singular", self.kind.lower())
        if not self.store_versions:
            object.__setattr__(self, "store_versions",
                               tuple(v for v in self.versions if v not in self.optional_versions))
        if self.store_versions[0] != self.versions[0]:
            raise ValueError(f"kind {self.kind}: the store keeps the storage version {self.versions[0]}")
        for api_version in self.versions:
            if group_of(api_version) not in self.definition:
                raise ValueError(f"kind {self.kind}: no OpenAPI package for {api_version}")

    @property
    def storage_version(self) -> str:
        return self.versions[0]

    @property
    def group(self) -> str:
        """The storage version's group."""
        return group_of(self.versions[0])

    @property
    def resource(self) -> str:
        """`resourceclaims.resource.k8s.io`, `pods`: the storage group's resource name."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def returns_deleted_in(self, api_version: str) -> bool:
        """Whether an immediate DELETE in `api_version` answers the object (else a Status)."""
        if isinstance(self.returns_deleted, bool):
            return self.returns_deleted
        return api_version in self.returns_deleted

    def unconditional_update_in(self, api_version: str) -> bool:
        """Whether an update in `api_version` may leave out metadata.resourceVersion."""
        if isinstance(self.unconditional_update, bool):
            return self.unconditional_update
        return api_version in self.unconditional_update

    def definition_of(self, api_version: str) -> str:
        """The OpenAPI definition's name in `api_version` (`io.k8s.api.resource.v1.ResourceClaim`)."""
        return f"{self.definition[group_of(api_version)]}.{version_of(api_version)}.{self.kind}"
