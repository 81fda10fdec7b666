"""The apiextensions.k8s.io kinds: CustomResourceDefinition (its strategy, which validates a CRD
as apiextensions-apiserver does, is apiserver/crds.py's). Pure: no I/O."""

from __future__ import annotations

from nodeagent.kinds.model import GENERATION_SPEC, STATUS_RESET, Kind

CUSTOM_RESOURCE_DEFINITION = Kind(
    "CustomResourceDefinition", "customresourcedefinitions", namespaced=False,
    versions=("apiextensions.k8s.io/v1",),
    definition={"apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions"},
    short_names=("crd", "crds"), categories=("api-extensions",), subresources=("status",), reset=STATUS_RESET,
    strategy="customresourcedefinition", unconditional_update=False,
    generation=GENERATION_SPEC,
)

KINDS = (CUSTOM_RESOURCE_DEFINITION,)
