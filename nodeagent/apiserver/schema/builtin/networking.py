"""Schemas of networking.k8s.io/v1 ServiceCIDR and IPAddress (k8s.io/api networking/v1 types.go).

Why served: kube-controller-manager's service-cidr controller lists and watches both (it keeps
their finalizers and conditions); nodeagent allocates no ClusterIPs from them, they are data.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import kind, lmap, meta, obj, ref, s, strs
from nodeagent.apiserver.schema.model import Schema

N1 = "io.k8s.api.networking.v1."


def networking_definitions() -> dict[str, Schema]:
    return {
        N1 + "ServiceCIDR": kind("A range of ClusterIPs Services may be given.", {
            "spec": ref(N1 + "ServiceCIDRSpec", "The ranges."),
            "status": ref(N1 + "ServiceCIDRStatus", "Whether it is ready."),
        }),
        N1 + "ServiceCIDRSpec": obj("The ranges: at most one IPv4 and one IPv6 CIDR; immutable.", {
            "cidrs": strs("The CIDRs."),
        }),
        N1 + "ServiceCIDRStatus": obj("What the service-cidr controller observed.", {
            "conditions": lmap(meta("Condition"), "Ready.", "type"),
        }),
        N1 + "IPAddress": kind("One allocated IP address, named by the address.", {
            "spec": ref(N1 + "IPAddressSpec", "Who holds it."),
        }, ["spec"]),
        N1 + "IPAddressSpec": obj("Who holds an address.", {
            "parentRef": ref(N1 + "ParentReference", "The object the address is allocated to."),
        }, ["parentRef"]),
        N1 + "ParentReference": obj("An object by group, resource, namespace and name.", {
            "group": s("The API group."), "resource": s("The resource."),
            "namespace": s("The namespace."), "name": s("The name."),
        }, ["resource", "name"]),
    }
