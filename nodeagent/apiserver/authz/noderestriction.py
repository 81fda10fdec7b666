"""The NodeRestriction admission plugin (k8s.io/kubernetes plugin/pkg/admission/noderestriction):
what a node's identity may write, judged on the object written.

Why beside the Node authorizer: the authorizer sees only the request (a create names no object, a
patch's result is unknown), so a node allowed to `update nodes` or `create resourceslices` by verb
would reach any node's. This check runs on the object as it would be stored, and keeps a node to
its own Node (no taints, owner references, or labels outside the kubelet's set changed), its own
Lease, mirror pods bound to it, status of pods bound to it (no labels, no claim statuses) and
ResourceSlices of its own nodeName, status of PVCs (the Node authorizer has already required one
of its pods to use it) where only capacity, conditions, allocatedResources and
allocatedResourceStatuses change (RecoverVolumeExpansionFailure is GA and locked on in 1.37), and
kubelet-serving / kube-apiserver-client-kubelet CSRs only for `CN=system:node:<itself>`, and
service-account tokens (TokenRequest) only bound to a pod on it, of an audience the pod asks for. Texts are
upstream's. Differences, on purpose: the PVC refusal names the changed fields, where upstream
appends go-cmp's diff of the Go structs; a token request's audience is not matched against the CSI
drivers of the pod's volumes; PodCertificateRequests are not checked
(nodeagent's nodes write none); a mirror pod's references to API objects are not looked for.
Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

NODE_LEASE_NAMESPACE = "kube-node-lease"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
RESTRICTION_NAMESPACE = "node-restriction.kubernetes.io"
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type", "kubernetes.io/os", "kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
})
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
NODE_CSR_SIGNERS = frozenset({"kubernetes.io/kubelet-serving", "kubernetes.io/kube-apiserver-client-kubelet"})
PVC_STATUS_NODE_FIELDS = ("capacity", "conditions", "allocatedResources", "allocatedResourceStatuses")
"""What a node may change in a PVC's status: admitPVCStatus clears these (the last two because
RecoverVolumeExpansionFailure is on) before comparing the rest of the old and new claim."""


def _namespace(key: str) -> str:
    prefix, sep, _ = key.partition("/")
    return prefix if sep else ""


def _under(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def is_kubelet_label(key: str) -> bool:
    """kubeletapis.IsKubeletLabel: the labels a kubelet sets on its own Node."""
    return key in KUBELET_LABELS or any(_under(_namespace(key), ns) for ns in KUBELET_LABEL_NAMESPACES)


def forbidden_labels(new: Mapping[str, str], old: Mapping[str, str]) -> list[str]:
    """getForbiddenLabels of the labels changed: node-restriction.kubernetes.io ones, and
    kubernetes.io/k8s.io ones the kubelet does not own; sorted, as sets.String.List()."""
    changed = {k for k in new if old.get(k) != new[k]} | {k for k in old if new.get(k) != old[k]}
    out = set()
    for key in changed:
        ns = _namespace(key)
        if _under(ns, RESTRICTION_NAMESPACE):
            out.add(key)
        if (_under(ns, "kubernetes.io") or _under(ns, "k8s.io")) and not is_kubelet_label(key):
            out.add(key)
    return sorted(out)


def _md(obj: Mapping[str, Any] | None, key: str) -> Any:
    md = obj.get("metadata") if isinstance(obj, Mapping) else None
    return md.get(key) if isinstance(md, Mapping) else None


def _spec(obj: Mapping[str, Any] | None, key: str) -> Any:
    spec = obj.get("spec") if isinstance(obj, Mapping) else None
    return spec.get(key) if isinstance(spec, Mapping) else None


def admit_write(node: str, group: str, resource: str, subresource: str, namespace: str, name: str,
                obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> str:
    """The refusal text for a create (`old` None) or update of `obj` by `node`, "" when admitted."""
    create = old is None
    if group == "" and resource == "pods":
        if subresource == "status":
            if create:
                return 'unexpected operation "CREATE"'
            if _spec(old, "nodeName") != node:
                return f'node "{node}" can only update pod status for pods with spec.nodeName set to itself'
            if (_md(obj, "labels") or {}) != (_md(old, "labels") or {}):
                return f'node "{node}" cannot update labels through pod status'
            status, old_status = obj.get("status") or {}, (old or {}).get("status") or {}
            if status.get("resourceClaimStatuses") != old_status.get("resourceClaimStatuses"):
                return f'node "{node}" cannot update resource claim statues'
            if status.get("extendedResourceClaimStatus") != old_status.get("extendedResourceClaimStatus"):
                return f'node "{node}" cannot update extended resource claim status'
            if (status.get("nodeAllocatableResourceClaimStatuses") or []) != (
                    old_status.get("nodeAllocatableResourceClaimStatuses") or []):
                return f'node "{node}" cannot update node allocatable resource claim statuses'
            return ""
        if subresource in ("", "eviction") and create and subresource == "":
            return _mirror_pod(node, obj)
        if subresource == "eviction":
            return ""
        if subresource:
            return f"unexpected pod subresource \"{subresource}\", only 'status' and 'eviction' are allowed"
        return f'unexpected operation "UPDATE", node "{node}" can only create and delete mirror pods'
    if group == "" and resource == "nodes":
        return _node(node, name, obj, old)
    if group == "coordination.k8s.io" and resource == "leases":
        if namespace != NODE_LEASE_NAMESPACE:
            return f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace'
        if (_md(obj, "name") if create else name) != node:
            return "can only access node lease with the same name as the requesting node"
        return ""
    if group == "resource.k8s.io" and resource == "resourceslices" and create and _spec(obj, "nodeName") != node:
        return "can only create ResourceSlice with the same NodeName as the requesting node"
    if group == "" and resource == "persistentvolumeclaims":
        if subresource != "status":
            return "may only update PVC status"
        if create:
            return 'unexpected operation "CREATE"'
        return _pvc_status(node, obj, old or {})
    if group == "certificates.k8s.io" and resource == "certificatesigningrequests" and create:
        return _csr(node, obj)
    return ""


def _without(obj: Mapping[str, Any], status_fields: tuple[str, ...]) -> dict[str, Any]:
    out = dict(obj)
    md = dict(out.get("metadata") or {})
    md.pop("resourceVersion", None)
    md.pop("managedFields", None)
    out["metadata"] = md
    status = {k: v for k, v in (out.get("status") or {}).items() if k not in status_fields}
    out["status"] = status
    return out


def _pvc_status(node: str, obj: Mapping[str, Any], old: Mapping[str, Any]) -> str:
    """admitPVCStatus: nothing but the fields a kubelet reports may differ."""
    new_cut, old_cut = _without(obj, PVC_STATUS_NODE_FIELDS), _without(old, PVC_STATUS_NODE_FIELDS)
    if new_cut == old_cut:
        return ""
    changed = []
    for part in ("metadata", "spec", "status"):
        a, b = old_cut.get(part) or {}, new_cut.get(part) or {}
        changed += [f"{part}.{k}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    changed += [k for k in sorted((set(old_cut) | set(new_cut)) - {"metadata", "spec", "status"})
                if old_cut.get(k) != new_cut.get(k)]
    return (f'node "{node}" is not allowed to update fields other than status.quantity and status.conditions: '
            f"changed {', '.join(changed)}")


def _csr(node: str, obj: Mapping[str, Any]) -> str:
    """admitCSR: a kubelet-serving or kubelet-client CSR must name this node (other signers pass)."""
    if _spec(obj, "signerName") not in NODE_CSR_SIGNERS:
        return ""
    try:
        pem = base64.b64decode(str(_spec(obj, "request") or ""), validate=True)
    except (binascii.Error, ValueError):
        pem = b""
    if b"-----BEGIN CERTIFICATE REQUEST-----" not in pem:
        return "unable to parse csr: PEM block type must be CERTIFICATE REQUEST"
    try:
        request = x509.load_pem_x509_csr(pem)
    except ValueError as err:
        return f"unable to parse csr: {err}"
    names = request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    common_name = str(names[-1].value) if names else ""
    if common_name != f"system:node:{node}":
        return f"can only create a node CSR with CN=system:node:{node}"
    return ""


def admit_delete(node: str, group: str, resource: str, stored: Mapping[str, Any] | None) -> str:
    """The refusal text for a delete of `stored` by `node` (pods and ResourceSlices bound elsewhere)."""
    if stored is None:
        return ""
    if group == "" and resource == "pods" and _spec(stored, "nodeName") != node:
        return f'node "{node}" can only delete pods with spec.nodeName set to itself'
    if group == "resource.k8s.io" and resource == "resourceslices" and _spec(stored, "nodeName") != node:
        return "can only delete ResourceSlice with the same NodeName as the requesting node"
    return ""


def _mirror_pod(node: str, pod: Mapping[str, Any]) -> str:
    if MIRROR_ANNOTATION not in (_md(pod, "annotations") or {}):
        return f'pod does not have "{MIRROR_ANNOTATION}" annotation, node "{node}" can only create mirror pods'
    if _spec(pod, "nodeName") != node:
        return f'node "{node}" can only create pods with spec.nodeName set to itself'
    owners = _md(pod, "ownerReferences") or []
    if len(owners) > 1:
        return f'node "{node}" can only create pods with a single owner reference set to itself'
    if not owners:
        return f'node "{node}" can only create pods with an owner reference set to itself'
    owner = owners[0] if isinstance(owners[0], Mapping) else {}
    if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
        return f'node "{node}" can only create pods with an owner reference set to itself'
    if not owner.get("controller"):
        return f'node "{node}" can only create pods with a controller owner reference set to itself'
    if owner.get("blockOwnerDeletion"):
        return f'node "{node}" must not set blockOwnerDeletion on an owner reference'
    return ""


def _node(node: str, name: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> str:
    requested = name or str(_md(obj, "name") or "")
    if requested != node:
        return f'node "{node}" is not allowed to modify node "{requested}"'
    labels = _md(obj, "labels") or {}
    if old is None:
        if _spec(obj, "configSource") is not None:
            return f'node "{node}" is not allowed to create pods with a non-nil configSource'
        bad = forbidden_labels(labels, {})
        if bad:
            return f'node "{node}" is not allowed to set the following labels: {", ".join(bad)}'
        return ""
    source = _spec(obj, "configSource")
    if source is not None and source != _spec(old, "configSource"):
        return f'node "{node}" is not allowed to update configSource to a new non-nil configSource'
    if (_spec(obj, "taints") or None) != (_spec(old, "taints") or None):
        return f'node "{node}" is not allowed to modify taints'
    if (_md(obj, "ownerReferences") or None) != (_md(old, "ownerReferences") or None):
        return f'node "{node}" is not allowed to modify ownerReferences'
    bad = forbidden_labels(labels, _md(old, "labels") or {})
    if bad:
        return f"is not allowed to modify labels: {', '.join(bad)}"
    return ""


def admit_token_request(node: str, user: str, request: Mapping[str, Any], pod: Mapping[str, Any],
                        audience_allowed: Callable[[str], bool]) -> str:
    """admitServiceAccount: the refusal text for `node` (user name `user`) creating a token by `request`
    bound to `pod` (the caller looked it up by the request's boundObjectRef, see token_pod_name), "" when
    admitted. With ServiceAccountNodeAudienceRestriction (beta, on): the audience must be one a projected
    service-account-token volume of the pod names, else the node needs `request-serviceaccounts-token-
    audience` on it (`audience_allowed`). Difference: the audiences of CSI drivers the pod's volumes use
    are not looked for (nodeagent mounts no CSI volumes)."""
    ref = _spec(request, "boundObjectRef") or {}
    if str(ref.get("uid") or "") == "":
        return "node requested token with a pod binding without a uid"
    if ref.get("uid") != _md(pod, "uid"):
        return (f"the UID in the bound object reference ({ref.get('uid')}) does not match the UID in record. "
                "The object might have been deleted and then recreated")
    if _spec(pod, "nodeName") != node:
        return "node requested token bound to a pod scheduled on a different node"
    audiences = _spec(request, "audiences") or []
    if len(audiences) > 1:
        return "node may only request 0 or 1 audiences"
    audience = str(audiences[0]) if audiences else ""
    for volume in _spec(pod, "volumes") or []:
        for source in ((volume or {}).get("projected") or {}).get("sources") or []:
            token = (source or {}).get("serviceAccountToken")
            if isinstance(token, Mapping) and str(token.get("audience") or "") == audience:
                return ""
    if audience_allowed(audience):
        return ""
    return f'{user} is not authorized to request tokens for audience "{audience}"'


def token_pod_name(request: Mapping[str, Any]) -> tuple[str, str]:
    """The pod a node's token request must be bound to: (name, "") or ("", the refusal) when the
    request binds to no pod."""
    ref = _spec(request, "boundObjectRef")
    if not isinstance(ref, Mapping) or ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" \
            or not ref.get("name"):
        return "", "node requested token not bound to a pod"
    return str(ref["name"]), ""
