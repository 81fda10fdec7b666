"""The resource.k8s.io kinds (Dynamic Resource Allocation): DeviceClass, ResourceClaim,
ResourceClaimTemplate, ResourceSlice, PodSchedulingContext, DeviceTaintRule.

Facts from k8s.io/kubernetes pkg/registry/resource/* (scope, subresources, field labels, reset
fields) and pkg/apis/resource/*/conversion.go (resource_conversion.py). The store runs
objects/resource/validation.py's hooks on every write of these kinds (defaulting, version conversion of the
object model, validation); the API server's strategies only stamp device taints' timeAdded.
Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds import resource_conversion as rconv
from nodeagent.kinds.model import GENERATION_SPEC, STATUS_RESET_META, Kind, path

GROUP = "resource.k8s.io"
V1 = f"{GROUP}/v1"
V1BETA2 = f"{GROUP}/v1beta2"
V1BETA1 = f"{GROUP}/v1beta1"
V1ALPHA3 = f"{GROUP}/v1alpha3"
VERSIONS = (V1, V1BETA2, V1BETA1)
"""The versions every DRA kind of structured parameters is served in, storage version first."""
CLASSIC_DRA = "classic_dra"
"""The API server option (NodeAgentConfiguration.classicDRA, gate DRAControlPlaneController) that
serves classic DRA's claims in v1alpha3 as 1.31 did (KEP-3063)."""
RESOURCE = {GROUP: "io.k8s.api.resource"}

DEVICE_CLASS = Kind(
    "DeviceClass", "deviceclasses", namespaced=False, versions=VERSIONS, definition=RESOURCE,
    store_hooks="resource", printer="deviceclass", returns_deleted=True,
    generation=GENERATION_SPEC,
)
RESOURCE_CLAIM = Kind(
    "ResourceClaim", "resourceclaims", namespaced=True, versions=(*VERSIONS, V1ALPHA3), definition=RESOURCE,
    optional_versions={V1ALPHA3: CLASSIC_DRA},
    conversions={V1BETA1: rconv.v1beta1("ResourceClaim"), V1ALPHA3: rconv.v1alpha3("ResourceClaim")},
    subresources=("status",), reset=STATUS_RESET_META, store_hooks="resource", printer="resourceclaim",
    returns_deleted=True,
)
RESOURCE_CLAIM_TEMPLATE = Kind(
    "ResourceClaimTemplate", "resourceclaimtemplates", namespaced=True, versions=(*VERSIONS, V1ALPHA3),
    definition=RESOURCE, optional_versions={V1ALPHA3: CLASSIC_DRA},
    conversions={V1BETA1: rconv.v1beta1("ResourceClaimTemplate"), V1ALPHA3: rconv.v1alpha3("ResourceClaimTemplate")},
    store_hooks="resource", printer="resourceclaimtemplate", returns_deleted=True,
)
RESOURCE_SLICE = Kind(
    "ResourceSlice", "resourceslices", namespaced=False, versions=VERSIONS, definition=RESOURCE,
    conversions={V1BETA1: rconv.v1beta1("ResourceSlice")},
    field_labels={
        "spec.nodeName": path("spec", "nodeName"),
        "spec.driver": path("spec", "driver"),
        "spec.pool.name": path("spec", "pool", "name"),
    },
    # device taints get their timeAdded from the API server (KEP-5055)
    store_hooks="resource", strategy="resourceslice", printer="resourceslice",
    returns_deleted=True,
    generation=GENERATION_SPEC,
)
POD_SCHEDULING_CONTEXT = Kind(
    "PodSchedulingContext", "podschedulingcontexts", namespaced=True, versions=(V1ALPHA3,), definition=RESOURCE,
    subresources=("status",), reset=STATUS_RESET_META, store_hooks="resource", printer="podschedulingcontext",
    returns_deleted=True,
)
DEVICE_TAINT_RULE = Kind(
    # KEP-5055: one shape in every version; refused at admission without its gates
    "DeviceTaintRule", "devicetaintrules", namespaced=False, versions=(V1, V1BETA2, V1ALPHA3), definition=RESOURCE,
    subresources=("status",), reset=STATUS_RESET_META, store_hooks="resource", strategy="devicetaintrule",
    # upstream's v1 store answers a Status, the older versions' stores the object (NewRESTv1, NewRESTLegacy)
    returns_deleted=(V1BETA2, V1ALPHA3),
    # AllowUnconditionalUpdate: "Historic behavior for all known old versions", refused from v1 on
    unconditional_update=(V1BETA2, V1ALPHA3),
    generation=GENERATION_SPEC,
)

KINDS = (DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE, RESOURCE_SLICE, POD_SCHEDULING_CONTEXT,
         DEVICE_TAINT_RULE)
CLASSIC_KINDS = tuple(k.kind for k in KINDS if V1ALPHA3 in k.optional_versions)
"""Served as v1alpha3 too with classic DRA, with fields no other version has."""
