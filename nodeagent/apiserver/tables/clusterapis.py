"""Server-side printers of the kinds kube-controller-manager's controllers list beyond the workload and
storage ones: autoscaling HorizontalPodAutoscaler, admissionregistration.k8s.io ValidatingAdmissionPolicy
and its binding, certificates.k8s.io CertificateSigningRequest and PodCertificateRequest,
networking.k8s.io ServiceCIDR, IPAddress, Ingress, IngressClass and NetworkPolicy, storagemigration.k8s.io
StorageVersionMigration, node.k8s.io RuntimeClass.

Columns, cells and descriptions follow k8s.io/kubernetes pkg/printers/internalversion (printHorizontal-
PodAutoscaler with formatHPAMetrics, printValidatingAdmissionPolicy(Binding), printCertificateSigning-
Request with extractCSRStatus, printPodCertificateRequest, printServiceCIDR, printIPAddress,
printIngress, printIngressClass, printNetworkPolicy, printStorageVersionMigration,
printRuntimeClass), fed the object as
stored (the storage version's shape). Quantities are printed as stored (upstream prints the canonical
form; nodeagent stores what the client wrote).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.apiserver.tables.common import (
    AGE_COLUMN,
    NAME_COLUMN,
    NAME_DOC,
    Cells,
    Printer,
    age,
    column,
    get,
    items,
    name_of,
    text,
)
from nodeagent.util.timefmt import human_duration

_HPA_COLUMNS = (
    NAME_COLUMN,
    column("Reference", "scaleTargetRef points to the target resource to scale, and is used to the pods for which "
           "metrics should be collected, as well as to actually change the replica count."),
    column("Targets", "metrics contains the specifications for which to use to calculate the desired replica count "
           "(the maximum replica count across all metrics will be used).  The desired replica count is calculated "
           "multiplying the ratio between the target value and the current value by the current number of pods.  "
           "Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual "
           "metric source types for more information about how each type of metric must respond. If not set, the "
           "default metric will be set to 80% average CPU utilization."),
    column("MinPods", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale "
           "down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is "
           "enabled and at least one Object or External metric is configured.  Scaling is active as long as at least "
           "one metric value is available."),
    column("MaxPods", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale "
           "up. It cannot be less that minReplicas."),
    column("Replicas", "currentReplicas is current number of replicas of pods managed by this autoscaler, as last "
           "seen by the autoscaler."),
    AGE_COLUMN,
)

_UNKNOWN = "<unknown>"


def _current(statuses: Sequence[Any], i: int, member: str, key: str) -> str:
    """statuses[i].<member>.current.<key> as printed, "<unknown>" when any step is missing."""
    if i >= len(statuses):
        return _UNKNOWN
    value = get(statuses[i], member, "current", key)
    return _UNKNOWN if value is None else str(value)


def _hpa_metric(spec: Mapping[str, Any], statuses: Sequence[Any], i: int) -> str:
    kind = spec.get("type")
    if kind in ("External", "Object"):
        member = "external" if kind == "External" else "object"
        target = get(spec, member, "target") or {}
        if target.get("averageValue") is not None:
            return f"{_current(statuses, i, member, 'averageValue')}/{target['averageValue']} (avg)"
        return f"{_current(statuses, i, member, 'value')}/{target.get('value', '0')}"
    if kind == "Pods":
        return f"{_current(statuses, i, 'pods', 'averageValue')}/{get(spec, 'pods', 'target', 'averageValue') or '0'}"
    if kind in ("Resource", "ContainerResource"):
        member = "resource" if kind == "Resource" else "containerResource"
        name = text(spec, member, "name")
        target = get(spec, member, "target") or {}
        if target.get("averageValue") is not None:
            return f"{name}: {_current(statuses, i, member, 'averageValue')}/{target['averageValue']}"
        util = _current(statuses, i, member, "averageUtilization")
        current = util if util == _UNKNOWN else f"{util}%"
        wanted = target.get("averageUtilization")
        return f"{name}: {current}/{'<auto>' if wanted is None else f'{wanted}%'}"
    return "<unknown type>"


def format_hpa_metrics(specs: Sequence[Any], statuses: Sequence[Any]) -> str:
    """formatHPAMetrics: each metric's current/target, at most two, then "+ N more..."."""
    if not specs:
        return "<none>"
    shown = [_hpa_metric(spec, statuses, i) for i, spec in enumerate(specs)]
    out = ", ".join(shown[:2])
    return f"{out} + {len(shown) - 2} more..." if len(shown) > 2 else out


