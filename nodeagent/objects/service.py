"""Services: upstream's defaulting (SetDefaults_Service), validation (ValidateServiceCreate,
ValidateServiceUpdate: pkg/apis/core/validation) and cluster-IP / node-port allocation (the
service REST storage's allocators), as store hooks so every writer gets them.

Why store hooks: an allocation must see every other Service in the same transaction, so two
creates can never get the same cluster IP; the hooks run inside the store's write, with its
reader. The cluster is single-stack IPv4 with upstream's default `--service-cluster-ip-range`
(10.0.0.0/24) and `--service-node-port-range` (30000-32767); a cluster IP is picked at random in
the upper band of the range first, as upstream's bitmap allocator with its static-range offset
(the lower band is kept for clients that ask for a given IP). Differences from upstream, on
purpose: the allocated IPs are not written as networking.k8s.io IPAddress objects. The API server
creates the `default/kubernetes` Service with the range's first address and the ServiceCIDR `kubernetes`
(apiserver/kubernetes_service.py).
Errors are collected as upstream's field.ErrorList (every failing field at once), with its
paths and texts. Pure apart from the random pick; the reader is passed in.
"""

from __future__ import annotations

import ipaddress
import json
import random
import re
from collections.abc import Mapping
from typing import Any, Protocol

from nodeagent.errors import ValidationError
from nodeagent.objects.common import Errors
from nodeagent.store import validation as meta

JSON = dict[str, Any]

SERVICE_CIDR = ipaddress.IPv4Network("10.0.0.0/24")
"""kube-apiserver's default --service-cluster-ip-range."""
NODE_PORTS = range(30000, 32768)
"""kube-apiserver's default --service-node-port-range."""
TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
PROTOCOLS = ("SCTP", "TCP", "UDP")
AFFINITIES = ("ClientIP", "None")
TRAFFIC_POLICIES = ("Cluster", "Local")
TRAFFIC_DISTRIBUTIONS = ("PreferClose", "PreferSameZone", "PreferSameNode")
IP_FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
CLIENT_IP_TIMEOUT = 10800  # DefaultClientIPServiceAffinitySeconds
MAX_CLIENT_IP_TIMEOUT = 86400
_PORT_NAME_CHARS = re.compile(r"^[-a-z0-9]+$")
_HAS_LETTER = re.compile(r"[a-z]")


class Reader(Protocol):
    """What allocation reads of the store: every Service (the transaction's view)."""

    def list(self, kind: str, namespace: str | None = ...) -> list[JSON]: ...


def _spec(obj: JSON) -> JSON:
    spec = obj.get("spec")
    if spec is None:
        spec = obj["spec"] = {}
    return spec if isinstance(spec, dict) else {}


def externally_accessible(spec: Mapping[str, Any]) -> bool:
    """apiservice.ExternallyAccessible: NodePort, LoadBalancer, or ClusterIP with external IPs."""
    kind = spec.get("type")
    return kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and bool(spec.get("externalIPs")))


def headless(spec: Mapping[str, Any]) -> bool:
    return spec.get("clusterIP") == "None" or (spec.get("clusterIPs") or [None])[0] == "None"


def default_service(obj: JSON) -> JSON:
    """SetDefaults_Service, then the REST storage's normalisation of clusterIPs and the IP family
    fields (initIPFamilyFields on a single-stack IPv4 cluster)."""
    spec = _spec(obj)
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        cfg = spec.get("sessionAffinityConfig")
        client = cfg.get("clientIP") if isinstance(cfg, dict) else None
        if not isinstance(client, dict) or client.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": CLIENT_IP_TIMEOUT}}
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    for port in spec.get("ports") or ():
        if not isinstance(port, dict):
            continue
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    if externally_accessible(spec) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] in ("ClusterIP", "LoadBalancer", "NodePort"):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    if spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    if spec["type"] != "ExternalName":
        if spec.get("ipFamilyPolicy") is None:
            dual = spec.get("clusterIP") == "None" and not spec.get("selector")
            spec["ipFamilyPolicy"] = "RequireDualStack" if dual else "SingleStack"
        if not spec.get("ipFamilies"):
            spec["ipFamilies"] = ["IPv4"]
            if spec.get("clusterIP") == "None" and not spec.get("selector") and spec["ipFamilyPolicy"] != "SingleStack":
                spec["ipFamilies"].append("IPv6")  # headless and selectorless: both families
    return obj


