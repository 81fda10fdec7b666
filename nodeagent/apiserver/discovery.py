"""Discovery documents: /version, /api, /apis, /api/v1, /apis/GROUP[/VERSION], and aggregated discovery.

Why both kinds: kubectl and client-go (1.27+) ask /api and /apis for the aggregated
APIGroupDiscoveryList (apidiscovery.k8s.io/v2, one round trip for everything) and fall back
to the legacy per-group-version APIResourceLists when the answer is not of that type; older
clients only know the legacy ones. Both come from the one Catalog. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from nodeagent.apiserver.catalog import Catalog, Resource
from nodeagent.config.versions import release_version

DEFAULT_VERSION = "1.37"
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

_SUB_VERBS = {"status": ("get", "patch", "update"), "binding": ("create",), "finalize": ("update",),
              "token": ("create",), "eviction": ("create",)}
_SUB_KIND = {"binding": ("", "v1", "Binding"), "scale": ("autoscaling", "v1", "Scale"),
             "eviction": ("policy", "v1", "Eviction"),
             "token": ("authentication.k8s.io", "v1", "TokenRequest")}


def git_version(kubernetes_version: str) -> str:
    """`v1.37.2-nodeagent` for "1.37": the release emulated, marked as nodeagent's."""
    return f"{release_version(kubernetes_version)}-nodeagent"


def version_info(kubernetes_version: str, python_version: str, platform: str) -> dict[str, Any]:
    """GET /version: the emulated release (NodeAgentConfiguration.kubernetesVersion), so kubectl's
    skew check and clients that branch on the server's version see the release whose behaviour
    they get. Upstream's binary version and emulation version differ under --emulated-version;
    nodeagent has no binary version of its own, so both name the emulated release."""
    major, _, minor = kubernetes_version.partition(".")
    return {
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "gitVersion": git_version(kubernetes_version),
        "gitCommit": "nodeagent",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": f"python{python_version}",
        "compiler": "cpython",
        "platform": platform,
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(catalog: Catalog, group: str) -> dict[str, Any]:
    versions = catalog.versions(group)
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(catalog: Catalog) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(catalog, g) for g in catalog.groups() if g and catalog.versions(g)],
    }


def api_group(catalog: Catalog, group: str) -> dict[str, Any] | None:
    if not catalog.versions(group):
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(catalog, group)}


def resource_list(catalog: Catalog, group: str, version: str) -> dict[str, Any] | None:
    resources = catalog.in_version(group, version)
    if not resources:
        return None
    out: list[dict[str, Any]] = []
    for r in resources:
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
            **_aliases(r),
            **({"storageVersionHash": _hash(r)} if r.stored else {}),
        }
        out.append(entry)
        for sub in r.subresources:
            g, v, k, verbs = _subresource(r, sub)
            sub_entry: dict[str, Any] = {"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                                         "kind": k, "verbs": verbs}
            if g != r.group or v != r.version:
                sub_entry.update(group=g, version=v)
            out.append(sub_entry)
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": resources[0].group_version,
            "resources": out}


def aggregated(catalog: Catalog, *, core: bool, api_version: str = "apidiscovery.k8s.io/v2") -> dict[str, Any]:
    """The APIGroupDiscoveryList of /api (core=True) or /apis."""
    items: list[dict[str, Any]] = []
    for group in catalog.groups():
        if bool(group) == core:
            continue
        versions = []
        for version in catalog.versions(group):
            versions.append({"version": version,
                             "resources": [_aggregated_resource(r) for r in catalog.in_version(group, version)],
                             "freshness": "Current"})
        if versions:
            items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": versions})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items}


def _aggregated_resource(r: Resource) -> dict[str, Any]:
    """One APIResourceDiscovery as the installer converts the APIResource list: responseKind's group
    and version are the APIResource's, which name a group and version only where the storage answers
    another kind than the resource's own (GroupVersionKindProvider: scale's autoscaling/v1 Scale,
    pods/eviction's policy/v1 Eviction); else both are empty (`{"group":"","version":"","kind":"Pod"}`).
    A custom resource's (apiextensions' discovery controller) names its group and version always."""
    own = (r.group, r.version) if r.custom else ("", "")
    out: dict[str, Any] = {
        "resource": r.plural,
        "responseKind": {"group": own[0], "version": own[1], "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
        **_aliases(r),
    }
    subs = []
    for sub in r.subresources:
        g, v, k, verbs = _subresource(r, sub)
        if (g, v) == (r.group, r.version):
            g, v = own
        subs.append({"subresource": sub, "responseKind": {"group": g, "version": v, "kind": k}, "verbs": verbs})
    if subs:
        out["subresources"] = subs
    return out


def _aliases(r: Resource) -> dict[str, Any]:
    """shortNames and categories, written only when the resource has some (both documents omit empty ones)."""
    out: dict[str, Any] = {}
    if r.short_names:
        out["shortNames"] = list(r.short_names)
    if r.categories:
        out["categories"] = list(r.categories)
    return out


def _subresource(r: Resource, sub: str) -> tuple[str, str, str, list[str]]:
    """The group, version and kind a subresource answers with (its parent's unless it has its own,
    as binding has) and its verbs (status's unless listed)."""
    g, v, k = _SUB_KIND.get(sub, (r.group, r.version, r.kind))
    return g, v, k, list(_SUB_VERBS.get(sub, _SUB_VERBS["status"]))


def _hash(r: Resource) -> str:
    import base64
    import hashlib

    digest = hashlib.sha256(f"{r.group}/{r.store_kind}/{r.plural}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()
