"""The schemas of every built-in kind the API serves, and their group-version-kinds.

Why one entry point: validation, pruning, strategic merge patch, server-side apply, kubectl
explain and the OpenAPI documents all read one `Definitions` table; this assembles it from the
per-area modules of this package (meta, container, volume, pod, core, resource, taint_rule,
other, crd; dsl is their vocabulary). Pure: built on each call, nothing cached.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.container import container_definitions
from nodeagent.apiserver.schema.builtin.core import core_definitions
from nodeagent.apiserver.schema.builtin.crd import crd_definitions
from nodeagent.apiserver.schema.builtin.meta import meta_definitions
from nodeagent.apiserver.schema.builtin.other import other_definitions
from nodeagent.apiserver.schema.builtin.pod import pod_definitions
from nodeagent.apiserver.schema.builtin.resource import resource_definitions
from nodeagent.apiserver.schema.builtin.taint_rule import VERSIONS as TAINT_RULE_VERSIONS
from nodeagent.apiserver.schema.builtin.taint_rule import taint_rule_definitions
from nodeagent.apiserver.schema.builtin.volume import volume_definitions
from nodeagent.apiserver.schema.model import Definitions, Schema

RESOURCE_VERSIONS = ("v1", "v1beta2", "v1beta1")
CLASSIC_KINDS = ("ResourceClaim", "ResourceClaimTemplate")  # also in v1alpha3, for classic DRA


def classic_claim_definitions() -> dict[str, Schema]:
    """v1alpha3's ResourceClaim and ResourceClaimTemplate and what they reference, nothing more
    (v1alpha3's other definitions are DeviceTaintRule's and PodSchedulingContext's)."""
    every = resource_definitions("v1alpha3")
    keep: set[str] = set()
    todo = [f"io.k8s.api.resource.v1alpha3.{k}" for k in CLASSIC_KINDS]
    while todo:
        name = todo.pop()
        if name in keep or name not in every:
            continue
        keep.add(name)
        todo.extend(_refs(every[name]))
    return {name: every[name] for name in sorted(keep)}


def _refs(schema: Schema | None) -> list[str]:
    if schema is None:
        return []
    out = [schema.ref] if schema.ref else []
    for child in (*schema.properties.values(), schema.items, schema.additional_properties):
        out += _refs(child)
    return out


def builtin_definitions() -> Definitions:
    """Every definition the built-in kinds need, named as upstream names them."""
    defs = Definitions()
    parts = [meta_definitions(), container_definitions(), volume_definitions(), pod_definitions(),
             core_definitions(), other_definitions(), crd_definitions()]
    parts += [resource_definitions(v) for v in RESOURCE_VERSIONS]
    parts.append(classic_claim_definitions())
    parts += [taint_rule_definitions(v) for v in TAINT_RULE_VERSIONS]
    for part in parts:
        for name, schema in part.items():
            if name in defs:
                # one place per definition: a second copy could drift from the first unseen
                raise ValueError(f"schema definition {name} is written twice")
            defs.add(name, schema)
    return defs


def _gvks() -> dict[str, tuple[str, str, str]]:
    core = "io.k8s.api.core.v1."
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1."
    out: dict[str, tuple[str, str, str]] = {
        core + k: ("", "v1", k)
        for k in ("Pod", "Node", "Namespace", "Event", "ResourceQuota", "ConfigMap", "ServiceAccount", "Binding")
    }
    out.update({meta + k: ("", "v1", k) for k in ("Status", "DeleteOptions", "WatchEvent", "APIResourceList")})
    out["io.k8s.api.events.v1.Event"] = ("events.k8s.io", "v1", "Event")
    out["io.k8s.api.coordination.v1.Lease"] = ("coordination.k8s.io", "v1", "Lease")
    for v in RESOURCE_VERSIONS:
        for k in ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"):
            out[f"io.k8s.api.resource.{v}.{k}"] = ("resource.k8s.io", v, k)
    for k in CLASSIC_KINDS:
        out[f"io.k8s.api.resource.v1alpha3.{k}"] = ("resource.k8s.io", "v1alpha3", k)
    out["io.k8s.api.resource.v1alpha3.PodSchedulingContext"] = ("resource.k8s.io", "v1alpha3", "PodSchedulingContext")
    for v in TAINT_RULE_VERSIONS:
        out[f"io.k8s.api.resource.{v}.DeviceTaintRule"] = ("resource.k8s.io", v, "DeviceTaintRule")
    out["io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"] = (
        "apiextensions.k8s.io", "v1", "CustomResourceDefinition")
    return out


BUILTIN_GVK: dict[str, tuple[str, str, str]] = _gvks()
"""Definition name -> (group, version, kind), for x-kubernetes-group-version-kind."""