def validate_service(obj: JSON) -> None:
    """ValidateServiceCreate's checks (they are also ValidateServiceUpdate's, less the transitions)."""
    errs = Errors()
    md = obj.get("metadata") or {}
    errs.check(meta.check_dns_label, "metadata.name", str(md.get("name") or ""))
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    kind = spec.get("type") or ""
    ports = spec.get("ports") or []
    is_headless = headless(spec)
    if not ports and not is_headless and kind != "ExternalName":
        errs.append(meta.required("spec.ports"))
    if kind in ("LoadBalancer", "NodePort") and is_headless:
        errs.append(meta.invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {kind} services"))
    elif kind == "ExternalName":
        for attr in ("clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if spec.get(attr):
                errs.append(meta.forbidden(f"spec.{attr}", "may not be set for ExternalName services"))
        cname = str(spec.get("externalName") or "").removesuffix(".")
        if cname:
            errs.check(meta.check_dns_subdomain, "spec.externalName", cname)
        else:
            errs.append(meta.required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        _check_port(errs, port if isinstance(port, dict) else {}, len(ports) > 1, names, f"spec.ports[{i}]")
    selector = spec.get("selector")
    if isinstance(selector, dict):
        errs.check(meta.check_labels, "spec.selector", selector)
    _check_affinity(errs, spec)
    _check_cluster_ips(errs, spec)
    for i, ip in enumerate(spec.get("externalIPs") or ()):
        if not _is_ip(ip):
            errs.append(meta.invalid(f"spec.externalIPs[{i}]", ip, "must be a valid IP address, (e.g. 10.9.8.7 or "
                                     "2001:db8::ffff)"))
    if not kind:
        errs.append(meta.required("spec.type"))
    elif kind not in TYPES:
        errs.append(meta.not_supported("spec.type", kind, TYPES))
    if kind == "ClusterIP":
        for i, port in enumerate(ports):
            if isinstance(port, dict) and port.get("nodePort"):
                errs.append(meta.forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"))
    node_ports: set[tuple[Any, Any]] = set()
    seen: set[tuple[Any, Any]] = set()
    for i, port in enumerate(p for p in ports if isinstance(p, dict)):
        if port.get("nodePort"):
            key = (port.get("protocol"), port.get("nodePort"))
            if key in node_ports:
                errs.append(meta.duplicate(f"spec.ports[{i}].nodePort", port.get("nodePort")))
            node_ports.add(key)
        key = (port.get("protocol"), port.get("port"))
        if key in seen:
            errs.append(_bad("Duplicate value", f"spec.ports[{i}]", _go_port(port)))
        seen.add(key)
    if spec.get("loadBalancerSourceRanges") and kind != "LoadBalancer":
        errs.append(meta.forbidden("spec.LoadBalancerSourceRanges", "may only be used when `type` is 'LoadBalancer'"))
    if spec.get("allocateLoadBalancerNodePorts") is not None and kind != "LoadBalancer":
        errs.append(meta.forbidden("spec.allocateLoadBalancerNodePorts",
                                   "may only be used when `type` is 'LoadBalancer'"))
    _check_traffic(errs, spec)
    errs.raise_all()


def _go_port(port: Mapping[str, Any]) -> dict[str, Any]:
    """The (protocol, port) key field.Duplicate prints: the internal core.ServicePort with only
    those two fields set, as encoding/json writes it (Go field names, the IntOrString zero as 0)."""
    return {"Name": "", "Protocol": port.get("protocol"), "AppProtocol": None, "Port": port.get("port"),
            "TargetPort": 0, "NodePort": 0}


def _bad(kind: str, path: str, value: Any, detail: str = "") -> ValidationError:
    """field.Error with a list or struct value: rendered as encoding/json writes it."""
    text = json.dumps(value, separators=(",", ":"))
    return ValidationError(path, f"{kind}: {text}" + (f": {detail}" if detail else ""))


def _check_port(errs: Errors, port: Mapping[str, Any], require_name: bool, names: set[str], path: str) -> None:
    name = port.get("name") or ""
    if require_name and not name:
        errs.append(meta.required(f"{path}.name"))
    elif name:
        errs.check(meta.check_dns_label, f"{path}.name", str(name))
        if name in names:
            errs.append(meta.duplicate(f"{path}.name", name))
        names.add(str(name))
    number = port.get("port")
    if not isinstance(number, int) or not 1 <= number <= 65535:
        errs.append(meta.invalid(f"{path}.port", number or 0, "must be between 1 and 65535, inclusive"))
    protocol = port.get("protocol") or ""
    if not protocol:
        errs.append(meta.required(f"{path}.protocol"))
    elif protocol not in PROTOCOLS:
        errs.append(meta.not_supported(f"{path}.protocol", protocol, PROTOCOLS))
    target = port.get("targetPort")
    if isinstance(target, int):
        if not 1 <= target <= 65535:
            errs.append(meta.invalid(f"{path}.targetPort", target, "must be between 1 and 65535, inclusive"))
    elif isinstance(target, str):
        for msg in port_name_errors(target):
            errs.append(meta.invalid(f"{path}.targetPort", target, msg))
    node_port = port.get("nodePort")
    if node_port and (not isinstance(node_port, int) or not 1 <= node_port <= 65535):
        errs.append(meta.invalid(f"{path}.nodePort", node_port, "must be between 1 and 65535, inclusive"))
    if port.get("appProtocol") is not None:
        errs.check(meta.check_qualified_name, f"{path}.appProtocol", str(port.get("appProtocol")))


def port_name_errors(name: str) -> list[str]:
    """validation.IsValidPortName's messages."""
    out = []
    if len(name) > 15:
        out.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.match(name):
        out.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _HAS_LETTER.search(name):
        out.append("must contain at least one letter (a-z)")
    if "--" in name:
        out.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        out.append("must not begin or end with a hyphen")
    return out


def _check_affinity(errs: Errors, spec: Mapping[str, Any]) -> None:
    affinity = spec.get("sessionAffinity") or ""
    path = "spec.sessionAffinityConfig"
    if not affinity:
        errs.append(meta.required("spec.sessionAffinity"))
    elif affinity not in AFFINITIES:
        errs.append(meta.not_supported("spec.sessionAffinity", affinity, AFFINITIES))
    if affinity == "None" and spec.get("sessionAffinityConfig") is not None:
        errs.append(meta.forbidden(path, "must not be set when session affinity is None"))
    elif affinity == "ClientIP":
        cfg = spec.get("sessionAffinityConfig")
        client = cfg.get("clientIP") if isinstance(cfg, dict) else None
        timeout = client.get("timeoutSeconds") if isinstance(client, dict) else None
        if not isinstance(cfg, dict):
            errs.append(meta.required(path, "when session affinity type is ClientIP"))
        elif not isinstance(client, dict):
            errs.append(meta.required(f"{path}.clientIP", "when session affinity type is ClientIP"))
        elif timeout is None:
            errs.append(meta.required(f"{path}.clientIP.timeoutSeconds", "when session affinity type is ClientIP"))
        elif not isinstance(timeout, int) or not 0 < timeout <= MAX_CLIENT_IP_TIMEOUT:
            errs.append(meta.invalid(f"{path}.clientIP.timeoutSeconds", timeout,
                                     f"must be greater than 0 and less than {MAX_CLIENT_IP_TIMEOUT}s"))


def _check_cluster_ips(errs: Errors, spec: Mapping[str, Any]) -> None:
    """ValidateServiceClusterIPsRelatedFields, the single-stack part."""
    ips = spec.get("clusterIPs") or []
    cluster_ip = spec.get("clusterIP") or ""
    if spec.get("type") == "ExternalName":
        return
    if cluster_ip and ips and ips[0] != cluster_ip:
        errs.append(_bad("Invalid value", "spec.clusterIPs", ips, "first value must match `clusterIP`"))
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        errs.append(meta.not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    for i, family in enumerate(spec.get("ipFamilies") or ()):
        if family not in ("IPv4", "IPv6"):
            errs.append(meta.not_supported(f"spec.ipFamilies[{i}]", family, ("IPv4", "IPv6")))
    for i, ip in enumerate(ips):
        if ip == "None":
            if i > 0:
                errs.append(meta.invalid(f"spec.clusterIPs[{i}]", ip, "must be a valid IP address, (e.g. 10.9.8.7 or "
                                         "2001:db8::ffff)"))
            continue
        if not _is_ip(ip):
            errs.append(meta.invalid(f"spec.clusterIPs[{i}]", ip, "must be a valid IP address, (e.g. 10.9.8.7 or "
                                     "2001:db8::ffff)"))


def _check_traffic(errs: Errors, spec: Mapping[str, Any]) -> None:
    external = spec.get("externalTrafficPolicy") or ""
    if not externally_accessible(spec):
        if external:
            errs.append(meta.invalid("spec.externalTrafficPolicy", external,
                                     "may only be set for externally-accessible services"))
    elif not external:
        errs.append(meta.required("spec.externalTrafficPolicy"))
    elif external not in TRAFFIC_POLICIES:
        errs.append(meta.not_supported("spec.externalTrafficPolicy", external, TRAFFIC_POLICIES))
    health = spec.get("healthCheckNodePort")
    if health and not (spec.get("type") == "LoadBalancer" and external == "Local"):
        errs.append(meta.invalid("spec.healthCheckNodePort", health, "may only be set when `type` is 'LoadBalancer' "
                                 "and `externalTrafficPolicy` is 'Local'"))
    internal = spec.get("internalTrafficPolicy")
    if internal is None and spec.get("type") in ("ClusterIP", "LoadBalancer", "NodePort"):
        errs.append(meta.required("spec.internalTrafficPolicy"))
    elif internal is not None and internal not in TRAFFIC_POLICIES:
        errs.append(meta.not_supported("spec.internalTrafficPolicy", internal, TRAFFIC_POLICIES))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution not in TRAFFIC_DISTRIBUTIONS:
        values = ", ".join(f'"{v}"' for v in TRAFFIC_DISTRIBUTIONS)  # upstream's order, not sorted
        errs.append(ValidationError("spec.trafficDistribution",
                                         f"Unsupported value: {meta.quote(distribution)}: supported values: {values}"))


def _is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def validate_service_update(new: JSON, old: JSON) -> None:
    """ValidateServiceUpdate's transitions: a cluster IP may not change once set (unless the
    service goes to or from ExternalName), nor a LoadBalancer's health check node port."""
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if "ExternalName" in (spec.get("type"), old_spec.get("type")) or (headless(spec) and headless(old_spec)):
        return
    ips, old_ips = spec.get("clusterIPs") or [], old_spec.get("clusterIPs") or []
    if old_ips and not ips:
        raise _bad("Invalid value", "spec.clusterIPs[0]", ips, "primary clusterIP can not be unset")
    for i, ip in enumerate(old_ips[: len(ips)]):
        if ip != ips[i]:
            raise _bad("Invalid value", f"spec.clusterIPs[{i}]", ips, "may not change once set")


def keep_allocated(new: JSON, old: Mapping[str, Any]) -> None:
    """The REST storage's patchAllocatedValues: an update that omits the allocated cluster IPs,
    node ports or health check node port keeps the stored ones (a PUT of a manifest without them)."""
    spec, old_spec = new.get("spec"), old.get("spec") or {}
    if not isinstance(spec, dict) or "ExternalName" in (spec.get("type"), old_spec.get("type")):
        return
    if not spec.get("clusterIP") and old_spec.get("clusterIP"):
        spec["clusterIP"] = old_spec["clusterIP"]
    if not spec.get("clusterIPs") and old_spec.get("clusterIPs") and spec.get("clusterIP") == old_spec.get("clusterIP"):
        spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if spec.get("type") in ("NodePort", "LoadBalancer") and old_spec.get("type") in ("NodePort", "LoadBalancer"):
        old_ports = {(p.get("protocol") or "TCP", p.get("port")): p.get("nodePort")
                     for p in old_spec.get("ports") or () if isinstance(p, dict)}
        for port in spec.get("ports") or ():
            if isinstance(port, dict) and not port.get("nodePort"):
                found = old_ports.get((port.get("protocol") or "TCP", port.get("port")))
                if found:
                    port["nodePort"] = found
        if not spec.get("healthCheckNodePort") and old_spec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


class Allocator:
    """Cluster IPs and node ports from the store's Services, as upstream's allocators hand them out.

    `rng` picks among the free values (upstream picks at random too); injected so tests can fix it.
    """

    def __init__(self, cidr: ipaddress.IPv4Network = SERVICE_CIDR, node_ports: range = NODE_PORTS,
                 rng: random.Random | None = None) -> None:
        self.cidr = cidr
        self.node_ports = node_ports
        self.rng = rng or random.Random()

    def admit(self, obj: JSON, reader: Reader) -> None:
        """On create: allocate what the spec asks for and has not named; check what it named."""
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("type") == "ExternalName":
            return
        others = [s.get("spec") or {} for s in reader.list("Service", None)]
        if not headless(spec):
            self._cluster_ip(spec, others)
        if spec.get("type") in ("NodePort", "LoadBalancer") and spec.get("allocateLoadBalancerNodePorts") is not False:
            self._node_ports(spec, others)
        if spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local" \
                and not spec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = self._free_port(_used_node_ports(others) | _used_node_ports([spec]))

    def _cluster_ip(self, spec: JSON, others: list[Mapping[str, Any]]) -> None:
        used = {ip for o in others for ip in (o.get("clusterIPs") or [o.get("clusterIP")]) if ip}
        wanted = spec.get("clusterIP")
        if wanted:
            address = ipaddress.ip_address(wanted)
            if address not in self.cidr or address in (self.cidr.network_address, self.cidr.broadcast_address):
                raise _bad("Invalid value", "spec.clusterIPs", [wanted],
                           f"failed to allocate IP {wanted}: the provided network does not match the current range")
            if wanted in used:
                raise _bad("Invalid value", "spec.clusterIPs", [wanted],
                           f"failed to allocate IP {wanted}: provided IP is already allocated")
            return
        hosts = self.cidr.num_addresses - 2
        offset = min(max(16, self.cidr.num_addresses // 16), 256) if self.cidr.num_addresses > 16 else 0
        bands = [range(offset, hosts), range(0, offset)]  # dynamic picks prefer the upper band
        for band in bands:
            free = [i for i in band if str(self.cidr.network_address + 1 + i) not in used]
            if free:
                ip = str(self.cidr.network_address + 1 + self.rng.choice(free))
                spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
                return
        raise ValidationError("spec.clusterIPs", "Internal error: failed to allocate a serviceIP: range is full")

    def _node_ports(self, spec: JSON, others: list[Mapping[str, Any]]) -> None:
        used = _used_node_ports(others)
        for i, port in enumerate(spec.get("ports") or ()):
            if not isinstance(port, dict):
                continue
            wanted = port.get("nodePort")
            if wanted:
                if wanted not in self.node_ports:
                    raise meta.invalid(f"spec.ports[{i}].nodePort", wanted, f"provided port is not in the valid range. "
                                       f"The range of valid ports is {self.node_ports.start}-"
                                       f"{self.node_ports.stop - 1}")
                if wanted in used:
                    raise meta.invalid(f"spec.ports[{i}].nodePort", wanted, "provided port is already allocated")
            else:
                port["nodePort"] = self._free_port(used)
            used.add(port["nodePort"])

    def _free_port(self, used: set[int]) -> int:
        free = [p for p in self.node_ports if p not in used]
        if not free:
            raise ValidationError("spec.ports", "Internal error: range is full")
        return self.rng.choice(free)


def _used_node_ports(specs: list[Mapping[str, Any]]) -> set[int]:
    out = {int(p["nodePort"]) for s in specs for p in s.get("ports") or () if isinstance(p, dict) and p.get("nodePort")}
    out |= {int(s["healthCheckNodePort"]) for s in specs if s.get("healthCheckNodePort")}
    return out


def hooks(allocator: Allocator | None = None) -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    alloc = allocator or Allocator()
    return {"Service": {"default": default_service, "validate": validate_service,
                        "validate_update": validate_service_update, "admit": alloc.admit}}
