"""The discovery.k8s.io kinds: discovery.k8s.io/v1 EndpointSlice.

Why served: Services' endpoints as kube-proxy, DNS and the real kube-controller-manager's
endpointslice controllers read and write them. Facts from k8s.io/kubernetes
pkg/registry/discovery/endpointslice. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import GENERATION_LABELS, Kind

ENDPOINT_SLICE = Kind(
    "EndpointSlice", "endpointslices", namespaced=True, versions=("discovery.k8s.io/v1",),
    definition={"discovery.k8s.io": "io.k8s.api.discovery"}, store_hooks="cluster", printer="endpointslice",
    generation=GENERATION_LABELS,
)

KINDS = (ENDPOINT_SLICE,)
