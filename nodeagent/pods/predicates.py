"""The kubelet's non-resource admission predicates: pod OS, node affinity, node name, host ports.

lifecycle/predicate.go checks, before the scheduler's AdmissionCheck, that a pod's
`kubernetes.io/os` label matches the node's OS label (PodOSSelectorNodeLabelDoesNotMatch)
and that spec.os names the node's OS (PodOSNotSupported). AdmissionCheck then reports,
after resource fit: required node affinity and nodeSelector (NodeAffinity), spec.nodeName
(NodeName) and host port conflicts with the active pods (NodePorts), each as a
PredicateFailureError whose message is "Predicate <name> failed: <reason>". The pod
manifest has already been validated (nodeSelector, affinity, tolerations); values of other
shapes are read defensively and treated as absent. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeagent.objects.common import node_selector_matches
from nodeagent.objects.pod.model import Pod

LABEL_OS = "kubernetes.io/os"
NODE_OS = "linux"  # the node's runtime.GOOS: nodeagent runs on Linux

OS_SELECTOR_REASON = "PodOSSelectorNodeLabelDoesNotMatch"
OS_SELECTOR_MESSAGE = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
OS_FIELD_REASON = "PodOSNotSupported"
OS_FIELD_MESSAGE = "Failed to admit pod as the OS field doesn't match node OS"

NODE_AFFINITY = "NodeAffinity"
NODE_AFFINITY_REASON = "node(s) didn't match Node affinity/selector"
NODE_NAME = "NodeName"
NODE_NAME_REASON = "node(s) didn't match the requested node name"
NODE_PORTS = "NodePorts"
NODE_PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"

_ANY_IP = "0.0.0.0"


@dataclass(frozen=True)
class PredicateFailure:
    """The kubelet's PredicateFailureError: reason is the predicate's name."""

    name: str
    desc: str

    @property
    def message(self) -> str:
        return f"Predicate {self.name} failed: {self.desc}"


def _spec(pod: Pod) -> Mapping[str, Any]:
    spec = pod.manifest.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def os_rejection(pod: Pod) -> tuple[str, str] | None:
    """(reason, message) when the pod's OS label or spec.os does not match the node, else None."""
    # A node label missing or naming another OS is read as the kubelet's own OS, as upstream.
    wanted = pod.labels.get(LABEL_OS)
    if wanted is not None and wanted != NODE_OS:
        return OS_SELECTOR_REASON, OS_SELECTOR_MESSAGE
    os_field = _spec(pod).get("os")
    if isinstance(os_field, Mapping) and os_field.get("name") != NODE_OS:
        return OS_FIELD_REASON, OS_FIELD_MESSAGE
    return None


def matches_node_affinity(pod: Pod, node_name: str, node_labels: Mapping[str, str]) -> bool:
    """GetRequiredNodeAffinity(pod).Match(node): nodeSelector and the required terms."""
    spec = _spec(pod)
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping):
        for key, value in selector.items():
            if node_labels.get(str(key)) != value:
                return False
    affinity = spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = (node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
                if isinstance(node_affinity, Mapping) else None)
    if isinstance(required, Mapping):
        return node_selector_matches(required, node_name, node_labels)
    return True


@dataclass(frozen=True)
class HostPort:
    ip: str
    protocol: str
    port: int

    def conflicts(self, other: HostPort) -> bool:
        """HostPortInfo.CheckConflict: same protocol and port, and the same IP or either 0.0.0.0."""
        if self.port != other.port or self.protocol != other.protocol:
            return False
        return self.ip == other.ip or _ANY_IP in (self.ip, other.ip)


def host_ports(pod: Pod) -> list[HostPort]:
    """The pod's wanted host ports: app containers and restartable (sidecar) init containers."""
    spec = _spec(pod)
    containers: list[Any] = list(spec.get("containers") or ())
    containers += [c for c in spec.get("initContainers") or ()
                   if isinstance(c, Mapping) and c.get("restartPolicy") == "Always"]
    out: list[HostPort] = []
    for c in containers:
        if not isinstance(c, Mapping):
            continue
        for p in c.get("ports") or ():
            if not isinstance(p, Mapping):
                continue
            port = p.get("hostPort")
            if not isinstance(port, int) or isinstance(port, bool) or port <= 0:
                continue
            out.append(HostPort(ip=str(p.get("hostIP") or _ANY_IP), protocol=str(p.get("protocol") or "TCP"),
                                port=port))
    return out


def ports_fit(pod: Pod, active: Iterable[Pod]) -> bool:
    """nodeports.Fits: none of the pod's host ports is taken by an active pod."""
    wanted = host_ports(pod)
    if not wanted:
        return True
    used = [hp for other in active if other.uid != pod.uid for hp in host_ports(other)]
    return not any(w.conflicts(u) for w in wanted for u in used)


def failures(pod: Pod, *, node_name: str, node_labels: Mapping[str, str],
             active: Sequence[Pod]) -> list[PredicateFailure]:
    """AdmissionCheck's non-resource failures, in its order (affinity, name, ports)."""
    out: list[PredicateFailure] = []
    if not matches_node_affinity(pod, node_name, node_labels):
        out.append(PredicateFailure(NODE_AFFINITY, NODE_AFFINITY_REASON))
    if pod.node_name and pod.node_name != node_name:
        out.append(PredicateFailure(NODE_NAME, NODE_NAME_REASON))
    if not ports_fit(pod, active):
        out.append(PredicateFailure(NODE_PORTS, NODE_PORTS_REASON))
    return out