def _hpa_cells(o: Mapping[str, Any], now: float) -> Cells:
    ref = get(o, "spec", "scaleTargetRef") or {}
    low = get(o, "spec", "minReplicas")
    return [name_of(o), f"{ref.get('kind', '')}/{ref.get('name', '')}",
            format_hpa_metrics(items(o, "spec", "metrics"), items(o, "status", "currentMetrics")),
            "<unset>" if low is None else str(low), int(get(o, "spec", "maxReplicas") or 0),
            int(get(o, "status", "currentReplicas") or 0), age(o, now)]


_VAP_COLUMNS = (
    NAME_COLUMN,
    column("Validations", "Validations indicates the number of validation rules defined in this configuration",
           type_="integer"),
    column("ParamKind", "ParamKind specifies the kind of resources used to parameterize this policy"),
    AGE_COLUMN,
)


def _vap_cells(o: Mapping[str, Any], now: float) -> Cells:
    param = get(o, "spec", "paramKind")
    kind = "<unset>" if param is None else f"{param.get('apiVersion', '')}/{param.get('kind', '')}"
    return [name_of(o), len(items(o, "spec", "validations")), kind, age(o, now)]


_VAPB_COLUMNS = (
    NAME_COLUMN,
    column("PolicyName", "PolicyName indicates the policy definition which the policy binding binded to"),
    column("ParamRef", "ParamRef indicates the param resource which sets the configuration param"),
    AGE_COLUMN,
)


def selector_string(selector: Mapping[str, Any]) -> str:
    """metav1.LabelSelector as labels.Selector.String() prints it: requirements sorted by key, joined by ","."""
    reqs: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr.get("key", ""), expr.get("operator", ""), sorted(expr.get("values") or ())
        if op == "Exists":
            reqs.append((key, key))
        elif op == "DoesNotExist":
            reqs.append((key, f"!{key}"))
        else:
            reqs.append((key, f"{key} {op.lower()} ({','.join(values)})"))
    return ",".join(r for _, r in sorted(reqs, key=lambda r: r[0]))


def _vapb_cells(o: Mapping[str, Any], now: float) -> Cells:
    param = get(o, "spec", "paramRef")
    shown = "<unset>"
    if param is not None:
        if param.get("name"):
            # upstream: no namespace may be a cluster-scoped parameter, so "*"
            shown = f"{param.get('namespace') or '*'}/{param['name']}"
        elif param.get("selector") is not None:
            shown = selector_string(param["selector"])
    return [name_of(o), text(o, "spec", "policyName"), shown, age(o, now)]


_CSR_COLUMNS = (
    NAME_COLUMN,
    AGE_COLUMN,
    column("SignerName", "Requested signer for the request. It is a qualified name in the form: "
           "`scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, "
           "it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving "
           "certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned "
           "\"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can "
           "select on this field using `spec.signerName`."),
    column("Requestor", "Base64-encoded PKCS#10 CSR data"),
    column("RequestedDuration", "expirationSeconds is the requested duration of validity of the issued certificate. "
           "The certificate signer may issue a certificate with a different validity duration so a client must check "
           "the delta between the notBefore and and notAfter fields in the issued certificate to determine the "
           "actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor "
           "this field as long as the requested duration is not greater than the maximum duration they will honor "
           "per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers "
           "may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as "
           "the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than "
           "the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\n"
           "The minimum valid value for expirationSeconds is 600, i.e. 10 minutes."),
    column("Condition", "Conditions applied to the request, such as approval or denial."),
)


def csr_condition(o: Mapping[str, Any]) -> str:
    """extractCSRStatus: Denied over Approved over Pending, then ",Failed" and ",Issued"."""
    kinds = {c.get("type") for c in items(o, "status", "conditions")}
    out = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        out += ",Failed"
    if get(o, "status", "certificate"):
        out += ",Issued"
    return out


