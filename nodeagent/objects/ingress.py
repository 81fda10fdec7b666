"""Defaulting and validation of networking.k8s.io/v1 Ingress, IngressClass and NetworkPolicy:
pkg/apis/networking/v1 defaults.go and pkg/apis/networking/validation (ValidateIngressCreate,
ValidateIngressUpdate, ValidateIngressStatusUpdate, ValidateIngressClass(Update),
ValidateNetworkPolicy(Update)) with their field paths and wording, as store hooks so every writer
is checked.

Why: Helm charts very often hold an Ingress or a NetworkPolicy; kube-apiserver stores them for an
ingress controller or a network plugin, and a chart the real kube-apiserver refuses must be refused
here with the same text (and one it takes, taken with the same defaults). Every error of an object is
listed, as upstream's field.ErrorList (objects/common.Errors). The checks upstream relaxes for an
object stored before a check existed (an old Ingress's invalid TLS secret name or wildcard host rule,
an old NetworkPolicy's invalid CIDRs or pod selector) are relaxed the same way on its update.
RelaxedServiceNameValidation is GA in 1.37 (locked on): a backend's Service name is a DNS label.
StrictIPCIDRValidation is on by default: CIDRs and IPs are parsed strictly. Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects import storage
from nodeagent.objects.common import Errors
from nodeagent.objects.service import port_name_errors
from nodeagent.store import validation as meta

JSON = dict[str, Any]
IMMUTABLE = "field is immutable"
PORT_RANGE = "must be between 1 and 65535, inclusive"
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
CONTROLLER_MAX = 250
CIDR_MSG = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
PROTOCOLS = ("TCP", "UDP", "SCTP")
SCOPES = ("Cluster", "Namespace")
_WILDCARD = r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_WILDCARD_RE = re.compile(f"^{_WILDCARD}$")
WILDCARD_MSG = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must "
                "consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character "
                f"(e.g. '*.example.com', regex used for validation is '{_WILDCARD}')")
_HTTP_PATH = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE = re.compile(f"^{_HTTP_PATH}$")
INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
INVALID_PATH_SUFFIXES = ("/..", "/.")


def _go(value: Any) -> str:
    """A non-scalar Invalid value as field.Error prints it: compact JSON."""
    return json.dumps(value, separators=(",", ":"))


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _run(errs: Errors, check: Any, path: str, value: str) -> None:
    """A check of store/validation.py (raises its first error) into the list."""
    errs.check(check, path, value)


def _is_ip(value: str) -> bool:
    """netutils.ParseIPSloppy accepts it (IPv4 octets with leading zeros too)."""
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        parts = value.split(".")
        return len(parts) == 4 and all(p.isdigit() and int(p) < 256 for p in parts)


def _dns_subdomain(errs: Errors, path: str, value: str) -> None:
    _run(errs, meta.check_dns_subdomain, path, value)


def _wildcard(errs: Errors, path: str, value: str) -> None:
    """IsWildcardDNS1123Subdomain: the length and the pattern, each reported."""
    if len(value) > meta.DNS1123_SUBDOMAIN_MAX:
        errs.append(meta.too_long(path, value, meta.DNS1123_SUBDOMAIN_MAX))
    if not _WILDCARD_RE.match(value):
        errs.append(meta.invalid(path, value, WILDCARD_MSG))


def _host(errs: Errors, path: str, host: str) -> bool:
    """A rule's or a TLS entry's host: a wildcard or plain DNS subdomain; True when a wildcard."""
    if "*" in host:
        _wildcard(errs, path, host)
        return True
    _dns_subdomain(errs, path, host)
    return False


def _port_num(errs: Errors, path: str, value: Any) -> None:
    if not isinstance(value, int) or not 1 <= value <= 65535:
        errs.append(meta.invalid(path, value, PORT_RANGE))


def _port_name(errs: Errors, path: str, name: str) -> None:
    for msg in port_name_errors(name):
        errs.append(meta.invalid(path, name, msg))


# --- Ingress ------------------------------------------------------------------------------------


class _IngressOptions:
    """IngressValidationOptions: what an update keeps allowing because the stored object has it."""

    def __init__(self, old: JSON | None = None) -> None:
        spec = _obj((old or {}).get("spec"))
        self.invalid_secret_name = any(_secret_name_errors(_str(_obj(t).get("secretName")))
                                       for t in _list(spec.get("tls")))
        self.invalid_wildcard_rule = False
        for rule in _list(spec.get("rules")):
            if "*" in _str(_obj(rule).get("host")):
                probe = Errors()
                _rule_value(probe, "", _obj(rule), self)
                self.invalid_wildcard_rule = self.invalid_wildcard_rule or bool(probe)


def _secret_name_errors(name: str) -> Errors:
    errs = Errors()
    if name:
        _dns_subdomain(errs, "", name)
    return errs


def _backend(errs: Errors, path: str, backend: Mapping[str, Any]) -> None:
    """validateIngressBackend: exactly one of a Service (name and port by name or number) or a resource."""
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        errs.append(meta.invalid(path, "", "cannot set both resource and service backends"))
        return
    if resource is not None:
        _typed_ref(errs, f"{path}.resource", _obj(resource))
        return
    if service is None:
        errs.append(meta.invalid(path, "", "resource or service backend is required"))
        return
    service = _obj(service)
    name = _str(service.get("name"))
    if not name:
        errs.append(meta.required(f"{path}.service.name"))
    else:
        _run(errs, meta.check_dns_label, f"{path}.service.name", name)
    port = _obj(service.get("port"))
    port_name, number = _str(port.get("name")), port.get("number") or 0
    if port_name and number:
        errs.append(meta.invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        _port_name(errs, f"{path}.service.port.name", port_name)
    elif number:
        _port_num(errs, f"{path}.service.port.number", number)
    else:
        errs.append(meta.required(path, "port name or number is required"))


def _ref_name(errs: Errors, path: str, value: str) -> None:
    """A required content.IsPathSegmentName field."""
    if not value:
        errs.append(meta.required(path))
    else:
        _run(errs, meta.check_path_segment, path, value)


def _typed_ref(errs: Errors, path: str, ref: Mapping[str, Any]) -> None:
    """validateIngressTypedLocalObjectReference."""
    if ref.get("apiGroup") is not None:
        _dns_subdomain(errs, f"{path}.apiGroup", _str(ref.get("apiGroup")))
    _ref_name(errs, f"{path}.kind", _str(ref.get("kind")))
    _ref_name(errs, f"{path}.name", _str(ref.get("name")))


def _http_path(errs: Errors, path: str, item: Mapping[str, Any]) -> None:
    """validateHTTPIngressPath."""
    path_type = item.get("pathType")
    if path_type is None:
        errs.append(meta.required(f"{path}.pathType", "pathType must be specified"))
        return
    value = _str(item.get("path"))
    if path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(meta.invalid(f"{path}.path", value, "must be an absolute path"))
        for seq in INVALID_PATH_SEQUENCES:
            if seq in value:
                errs.append(meta.invalid(f"{path}.path", value, f"must not contain '{seq}'"))
        for suffix in INVALID_PATH_SUFFIXES:
            if value.endswith(suffix):
                errs.append(meta.invalid(f"{path}.path", value, f"cannot end with '{suffix}'"))
    elif path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(meta.invalid(f"{path}.path", value, "must be an absolute path"))
    else:
        errs.append(meta.not_supported(f"{path}.pathType", path_type, PATH_TYPES))
    _backend(errs, f"{path}.backend", _obj(item.get("backend")))


def _rule_value(errs: Errors, path: str, rule: Mapping[str, Any], opts: _IngressOptions) -> None:
    """validateIngressRuleValue: the HTTP paths, at least one."""
    http = rule.get("http")
    if http is None:
        return
    paths = _list(_obj(http).get("paths"))
    if not paths:
        errs.append(meta.required(f"{path}.http.paths"))
    for i, item in enumerate(paths):
        _http_path(errs, f"{path}.http.paths[{i}]", _obj(item))


def _ingress_spec(errs: Errors, spec: Mapping[str, Any], opts: _IngressOptions) -> None:
    """ValidateIngressSpec."""
    rules, default = _list(spec.get("rules")), spec.get("defaultBackend")
    if not rules and default is None:
        errs.append(ValidationError("spec", f"Invalid value: {_go(spec.get('rules'))}: either `defaultBackend` "
                                            "or `rules` must be specified"))
    if default is not None:
        _backend(errs, "spec.defaultBackend", _obj(default))
    for i, raw in enumerate(rules):
        rule, path = _obj(raw), f"spec.rules[{i}]"
        wildcard = False
        host = _str(rule.get("host"))
        if host:
            if _is_ip(host):
                errs.append(meta.invalid(f"{path}.host", host, "must be a DNS name, not an IP address"))
            wildcard = _host(errs, f"{path}.host", host)
        if not wildcard or not opts.invalid_wildcard_rule:
            _rule_value(errs, path, rule, opts)
    for t, raw in enumerate(_list(spec.get("tls"))):
        tls = _obj(raw)
        for i, host in enumerate(_list(tls.get("hosts"))):
            _host(errs, f"spec.tls[{t}].hosts[{i}]", _str(host))
        if not opts.invalid_secret_name:
            name = _str(tls.get("secretName"))
            for err in _secret_name_errors(name):
                errs.append(ValidationError(f"spec.tls[{t}].secretName", err.detail))
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        _dns_subdomain(errs, "spec.ingressClassName", _str(class_name))


def validate_ingress(obj: JSON) -> JSON:
    """ValidateIngressCreate: the spec, and the legacy class annotation must agree with ingressClassName."""
    errs = Errors()
    spec = _obj(obj.get("spec"))
    _ingress_spec(errs, spec, _IngressOptions())
    annotations = _obj(_obj(obj.get("metadata")).get("annotations"))
    class_name = spec.get("ingressClassName")
    if INGRESS_CLASS_ANNOTATION in annotations and class_name is not None \
            and annotations[INGRESS_CLASS_ANNOTATION] != class_name:
        errs.append(meta.invalid(f"annotations.{INGRESS_CLASS_ANNOTATION}", annotations[INGRESS_CLASS_ANNOTATION],
                                 "must match `ingressClassName` when both are specified"))
    errs.raise_all()
    return obj


def validate_ingress_update(new: JSON, old: JSON) -> JSON:
    """ValidateIngressUpdate: the spec, with what the stored object already has allowed; and
    ValidateIngressStatusUpdate when the status changes (the API server's /status write reaches the
    store as an update of the whole object, the spec the stored one)."""
    errs = Errors()
    _ingress_spec(errs, _obj(new.get("spec")), _IngressOptions(old))
    if new.get("status") != old.get("status"):
        errs.check(validate_ingress_status, new, old)
    errs.raise_all()
    return new


def validate_ingress_status(new: JSON, old: JSON) -> JSON:
    """ValidateIngressStatusUpdate: each load-balancer point's IP (an IP the stored status has is kept
    as it is) and hostname (a DNS subdomain, not an IP)."""
    errs = Errors()
    kept = [_str(_obj(p).get("ip")) for p in _list(_obj(_obj(old.get("status")).get("loadBalancer")).get("ingress"))]
    points = _list(_obj(_obj(new.get("status")).get("loadBalancer")).get("ingress"))
    for i, raw in enumerate(points):
        point, path = _obj(raw), f"status.loadBalancer.ingress[{i}]"
        ip, hostname = _str(point.get("ip")), _str(point.get("hostname"))
        if ip and ip not in kept:
            _legacy_ip(errs, f"{path}.ip", ip)
        if hostname:
            _dns_subdomain(errs, f"{path}.hostname", hostname)
            if _is_ip(hostname):
                errs.append(meta.invalid(f"{path}.hostname", hostname, "must be a DNS name, not an IP address"))
    errs.raise_all()
    return new


def _legacy_ip(errs: Errors, path: str, value: str) -> None:
    """IsValidIPForLegacyField (strict): parseable, no leading 0s, not IPv4-mapped; any form."""
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        if _is_ip(value):
            errs.append(meta.invalid(path, value, "must not have leading 0s"))
        else:
            errs.append(meta.invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
        return
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        errs.append(meta.invalid(path, value, "must not be an IPv4-mapped IPv6 address"))


def default_ingress_class_name(obj: JSON, reader: Any) -> None:
    """The DefaultIngressClass admission plugin (on by default): a new Ingress that names no class
    (neither ingressClassName nor the kubernetes.io/ingress.class annotation) gets the default
    IngressClass's name (annotated ingressclass.kubernetes.io/is-default-class: "true"; of several, the
    newest, then the first by name). Run on create only, as upstream's plugin; here after validation,
    which the name it sets (an existing IngressClass's) always passes."""
    spec = obj.get("spec")
    annotations = _obj(_obj(obj.get("metadata")).get("annotations"))
    if not isinstance(spec, dict) or spec.get("ingressClassName") is not None \
            or INGRESS_CLASS_ANNOTATION in annotations:
        return
    defaults = [c for c in reader.list("IngressClass")
                if _obj(c["metadata"].get("annotations")).get(DEFAULT_CLASS_ANNOTATION) == "true"]
    if defaults:
        defaults.sort(key=lambda c: str(c["metadata"].get("name")))
        newest = max(defaults, key=lambda c: str(c["metadata"].get("creationTimestamp") or ""))
        spec["ingressClassName"] = newest["metadata"]["name"]


# --- IngressClass -------------------------------------------------------------------------------


def default_ingress_class(obj: JSON) -> JSON:
    """SetDefaults_IngressClass: parameters without a scope are cluster-scoped."""
    params = _obj(obj.get("spec")).get("parameters")
    if isinstance(params, dict) and params.get("scope") is None:
        params["scope"] = "Cluster"
    return obj


def _ingress_class_spec(errs: Errors, spec: Mapping[str, Any]) -> None:
    """validateIngressClassSpec: a domain-prefixed controller of at most 250 characters, the parameters."""
    controller = _str(spec.get("controller"))
    path = "spec.controller"
    if len(controller) > CONTROLLER_MAX:
        errs.append(ValidationError(path, f"Too long: may not be more than {CONTROLLER_MAX} bytes"))
    if not controller:
        errs.append(meta.required(path))
    else:
        host, slash, rest = controller.partition("/")
        if not slash or not host or not rest:
            errs.append(meta.invalid(path, controller, 'must be a domain-prefixed path (such as "acme.io/foo")'))
        else:
            _dns_subdomain(errs, path, host)
            if not _HTTP_PATH_RE.match(rest):
                errs.append(meta.invalid(path, rest, f"Invalid path (regex used for validation is '{_HTTP_PATH}')"))
    params = spec.get("parameters")
    if params is None:
        return
    params, ppath = _obj(params), "spec.parameters"
    if params.get("apiGroup") is not None:
        _dns_subdomain(errs, f"{ppath}.apiGroup", _str(params.get("apiGroup")))
    _ref_name(errs, f"{ppath}.kind", _str(params.get("kind")))
    _ref_name(errs, f"{ppath}.name", _str(params.get("name")))
    scope = params.get("scope")
    if scope is None:
        errs.append(meta.required(f"{ppath}.scope"))
        return
    if scope not in SCOPES:
        errs.append(meta.not_supported(f"{ppath}.scope", scope, SCOPES))
    elif scope == "Namespace":
        namespace = params.get("namespace")
        if namespace is None:
            errs.append(meta.required(f"{ppath}.namespace", "`parameters.scope` is set to 'Namespace'"))
        else:
            _run(errs, meta.check_dns_label, f"{ppath}.namespace", _str(namespace))
    elif params.get("namespace") is not None:
        errs.append(meta.forbidden(f"{ppath}.namespace", "`parameters.scope` is set to 'Cluster'"))


def validate_ingress_class(obj: JSON) -> JSON:
    """ValidateIngressClass, after SetDefaults_IngressClass."""
    default_ingress_class(obj)
    errs = Errors()
    _ingress_class_spec(errs, _obj(obj.get("spec")))
    errs.raise_all()
    return obj


def validate_ingress_class_update(new: JSON, old: JSON) -> JSON:
    """ValidateIngressClassUpdate: the controller is immutable, then the whole object's checks."""
    default_ingress_class(new)
    errs = Errors()
    was, now = _obj(old.get("spec")).get("controller"), _obj(new.get("spec")).get("controller")
    if (was or "") != (now or ""):
        errs.append(meta.invalid("spec.controller", _str(now), IMMUTABLE))
    _ingress_class_spec(errs, _obj(new.get("spec")))
    errs.raise_all()
    return new


# --- NetworkPolicy ------------------------------------------------------------------------------


def default_network_policy(obj: JSON) -> JSON:
    """SetDefaults_NetworkPolicy and SetDefaults_NetworkPolicyPort: policyTypes Ingress (and Egress
    when there are egress rules) when none is given, each port's protocol TCP."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {} if spec is None else spec
        if not isinstance(spec, dict):
            return obj
    if not isinstance(spec.get("podSelector"), dict):
        spec.setdefault("podSelector", {})
    for direction in ("ingress", "egress"):
        for rule in _list(spec.get(direction)):
            for port in _list(_obj(rule).get("ports")):
                if isinstance(port, dict) and port.get("protocol") is None:
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if _list(spec.get("egress")) else ["Ingress"]
    return obj


def _np_port(errs: Errors, path: str, port: Mapping[str, Any]) -> None:
    """ValidateNetworkPolicyPort."""
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        errs.append(meta.not_supported(f"{path}.protocol", protocol, PROTOCOLS, ordered=True))
    number, end = port.get("port"), port.get("endPort")
    if number is None:
        if end is not None:
            errs.append(meta.invalid(f"{path}.endPort", end, "may not be specified when `port` is not specified"))
    elif isinstance(number, int):
        _port_num(errs, f"{path}.port", number)
        if end is not None:
            if isinstance(end, int) and end < number:
                errs.append(meta.invalid(f"{path}.endPort", end, "must be greater than or equal to `port`"))
            _port_num(errs, f"{path}.endPort", end)
    else:
        if end is not None:
            errs.append(meta.invalid(f"{path}.endPort", end, "may not be specified when `port` is non-numeric"))
        _port_name(errs, f"{path}.port", _str(number))


def _legacy_cidr(errs: Errors, path: str, value: str, kept: Sequence[str]) -> ipaddress.IPv4Network | \
        ipaddress.IPv6Network | None:
    """IsValidCIDRForLegacyField (strict; a value the stored object has passes), and the network as
    netutils.ParseCIDRSloppy reads it (None when it cannot)."""
    addr, slash, prefix = value.partition("/")
    try:
        if not slash or not prefix.isdigit():
            raise ValueError(value)
        net = ipaddress.ip_network(f"{ipaddress.ip_address(addr)}/{int(prefix)}", strict=False)
    except ValueError:
        parts = addr.split(".")
        sloppy = slash and prefix.isdigit() and len(parts) == 4 and \
            all(p.isdigit() and int(p) < 256 for p in parts) and int(prefix) <= 32
        if not sloppy:
            if value not in kept:
                errs.append(meta.invalid(path, value, CIDR_MSG))
            return None
        net = ipaddress.ip_network(f"{'.'.join(str(int(p)) for p in parts)}/{int(prefix)}", strict=False)
        if value not in kept:
            errs.append(meta.invalid(path, value, "must not have leading 0s in IP or prefix length"))
        return net
    if value in kept:
        return net
    ip = ipaddress.ip_address(addr)
    if prefix != str(int(prefix)):
        errs.append(meta.invalid(path, value, "must not have leading 0s in IP or prefix length"))
    elif isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        errs.append(meta.invalid(path, value, "must not have an IPv4-mapped IPv6 address"))
    elif net.network_address != ip:
        errs.append(meta.invalid(path, value, "must not have bits set beyond the prefix length"))
    return net


def _ip_block(errs: Errors, path: str, block: Mapping[str, Any], kept: Sequence[str]) -> None:
    """ValidateIPBlock: the CIDR, and each exception a strict subset of it."""
    cidr = _str(block.get("cidr"))
    if not cidr:
        errs.append(meta.required(f"{path}.cidr"))
        return
    net = _legacy_cidr(errs, f"{path}.cidr", cidr, kept)
    if net is None:
        return
    for i, raw in enumerate(_list(block.get("except"))):
        epath, text = f"{path}.except[{i}]", _str(raw)
        other = _legacy_cidr(errs, epath, text, kept)
        if other is None:
            continue
        inside = other.version == net.version and other.network_address in net
        if not inside or net.prefixlen >= other.prefixlen:
            errs.append(meta.invalid(epath, text, "must be a strict subset of `cidr`"))


def _selector(errs: Errors, path: str, raw: Any, lax_values: bool) -> None:
    """ValidateLabelSelector; `lax_values` (AllowInvalidLabelValueInSelector) lets a stored policy
    keep values that are not label values."""
    if lax_values:
        return
    errs.check(storage.check_label_selector, path, raw or {})


def _peer(errs: Errors, path: str, peer: Mapping[str, Any], kept: Sequence[str], lax: bool) -> None:
    """ValidateNetworkPolicyPeer: at least one peer, an ipBlock alone."""
    count = 0
    for key in ("podSelector", "namespaceSelector"):
        if peer.get(key) is not None:
            count += 1
            _selector(errs, f"{path}.{key}", peer[key], lax)
    if peer.get("ipBlock") is not None:
        count += 1
        _ip_block(errs, f"{path}.ipBlock", _obj(peer["ipBlock"]), kept)
    if count == 0:
        errs.append(meta.required(path, "must specify a peer"))
    elif count > 1 and peer.get("ipBlock") is not None:
        errs.append(meta.forbidden(path, "may not specify both ipBlock and another peer"))


def _np_spec(errs: Errors, spec: Mapping[str, Any], kept: Sequence[str], lax: bool) -> None:
    """ValidateNetworkPolicySpec."""
    _selector(errs, "spec.podSelector", spec.get("podSelector"), lax)
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, raw in enumerate(_list(spec.get(direction))):
            rule, path = _obj(raw), f"spec.{direction}[{i}]"
            for j, port in enumerate(_list(rule.get("ports"))):
                _np_port(errs, f"{path}.ports[{j}]", _obj(port))
            for j, peer in enumerate(_list(rule.get(peers))):
                _peer(errs, f"{path}.{peers}[{j}]", _obj(peer), kept, lax)
    types = _list(spec.get("policyTypes"))
    if len(types) > 2:
        errs.append(ValidationError("spec.policyTypes",
                                    f"Invalid value: {_go(types)}: may not specify more than two policyTypes"))
        return
    for i, value in enumerate(types):
        if value not in ("Ingress", "Egress"):
            errs.append(meta.not_supported(f"spec.policyTypes[{i}]", value, ("Ingress", "Egress"), ordered=True))


def validate_network_policy(obj: JSON) -> JSON:
    """ValidateNetworkPolicy, after the defaults."""
    default_network_policy(obj)
    errs = Errors()
    _np_spec(errs, _obj(obj.get("spec")), (), False)
    errs.raise_all()
    return obj


def _kept_cidrs(old: JSON) -> list[str]:
    """The stored policy's CIDRs (ipBlock cidr and except): an update may keep them as they are."""
    spec, out = _obj(old.get("spec")), []
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for rule in _list(spec.get(direction)):
            for peer in _list(_obj(rule).get(peers)):
                block = _obj(peer).get("ipBlock")
                if isinstance(block, Mapping):
                    out.append(_str(block.get("cidr")))
                    out.extend(_str(c) for c in _list(block.get("except")))
    return out


def validate_network_policy_update(new: JSON, old: JSON) -> JSON:
    """ValidateNetworkPolicyUpdate: the spec, with the stored policy's CIDRs allowed as they are and, when
    the stored pod selector is invalid (ValidationOptionsForNetworking), selectors' values unchecked."""
    default_network_policy(new)
    probe = Errors()
    _selector(probe, "", _obj(old.get("spec")).get("podSelector"), False)
    errs = Errors()
    _np_spec(errs, _obj(new.get("spec")), _kept_cidrs(old), bool(probe))
    errs.raise_all()
    return new


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks: `default` defaults and checks a
    create, `default_update` an update (upstream's create and update checks differ), `default_status`
    a store-level status-only write of an Ingress."""
    return {
        "Ingress": {"default": validate_ingress, "default_update": validate_ingress_update,
                    "default_status": validate_ingress_status, "admit": default_ingress_class_name},
        "IngressClass": {"default": validate_ingress_class, "default_update": validate_ingress_class_update},
        "NetworkPolicy": {"default": validate_network_policy, "default_update": validate_network_policy_update},
    }
