"""Schemas of networking.k8s.io/v1 ServiceCIDR, IPAddress, Ingress, IngressClass and NetworkPolicy
(k8s.io/api networking/v1 types.go).

Why served: kube-controller-manager's service-cidr controller lists and watches the first two (it keeps
their finalizers and conditions); nodeagent allocates no ClusterIPs from them, they are data. The
other three are stored for an ingress controller or a network plugin (kinds/networking.py).
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import (
    CORE,
    INT_OR_STRING,
    arr,
    core,
    i32,
    kind,
    lmap,
    meta,
    obj,
    ref,
    s,
    strs,
)
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
        **_ingress_definitions(),
        **_network_policy_definitions(),
    }


def _ingress_definitions() -> dict[str, Schema]:
    backend = ref(N1 + "IngressBackend", "Where the traffic goes: a Service's port or another resource.")
    return {
        N1 + "Ingress": kind("Rules by which outside traffic reaches Services (an ingress controller's input).", {
            "spec": ref(N1 + "IngressSpec", "The rules."),
            "status": ref(N1 + "IngressStatus", "The load balancer's addresses."),
        }),
        N1 + "IngressSpec": obj("The class, the default backend, TLS and host/path rules.", {
            "ingressClassName": s("The IngressClass's name."),
            "defaultBackend": ref(N1 + "IngressBackend", "Where traffic no rule matches goes."),
            "tls": arr(ref(N1 + "IngressTLS"), "TLS per host set.", atomic=True),
            "rules": arr(ref(N1 + "IngressRule"), "Host rules.", atomic=True),
        }),
        N1 + "IngressBackend": obj("A Service's port or a resource (exactly one).", {
            "service": ref(N1 + "IngressServiceBackend", "A Service in the Ingress's namespace."),
            "resource": core("TypedLocalObjectReference", "Another object in the Ingress's namespace."),
        }),
        N1 + "IngressServiceBackend": obj("A Service by name and port.", {
            "name": s("The Service's name."),
            "port": ref(N1 + "ServiceBackendPort", "The Service's port."),
        }, ["name"]),
        N1 + "ServiceBackendPort": obj("A Service port by name or number (exactly one).", {
            "name": s("The port's name."), "number": i32("The port's number."),
        }),
        # core/v1's, written here: an Ingress backend is the only served field spelling it out (a PVC's
        # dataSource is kept loose, schema/builtin/volume.py)
        CORE + "TypedLocalObjectReference": obj("An object in the same namespace by API group, kind and name.", {
            "apiGroup": s("The group (the core group when unset)."), "kind": s("The kind."), "name": s("The name."),
        }, ["kind", "name"], map_type="atomic"),
        N1 + "IngressTLS": obj("A TLS secret for some hosts.", {
            "hosts": strs("The hosts."), "secretName": s("The Secret holding the certificate and key."),
        }),
        N1 + "IngressRule": obj("A host and its HTTP paths.", {
            "host": s("The host (a DNS name, possibly with a leading wildcard)."),
            "http": ref(N1 + "HTTPIngressRuleValue", "The paths."),
        }),
        N1 + "HTTPIngressRuleValue": obj("HTTP paths.", {
            "paths": arr(ref(N1 + "HTTPIngressPath"), "The paths.", atomic=True),
        }, ["paths"]),
        N1 + "HTTPIngressPath": obj("A path and its backend.", {
            "path": s("The path."),
            "pathType": s("How the path matches.", enum=("Exact", "ImplementationSpecific", "Prefix")),
            "backend": backend,
        }, ["pathType", "backend"]),
        N1 + "IngressStatus": obj("The Ingress's current state.", {
            "loadBalancer": ref(N1 + "IngressLoadBalancerStatus", "The load balancer."),
        }),
        N1 + "IngressLoadBalancerStatus": obj("A load balancer's points of entry.", {
            "ingress": arr(ref(N1 + "IngressLoadBalancerIngress"), "The points of entry.", atomic=True),
        }),
        N1 + "IngressLoadBalancerIngress": obj("One point of entry.", {
            "ip": s("Its IP."), "hostname": s("Its DNS name."),
            "ports": arr(ref(N1 + "IngressPortStatus"), "Its ports.", atomic=True),
        }),
        N1 + "IngressPortStatus": obj("A port's state.", {
            "port": i32("The port."), "protocol": s("The protocol.", enum=("SCTP", "TCP", "UDP")),
            "error": s("Why the port is not served."),
        }, ["port", "protocol"]),
        N1 + "IngressClass": kind("A class of Ingresses and the controller that implements it.", {
            "spec": ref(N1 + "IngressClassSpec", "The controller and its parameters."),
        }),
        N1 + "IngressClassSpec": obj("The controller and its parameters.", {
            "controller": s("The controller's name (a domain-prefixed path)."),
            "parameters": ref(N1 + "IngressClassParametersReference", "The controller's configuration."),
        }),
        N1 + "IngressClassParametersReference": obj("An object holding a controller's parameters.", {
            "apiGroup": s("Its API group."), "kind": s("Its kind."), "name": s("Its name."),
            "scope": s("Cluster or Namespace."), "namespace": s("Its namespace, when scope is Namespace."),
        }, ["kind", "name"]),
    }


def _network_policy_definitions() -> dict[str, Schema]:
    port = arr(ref(N1 + "NetworkPolicyPort"), "The ports (all when empty).", atomic=True)
    peers = arr(ref(N1 + "NetworkPolicyPeer"), "The peers (all when empty).", atomic=True)
    return {
        N1 + "NetworkPolicy": kind("What traffic the selected pods may take and send.", {
            "spec": ref(N1 + "NetworkPolicySpec", "The policy."),
        }),
        N1 + "NetworkPolicySpec": obj("The pods, their ingress and egress rules and the directions they cover.", {
            "podSelector": meta("LabelSelector", "The pods (all in the namespace when empty)."),
            "ingress": arr(ref(N1 + "NetworkPolicyIngressRule"), "Allowed ingress.", atomic=True),
            "egress": arr(ref(N1 + "NetworkPolicyEgressRule"), "Allowed egress.", atomic=True),
            "policyTypes": arr(s(enum=("Egress", "Ingress")), "Ingress, Egress or both.", atomic=True),
        }),
        N1 + "NetworkPolicyIngressRule": obj("Traffic allowed in.", {"ports": port, "from": peers}),
        N1 + "NetworkPolicyEgressRule": obj("Traffic allowed out.", {"ports": port, "to": peers}),
        N1 + "NetworkPolicyPort": obj("A port or range.", {
            "protocol": s("The protocol (TCP by default).", enum=("SCTP", "TCP", "UDP")),
            "port": ref(INT_OR_STRING, "A port number or name."),
            "endPort": i32("The range's last port."),
        }),
        N1 + "NetworkPolicyPeer": obj("Pods, namespaces or an IP block.", {
            "podSelector": meta("LabelSelector", "Pods."),
            "namespaceSelector": meta("LabelSelector", "Namespaces."),
            "ipBlock": ref(N1 + "IPBlock", "A CIDR and its exceptions."),
        }),
        N1 + "IPBlock": obj("A CIDR less some CIDRs.", {
            "cidr": s("The CIDR."), "except": strs("CIDRs left out."),
        }, ["cidr"]),
    }