def _csr_cells(o: Mapping[str, Any], now: float) -> Cells:
    seconds = get(o, "spec", "expirationSeconds")
    return [name_of(o), age(o, now), text(o, "spec", "signerName") or "<none>", text(o, "spec", "username"),
            "<none>" if seconds is None else human_duration(float(seconds)), csr_condition(o)]


_PCR_COLUMNS = (
    NAME_COLUMN,
    column("PodName", "podName is the name of the pod into which the certificate will be mounted."),
    column("ServiceAccountName", "serviceAccountName is the name of the service account the pod is running as."),
    column("NodeName", "nodeName is the name of the node the pod is assigned to."),
    column("SignerName", "signerName indicates the requested signer.\n\nAll signer names beginning with "
           "`kubernetes.io` are reserved for use by the Kubernetes project.  There is currently one well-known signer "
           "documented by the Kubernetes project, `kubernetes.io/kube-apiserver-client-pod`, which will issue client "
           "certificates understood by kube-apiserver.  It is currently unimplemented."),
    column("State", "Is the request Pending, Issued, Denied, or Failed?"),
)
# upstream also declares an UnverifiedUserAnnotations column (priority 0) yet fills its cell only for
# -o wide, so a default table's rows are one cell short; server-side tables here have no wide option,
# so the column is left out and every row is as long as the header


def _pcr_cells(o: Mapping[str, Any], now: float) -> Cells:
    state = "Pending"
    for cond in items(o, "status", "conditions"):
        if cond.get("type") in ("Issued", "Denied", "Failed"):
            state = str(cond["type"])
    return [name_of(o), text(o, "spec", "podName"), text(o, "spec", "serviceAccountName"),
            text(o, "spec", "nodeName"), text(o, "spec", "signerName"), state]


_SERVICE_CIDR_COLUMNS = (
    NAME_COLUMN,
    column("CIDRs", "cidrs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from "
           "which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is "
           "immutable."),
    AGE_COLUMN,
)


def _service_cidr_cells(o: Mapping[str, Any], now: float) -> Cells:
    return [name_of(o), ",".join(str(c) for c in items(o, "spec", "cidrs")), age(o, now)]


_IP_ADDRESS_COLUMNS = (
    NAME_COLUMN,
    column("ParentRef", "parentRef references the resource that an IPAddress is attached to. An IPAddress must "
           "reference a parent object."),
)


def _group_resource(group: str, resource: str) -> str:
    """schema.GroupResource.String(): `resource.group`, the bare resource for the core group."""
    return f"{resource}.{group}" if group else resource


def _ip_address_cells(o: Mapping[str, Any], now: float) -> Cells:
    parent = get(o, "spec", "parentRef")
    shown = "<none>"
    if parent is not None:
        shown = _group_resource(str(parent.get("group") or ""), str(parent.get("resource") or "")).lower()
        if parent.get("namespace"):
            shown += "/" + str(parent["namespace"])
        shown += "/" + str(parent.get("name") or "")
    # upstream appends the age too, beyond its two columns
    return [name_of(o), shown, age(o, now)]


_SVM_COLUMNS = (
    column("Name", NAME_DOC),
    column("Resource", "GroupResource to migrate"),
    column("Status", "Status of the migration"),
)


def _svm_cells(o: Mapping[str, Any], now: float) -> Cells:
    state = "Unknown"
    for cond in items(o, "status", "conditions"):
        if cond.get("status") == "True" and cond.get("type") in ("Running", "Failed", "Succeeded"):
            state = str(cond["type"])
    resource = get(o, "spec", "resource") or {}
    return [name_of(o), _group_resource(str(resource.get("group") or ""), str(resource.get("resource") or "")),
            state]


