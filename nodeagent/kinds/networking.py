"""The networking.k8s.io kinds: v1 ServiceCIDR (+status) and IPAddress (ip).

Why served: kube-controller-manager's service-cidr controller lists and watches both. nodeagent
gives Services no ClusterIPs from them; they are data for the real controller. Facts from
k8s.io/kubernetes pkg/registry/networking/{servicecidr,ipaddress}. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import STATUS_RESET_META, Kind

NETWORKING_V1 = "networking.k8s.io/v1"
NETWORKING = {"networking.k8s.io": "io.k8s.api.networking"}

SERVICE_CIDR = Kind(
    "ServiceCIDR", "servicecidrs", namespaced=False, versions=(NETWORKING_V1,), definition=NETWORKING,
    subresources=("status",), reset=STATUS_RESET_META, store_hooks="networking", printer="servicecidr",
)
IP_ADDRESS = Kind(
    "IPAddress", "ipaddresses", namespaced=False, versions=(NETWORKING_V1,), definition=NETWORKING,
    short_names=("ip",), store_hooks="networking", printer="ipaddress", ip_names=True,
)

KINDS = (SERVICE_CIDR, IP_ADDRESS)
