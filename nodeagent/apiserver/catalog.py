"""The resources the API serves: group, version, plural, kind, scope, verbs, names, subresources.

Why a catalogue apart from the store's KindRegistry: the store keeps one version of each kind
(its storage version), while the API serves several versions of some kinds (resource.k8s.io
v1, v1beta2, v1beta1; Event as core v1 and events.k8s.io/v1) and kinds the node side never
touches (Namespace, ConfigMap, ServiceAccount, Lease, CRDs and their custom resources).
Discovery, OpenAPI and request routing all read this one list. The built-in entries are derived
from the kinds' declarations (nodeagent/kinds); CRDs add theirs at run time. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from nodeagent.kinds import BUILTIN
from nodeagent.kinds import resource as kinds_resource
from nodeagent.kinds.model import ALL_VERBS, Kind, group_of, version_of
from nodeagent.kinds.reviews import REVIEWS

__all__ = ["ALL_VERBS", "Catalog", "Resource", "builtin_resources", "version_priority", "with_versions"]


@dataclass(frozen=True)
class Resource:
    """One served resource in one version (an APIResource of discovery, plus what routing needs).

    `store_kind` is the kind's name in the object store (its storage version is the store's);
    `definition` names its schema in the OpenAPI definitions (`io.k8s.api.core.v1.Pod`);
    `returns_deleted`: an immediate DELETE answers the object, else a Status (Kind.returns_deleted);
    `stored`: False for the review kinds (kinds/reviews.py), answered and never stored;
    `custom`: a custom resource (a CRD's version), whose discovery apiextensions writes.
    `unconditional_update`: an update may leave out metadata.resourceVersion (Kind.unconditional_update).
    `list_kind`: the kind of its list responses, <kind>List but where a CRD names another (names.listKind).
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    definition: str
    singular: str = ""
    verbs: tuple[str, ...] = ALL_VERBS
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    store_kind: str = ""
    storage_version: bool = True
    served: bool = True
    returns_deleted: bool = False
    stored: bool = True
    custom: bool = False
    unconditional_update: bool = True
    list_kind: str = ""

    def __post_init__(self) -> None:
        if not self.list_kind:
            object.__setattr__(self, "list_kind", self.kind + "List")
        if not self.singular:
            object.__setattr__(self, "singular", self.kind.lower())
        if not self.store_kind:
            object.__setattr__(self, "store_kind", self.kind)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_definition(self) -> str:
        """The list kind's name in the OpenAPI definitions: the kind's with the list kind in its place."""
        return self.definition.removesuffix(self.kind) + self.list_kind

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def group_resource(self) -> str:
        """`resourceclaims.resource.k8s.io`, `pods`: how the API server names it in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def group_kind(self) -> str:
        """`ResourceClaim.resource.k8s.io`, `Pod`: the kind in "is invalid" messages."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


@dataclass
class Catalog:
    """Every served Resource; CRDs add and remove theirs while the server runs."""

    resources: list[Resource] = field(default_factory=list)

    def add(self, resource: Resource) -> None:
        self.remove(resource.group, resource.version, resource.plural)
        self.resources.append(resource)

    def remove(self, group: str, version: str, plural: str) -> None:
        self.resources = [
            r for r in self.resources if (r.group, r.version, r.plural) != (group, version, plural)
        ]

    def find(self, group: str, version: str, plural: str) -> Resource | None:
        for r in self.resources:
            if (r.group, r.version, r.plural) == (group, version, plural) and r.served:
                return r
        return None

    def for_kind(self, api_version: str, kind: str) -> Resource | None:
        for r in self.resources:
            if r.api_version == api_version and r.kind == kind and r.served:
                return r
        return None

    def groups(self) -> list[str]:
        """Group names in the order discovery lists them (core first, then by first appearance)."""
        out: list[str] = []
        for r in self.resources:
            if r.group not in out:
                out.append(r.group)
        return out

    def versions(self, group: str) -> list[str]:
        """Served versions of a group, preferred first (the storage version's, then by priority)."""
        versions = {r.version for r in self.resources if r.group == group and r.served}
        return sorted(versions, key=version_priority)

    def in_version(self, group: str, version: str) -> list[Resource]:
        return [r for r in self.resources if r.group == group and r.version == version and r.served]

    def __iter__(self) -> Iterator[Resource]:
        return iter(list(self.resources))


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version priority: GA before beta before alpha, higher numbers first
    (v1 > v1beta2 > v1beta1 > v1alpha3), then others alphabetically."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (3, 0, 0, version)
    major, level, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[level]
    return (rank, -major, -minor, version)


def builtin_resources(*, classic_dra: bool = False) -> list[Resource]:
    """The built-in resources (nodeagent/kinds), in the order discovery lists them: groups as their
    kinds first name them, a group's versions likewise, a version's kinds in declaration order.
    A version a kind serves only with an option (`optional_versions`) is in the list unserved
    unless that option is on: `classic_dra` (gate DRAControlPlaneController) serves v1alpha3
    ResourceClaims and ResourceClaimTemplates. The review kinds (never stored) come last, create-only."""
    options = {kinds_resource.CLASSIC_DRA: classic_dra}
    groups: dict[str, list[str]] = {}
    for decl in (*BUILTIN, *REVIEWS):
        for api_version in decl.versions:
            versions = groups.setdefault(group_of(api_version), [])
            if api_version not in versions:
                versions.append(api_version)
    out: list[Resource] = []
    for versions in groups.values():
        for api_version in versions:
            out.extend(_resource(decl, api_version, options) for decl in BUILTIN if api_version in decl.versions)
            out.extend(replace(_resource(decl, api_version, options), stored=False)
                       for decl in REVIEWS if api_version in decl.versions)
    return out


def _resource(decl: Kind, api_version: str, options: dict[str, bool]) -> Resource:
    option = decl.optional_versions.get(api_version)
    return Resource(
        group_of(api_version), version_of(api_version), decl.plural, decl.kind, decl.namespaced,
        decl.definition_of(api_version), singular=decl.singular, verbs=decl.verbs, short_names=decl.short_names,
        categories=decl.categories, subresources=decl.subresources,
        storage_version=api_version == decl.storage_version, served=option is None or options.get(option, False),
        returns_deleted=decl.returns_deleted_in(api_version),
        unconditional_update=decl.unconditional_update_in(api_version),
    )


def with_versions(resource: Resource, **changes: object) -> Resource:
    return replace(resource, **changes)  # type: ignore[arg-type]