_INGRESS_COLUMNS = (
    NAME_COLUMN,
    column("Class", "The name of the IngressClass resource that should be used for additional configuration"),
    column("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
    column("Address", "Address is a list containing ingress points for the load-balancer"),
    column("Ports", "Ports of TLS configurations that open"),
    AGE_COLUMN,
)


def _ingress_hosts(rules: Sequence[Any]) -> str:
    """formatHosts: the first three hosts the rules name, `*` when none does; a rule after the third
    host adds how many rules there are beyond three."""
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
            break
        if isinstance(rule, Mapping) and rule.get("host"):
            hosts.append(str(rule["host"]))
    if not hosts:
        return "*"
    shown = ",".join(hosts)
    return f"{shown} + {len(rules) - 3} more..." if more else shown


def _ingress_address(o: Mapping[str, Any]) -> str:
    """ingressLoadBalancerStatusStringer: each point's IP, else its hostname, sorted and unique; never
    clipped, as the API server's table convertor prints wide (pkg/printers/storage)."""
    seen = {str(p.get("ip") or p.get("hostname")) for p in items(o, "status", "loadBalancer", "ingress")
            if isinstance(p, Mapping) and (p.get("ip") or p.get("hostname"))}
    return ",".join(sorted(seen))


def _ingress_cells(o: Mapping[str, Any], now: float) -> Cells:
    class_name = get(o, "spec", "ingressClassName")
    ports = "80, 443" if items(o, "spec", "tls") else "80"
    return [name_of(o), "<none>" if class_name is None else str(class_name), _ingress_hosts(items(o, "spec", "rules")),
            _ingress_address(o), ports, age(o, now)]


_INGRESS_CLASS_COLUMNS = (
    NAME_COLUMN,
    column("Controller", "Controller that is responsible for handling this class"),
    column("Parameters", "A reference to a resource with additional parameters"),
    AGE_COLUMN,
)


def _ingress_class_cells(o: Mapping[str, Any], now: float) -> Cells:
    name = name_of(o)
    if get(o, "metadata", "annotations", "ingressclass.kubernetes.io/is-default-class") == "true":
        name += " (default)"
    params = get(o, "spec", "parameters")
    shown = "<none>"
    if isinstance(params, Mapping):
        shown = str(params.get("kind") or "")
        if params.get("apiGroup") is not None:
            shown += "." + str(params["apiGroup"])
        shown += "/" + str(params.get("name") or "")
    return [name, text(o, "spec", "controller"), shown, age(o, now)]


_NETWORK_POLICY_COLUMNS = (
    NAME_COLUMN,
    column("Pod-Selector", "podSelector selects the pods to which this NetworkPolicy object applies. The array of "
           "rules is applied to any pods selected by this field. An empty selector matches all pods in the policy's "
           "namespace. Multiple network policies can select the same set of pods. In this case, the ingress rules "
           "for each are combined additively. This field is optional. If it is not specified, it defaults to an "
           "empty selector."),
    AGE_COLUMN,
)


def _network_policy_cells(o: Mapping[str, Any], now: float) -> Cells:
    selector = get(o, "spec", "podSelector")
    shown = selector_string(selector) if isinstance(selector, Mapping) else ""
    return [name_of(o), shown or "<none>", age(o, now)]


_RUNTIME_CLASS_COLUMNS = (NAME_COLUMN, column("Handler", ""), AGE_COLUMN)
"""printRuntimeClass's columns: Handler's description is ObjectMeta's doc of a field it has not ("")."""


def _runtime_class_cells(o: Mapping[str, Any], now: float) -> Cells:
    return [name_of(o), text(o, "handler"), age(o, now)]


PRINTERS: dict[str, Printer] = {
    "runtimeclass": Printer(_RUNTIME_CLASS_COLUMNS, _runtime_class_cells),
    "ingress": Printer(_INGRESS_COLUMNS, _ingress_cells),
    "ingressclass": Printer(_INGRESS_CLASS_COLUMNS, _ingress_class_cells),
    "networkpolicy": Printer(_NETWORK_POLICY_COLUMNS, _network_policy_cells),
    "horizontalpodautoscaler": Printer(_HPA_COLUMNS, _hpa_cells),
    "validatingadmissionpolicy": Printer(_VAP_COLUMNS, _vap_cells),
    "validatingadmissionpolicybinding": Printer(_VAPB_COLUMNS, _vapb_cells),
    "certificatesigningrequest": Printer(_CSR_COLUMNS, _csr_cells),
    "podcertificaterequest": Printer(_PCR_COLUMNS, _pcr_cells),
    "servicecidr": Printer(_SERVICE_CIDR_COLUMNS, _service_cidr_cells),
    "ipaddress": Printer(_IP_ADDRESS_COLUMNS, _ip_address_cells),
    "storageversionmigration": Printer(_SVM_COLUMNS, _svm_cells),
}
"""By the key a kind's declaration names (nodeagent/kinds: `printer`)."""
