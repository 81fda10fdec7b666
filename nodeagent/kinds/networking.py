"""The networking.k8s.io kinds: v1 ServiceCIDR (+status), IPAddress (ip), Ingress (ing, +status),
IngressClass and NetworkPolicy (netpol).

Why served: kube-controller-manager's service-cidr controller lists and watches ServiceCIDRs and
IPAddresses; nodeagent gives Services no ClusterIPs from them, they are data for the real
controller. Ingresses, IngressClasses and NetworkPolicies are in very many Helm charts, and
kube-apiserver stores them for an ingress controller or a network plugin to act on: the embedded
API server stores and checks them as kube-apiserver does, and nothing in nodeagent acts on them
(nor does anything in kube-apiserver). Facts from k8s.io/kubernetes
pkg/registry/networking/{servicecidr,ipaddress,ingress,ingressclass,networkpolicy}. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import GENERATION_SPEC, STATUS_RESET, STATUS_RESET_META, Kind

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

INGRESS = Kind(
    "Ingress", "ingresses", namespaced=True, versions=(NETWORKING_V1,), definition=NETWORKING,
    short_names=("ing",), subresources=("status",), reset=STATUS_RESET, store_hooks="networking",
    printer="ingress", generation=GENERATION_SPEC,
)
INGRESS_CLASS = Kind(
    "IngressClass", "ingressclasses", namespaced=False, versions=(NETWORKING_V1,), definition=NETWORKING,
    store_hooks="networking", printer="ingressclass", generation=GENERATION_SPEC,
)
NETWORK_POLICY = Kind(
    "NetworkPolicy", "networkpolicies", namespaced=True, versions=(NETWORKING_V1,), definition=NETWORKING,
    short_names=("netpol",), store_hooks="networking", printer="networkpolicy", generation=GENERATION_SPEC,
)

KINDS = (SERVICE_CIDR, IP_ADDRESS, INGRESS, INGRESS_CLASS, NETWORK_POLICY)
