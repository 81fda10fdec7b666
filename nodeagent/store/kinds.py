"""The kinds the object store accepts: scope, API versions, and hooks supplied by the object model.

The store knows nothing about a kind's spec. Which kinds exist, their scope and the versions
the store accepts come from their declarations (nodeagent/kinds). The object-model package registers a
`KindInfo` per kind with an optional `default(obj) -> obj` (defaulting, version
conversion) and `validate(obj)` / `validate_update(new, old)` hooks that raise
`nodeagent.errors.ValidationError` with a field path. The registry is passed to the
store, never looked up globally, so tests can register toy kinds. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.kinds import BUILTIN

Obj = dict[str, Any]
"""A Kubernetes-shaped object as plain JSON: apiVersion, kind, metadata, spec, status."""

DefaultHook = Callable[[Obj], Obj]
DefaultUpdateHook = Callable[[Obj, Obj], Obj]
"""(new, stored) -> the object to store: `default` for an update, where what the stored object
already uses may change the outcome (a gated field kept while its gate is off)."""
ValidateHook = Callable[[Obj], None]
ValidateUpdateHook = Callable[[Obj, Obj], None]
DefaultStatusHook = Callable[[Obj, Obj], Obj]
AdmitHook = Callable[[Obj, Any], None]
"""(object, reader with try_get(kind, namespace, name)) -> None or a ValidationError."""


def _resource_name(kind: str, api_version: str) -> str:
    """`resourceclaims.resource.k8s.io` for a grouped kind, `pods` for the core group."""
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    group = api_version.rpartition("/")[0]
    return f"{plural}.{group}" if group else plural


@dataclass(frozen=True)
class KindInfo:
    """How the store treats one kind.

    `api_versions` lists the accepted apiVersion strings; the first is the preferred one.
    `default` runs before validation and returns the object to store (it may convert an
    older version's shape). `validate` checks a whole object on every write;
    `validate_update(new, old)` checks transitions (immutable fields) on updates.
    `resource` is the name used in error messages (`resourceclaims.resource.k8s.io`),
    derived from the kind and the preferred version's group when not given.
    """

    kind: str
    api_versions: tuple[str, ...]
    namespaced: bool
    validate: ValidateHook | None = None
    default: DefaultHook | None = None
    validate_update: ValidateUpdateHook | None = None
    resource: str = ""
    # Status-only writes: (new, stored) -> the object to store. When given it replaces `default`
    # and `validate` there, since the rest of the object is the stored, already admitted one.
    default_status: DefaultStatusHook | None = None
    # Updates: replaces `default` when given (DefaultUpdateHook).
    default_update: DefaultUpdateHook | None = None
    short_names: tuple[str, ...] = field(default=())
    # Creation checks that read other objects (obj, the transaction's reader), e.g. the labels
    # of the namespace a ResourceClaim with adminAccess is created in.
    admit: AdmitHook | None = None
    # Names are path segments (the RBAC kinds: `system:node`), not DNS subdomains.
    path_segment_names: bool = False
    # Names are IP addresses in canonical form (IPAddress), not DNS subdomains.
    ip_names: bool = False
    # how metadata.generation is kept (nodeagent.kinds.model's GENERATION_*; toy kinds and custom
    # resources: "spec", 1 on create and +1 per change of the content); "" for kinds whose upstream
    # strategy never sets it (ControllerRevision).
    generation: str = "spec"
    # upstream's validation of the kind omits ValidateObjectMeta: the generic metadata check runs
    # after the kind's and answers alone (Kind.metadata_apart)
    metadata_apart: bool = False
    # objects expire this many seconds after their last write, 0 never (Kind.ttl: Events)
    ttl: float = 0.0
    # a custom resource's kind (a CRD's): stored as JSON under /registry/<group>/<resource> (limits.py)
    custom: bool = False

    def __post_init__(self) -> None:
        if not self.api_versions:
            raise ValueError(f"kind {self.kind} needs at least one apiVersion")
        if not self.resource:
            object.__setattr__(self, "resource", _resource_name(self.kind, self.api_versions[0]))

    @property
    def plural(self) -> str:
        return self.resource.partition(".")[0]

    @property
    def group_kind(self) -> str:
        """`ResourceClaim.resource.k8s.io`, as the API server names a kind in "is invalid" errors."""
        group = self.resource.partition(".")[2]
        return f"{self.kind}.{group}" if group else self.kind


class KindRegistry:
    """The kinds a store accepts, by kind name; also resolves plural and short names for the CLI."""

    def __init__(self, kinds: Iterable[KindInfo] = ()) -> None:
        self._kinds: dict[str, KindInfo] = {}
        for info in kinds:
            self.register(info)

    def register(self, info: KindInfo) -> None:
        """Add a kind, or replace its entry (the object model adds hooks to a builtin entry)."""
        self._kinds[info.kind] = info

    def get(self, kind: str) -> KindInfo:
        info = self._kinds.get(kind)
        if info is None:
            supported = ", ".join(f'"{k}"' for k in sorted(self._kinds))
            raise ValidationError("kind", f'Unsupported value: "{kind}": supported values: {supported}')
        return info

    def lookup(self, name: str) -> KindInfo | None:
        """Find a kind by kind name, plural, resource, singular or short name (case-insensitive)."""
        low = name.lower()
        for info in self._kinds.values():
            names = {info.kind.lower(), info.plural, info.resource, info.plural.removesuffix("s"), *info.short_names}
            if low in names:
                return info
        return None

    def __contains__(self, kind: object) -> bool:
        return kind in self._kinds

    def __iter__(self) -> Iterator[KindInfo]:
        return iter(self._kinds.values())

    def names(self) -> list[str]:
        return sorted(self._kinds)

    def with_hooks(self, hooks: Mapping[str, Mapping[str, Any]]) -> KindRegistry:
        """A copy where the named kinds get the given hook fields (`validate`, `default`, ...)."""
        out = KindRegistry(self._kinds.values())
        for kind, fields in hooks.items():
            base = self.get(kind)
            out.register(
                KindInfo(
                    kind=base.kind,
                    api_versions=fields.get("api_versions", base.api_versions),
                    namespaced=base.namespaced,
                    validate=fields.get("validate", base.validate),
                    default=fields.get("default", base.default),
                    validate_update=fields.get("validate_update", base.validate_update),
                    default_status=fields.get("default_status", base.default_status),
                    default_update=fields.get("default_update", base.default_update),
                    resource=base.resource,
                    short_names=base.short_names,
                    admit=fields.get("admit", base.admit),
                    path_segment_names=base.path_segment_names,
                    ip_names=base.ip_names,
                    generation=base.generation,
                    metadata_apart=base.metadata_apart,
                    ttl=base.ttl,
                    custom=base.custom,
                )
            )
        return out


def builtin_kinds() -> KindRegistry:
    """The built-in kinds (nodeagent/kinds: scope, the versions the store accepts, names), without
    hooks (the object model adds them: objects/kinds.py)."""
    return KindRegistry(
        KindInfo(k.kind, k.store_versions, namespaced=k.namespaced, resource=k.resource, short_names=k.short_names,
                 path_segment_names=k.path_segment_names, ip_names=k.ip_names, generation=k.generation,
                 metadata_apart=k.metadata_apart, ttl=k.ttl)
        for k in BUILTIN
    )
