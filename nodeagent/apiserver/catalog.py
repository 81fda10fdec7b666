"""The resources the API serves: group, version, plural, kind, scope, verbs, names, subresources.

Why a catalogue apart from the store's KindRegistry: the store keeps one version of each kind
(its storage version), while the API serves several versions of some kinds (resource.k8s.io
v1, v1beta2, v1beta1; Event as core v1 and events.k8s.io/v1) and kinds the node side never
touches (Namespace, ConfigMap, ServiceAccount, Lease, CRDs and their custom resources).
Discovery, OpenAPI and request routing all read this one list. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Resource:
    """One served resource in one version (an APIResource of discovery, plus what routing needs).

    `store_kind` is the kind's name in the object store (its storage version is the store's);
    `definition` names its schema in the OpenAPI definitions (`io.k8s.api.core.v1.Pod`).
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

    def __post_init__(self) -> None:
        if not self.singular:
            object.__setattr__(self, "singular", self.kind.lower())
        if not self.store_kind:
            object.__setattr__(self, "store_kind", self.kind)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

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


_RESOURCE = "resource.k8s.io"
_RESOURCE_VERSIONS = ("v1", "v1beta2", "v1beta1")
_CORE = "io.k8s.api.core.v1"


def _resource_kinds() -> Iterable[Resource]:
    for version in _RESOURCE_VERSIONS:
        storage = version == "v1"
        d = f"io.k8s.api.resource.{version}"
        yield Resource(_RESOURCE, version, "deviceclasses", "DeviceClass", False, f"{d}.DeviceClass",
                       storage_version=storage)
        yield Resource(_RESOURCE, version, "resourceclaims", "ResourceClaim", True, f"{d}.ResourceClaim",
                       subresources=("status",), storage_version=storage)
        yield Resource(_RESOURCE, version, "resourceclaimtemplates", "ResourceClaimTemplate", True,
                       f"{d}.ResourceClaimTemplate", storage_version=storage)
        yield Resource(_RESOURCE, version, "resourceslices", "ResourceSlice", False, f"{d}.ResourceSlice",
                       storage_version=storage)
    # classic DRA's claims (KEP-3063, as 1.31 served them): only with its gate (builtin_resources)
    yield Resource(_RESOURCE, "v1alpha3", "resourceclaims", "ResourceClaim", True,
                   "io.k8s.api.resource.v1alpha3.ResourceClaim", subresources=("status",), storage_version=False,
                   served=False)
    yield Resource(_RESOURCE, "v1alpha3", "resourceclaimtemplates", "ResourceClaimTemplate", True,
                   "io.k8s.api.resource.v1alpha3.ResourceClaimTemplate", storage_version=False, served=False)
    yield Resource(_RESOURCE, "v1alpha3", "podschedulingcontexts", "PodSchedulingContext", True,
                   "io.k8s.api.resource.v1alpha3.PodSchedulingContext", subresources=("status",))
    for version in ("v1", "v1beta2", "v1alpha3"):  # KEP-5055; refused at admission without its gates
        yield Resource(_RESOURCE, version, "devicetaintrules", "DeviceTaintRule", False,
                       f"io.k8s.api.resource.{version}.DeviceTaintRule", subresources=("status",),
                       storage_version=version == "v1")


def builtin_resources(*, classic_dra: bool = False) -> list[Resource]:
    """The built-in resources, in the order discovery lists them; `classic_dra` (gate
    DRAControlPlaneController) serves v1alpha3 ResourceClaims and ResourceClaimTemplates."""
    out = _builtin_resources()
    if classic_dra:
        out = [replace(r, served=True) if r.version == "v1alpha3" and r.kind in ("ResourceClaim",
               "ResourceClaimTemplate") else r for r in out]
    return out


def _builtin_resources() -> list[Resource]:
    return [
        Resource("", "v1", "namespaces", "Namespace", False, f"{_CORE}.Namespace", short_names=("ns",),
                 verbs=("create", "delete", "get", "list", "patch", "update", "watch"), subresources=("status",)),
        Resource("", "v1", "nodes", "Node", False, f"{_CORE}.Node", short_names=("no",), subresources=("status",)),
        Resource("", "v1", "pods", "Pod", True, f"{_CORE}.Pod", short_names=("po",), categories=("all",),
                 subresources=("status", "binding")),
        Resource("", "v1", "events", "Event", True, f"{_CORE}.Event", short_names=("ev",)),
        Resource("", "v1", "resourcequotas", "ResourceQuota", True, f"{_CORE}.ResourceQuota",
                 short_names=("quota",), subresources=("status",)),
        Resource("", "v1", "configmaps", "ConfigMap", True, f"{_CORE}.ConfigMap", short_names=("cm",)),
        Resource("", "v1", "serviceaccounts", "ServiceAccount", True, f"{_CORE}.ServiceAccount",
                 short_names=("sa",)),
        Resource("events.k8s.io", "v1", "events", "Event", True, "io.k8s.api.events.v1.Event",
                 short_names=("ev",), storage_version=False),
        Resource("coordination.k8s.io", "v1", "leases", "Lease", True, "io.k8s.api.coordination.v1.Lease"),
        *_resource_kinds(),
        Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
                 "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
                 short_names=("crd", "crds"), categories=("api-extensions",), subresources=("status",)),
    ]


def with_versions(resource: Resource, **changes: object) -> Resource:
    return replace(resource, **changes)  # type: ignore[arg-type]
