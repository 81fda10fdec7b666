"""The schemas of every built-in kind the API serves, and their group-version-kinds.

Why one entry point: validation, pruning, strategic merge patch, server-side apply, kubectl
explain and the OpenAPI documents all read one `Definitions` table; this assembles it from the
per-area modules of this package (meta, container, volume, pod, core, resource, taint_rule,
other, crd, workloads; dsl is their vocabulary). Which kinds and versions exist is not repeated here: the
group-version-kinds and the served DRA versions come from the kinds' declarations (nodeagent.kinds).
Pure: built on each call, nothing cached.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.admission import admission_definitions
from nodeagent.apiserver.schema.builtin.autoscaling import autoscaling_definitions, autoscaling_v1_definitions
from nodeagent.apiserver.schema.builtin.certificates import certificates_definitions
from nodeagent.apiserver.schema.builtin.cluster import cluster_definitions
from nodeagent.apiserver.schema.builtin.container import container_definitions
from nodeagent.apiserver.schema.builtin.core import core_definitions
from nodeagent.apiserver.schema.builtin.corev1 import corev1_definitions
from nodeagent.apiserver.schema.builtin.crd import crd_definitions
from nodeagent.apiserver.schema.builtin.meta import meta_definitions
from nodeagent.apiserver.schema.builtin.networking import networking_definitions
from nodeagent.apiserver.schema.builtin.node import node_definitions
from nodeagent.apiserver.schema.builtin.other import other_definitions
from nodeagent.apiserver.schema.builtin.pod import pod_definitions
from nodeagent.apiserver.schema.builtin.rbac import rbac_definitions
from nodeagent.apiserver.schema.builtin.resource import resource_definitions
from nodeagent.apiserver.schema.builtin.reviews import reviews_definitions
from nodeagent.apiserver.schema.builtin.storage import storage_definitions
from nodeagent.apiserver.schema.builtin.taint_rule import taint_rule_definitions
from nodeagent.apiserver.schema.builtin.volume import volume_definitions
from nodeagent.apiserver.schema.builtin.workloads import workload_definitions
from nodeagent.apiserver.schema.model import Definitions, Schema
from nodeagent.kinds import BUILTIN
from nodeagent.kinds import resource as kinds_resource
from nodeagent.kinds.model import group_of, version_of
from nodeagent.kinds.reviews import REVIEWS

RESOURCE_VERSIONS = tuple(version_of(v) for v in kinds_resource.VERSIONS)
TAINT_RULE_VERSIONS = tuple(version_of(v) for v in kinds_resource.DEVICE_TAINT_RULE.versions)
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
    parts.append(workload_definitions())
    parts.append(corev1_definitions())
    parts += [resource_definitions(v) for v in RESOURCE_VERSIONS]
    parts.append(classic_claim_definitions())
    parts.append(storage_definitions())
    parts.append(cluster_definitions())
    parts.append(rbac_definitions())
    parts += [autoscaling_definitions(), autoscaling_v1_definitions(), admission_definitions(),
              certificates_definitions(), networking_definitions(), node_definitions()]
    parts.append(reviews_definitions())
    parts += [taint_rule_definitions(v) for v in TAINT_RULE_VERSIONS]
    for part in parts:
        for name, schema in part.items():
            if name in defs:
                # one place per definition: a second copy could drift from the first unseen
                raise ValueError(f"schema definition {name} is written twice")
            defs.add(name, schema)
    return defs


def _gvks() -> dict[str, tuple[str, str, str]]:
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1."
    out = {kind.definition_of(v): (group_of(v), version_of(v), kind.kind) for kind in (*BUILTIN, *REVIEWS)
           for v in kind.versions}
    # Bodies that are not served kinds: pods/binding's, and meta's that answer or ride along.
    out["io.k8s.api.core.v1.Binding"] = ("", "v1", "Binding")
    out["io.k8s.api.autoscaling.v1.Scale"] = ("autoscaling", "v1", "Scale")  # the scale subresource's body
    out["io.k8s.api.authentication.v1.TokenRequest"] = ("authentication.k8s.io", "v1", "TokenRequest")  # .../token
    out.update({meta + k: ("", "v1", k) for k in ("Status", "DeleteOptions", "WatchEvent", "APIResourceList")})
    return out


BUILTIN_GVK: dict[str, tuple[str, str, str]] = _gvks()
"""Definition name -> (group, version, kind), for x-kubernetes-group-version-kind."""
