"""Where a pod may go, by the node's labels, name, taints, cordon and host ports in use: the
scheduler's NodeUnschedulable, TaintToleration, NodeAffinity and NodePorts filters, and the
NodeAffinity score.

- spec.nodeSelector and spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
  (terms ORed, requirements ANDed, matchFields on metadata.name) must both hold:
  "node(s) didn't match Pod's node affinity/selector".
- node.spec.taints with effect NoSchedule or NoExecute must each be tolerated by a
  spec.tolerations entry (ToleratesTaint: empty effect matches any, empty key with Exists
  matches any key, Equal compares values): "node(s) had untolerated taint(s)" (v1.37's text,
  which no longer names the taint).
- node.spec.unschedulable (a cordon) keeps pods off unless they tolerate
  node.kubernetes.io/unschedulable:NoSchedule: "node(s) were unschedulable".
- the host ports of its containers and restartable (sidecar) init containers (util.GetHostPorts:
  hostPort > 0; hostIP empty is 0.0.0.0, protocol empty TCP) must be free on the node: a 0.0.0.0
  port conflicts with that protocol and port on any address, any other address with itself and
  0.0.0.0 (HostPortInfo.CheckConflict): "node(s) didn't have free ports for the requested pod
  ports". The ports in use are those of the pods counted on the node (ClusterCache).
- preferredDuringSchedulingIgnoredDuringExecution: the summed weight of matching terms (the
  NodeAffinity score, normalised and weighted by scoring.py).

A pod's required inter-pod affinity and anti-affinity terms and DoNotSchedule spread constraints
are parsed here too (`pod_terms`, part of the key); they are evaluated against the other pods by
interpod.py. Pure: the pod spec was validated on the way in (nodeagent.objects.pod.scheduling);
anything malformed here simply does not match.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.controlplane.scheduler import interpod
from nodeagent.objects.common import node_selector_matches

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
CORDONED = "node(s) were unschedulable"
UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"
NO_FREE_PORTS = "node(s) didn't have free ports for the requested pod ports"
BIND_ALL = "0.0.0.0"


@dataclass(frozen=True)
class HostPort:
    """A host port a pod takes: (address, protocol, port), sanitised as HostPortInfo does."""

    ip: str
    protocol: str
    port: int


def ports_conflict(want: Sequence[HostPort], used: Mapping[HostPort, int]) -> bool:
    """HostPortInfo.CheckConflict over the wanted ports (`used` counts the pods holding each)."""
    for p in want:
        if p.ip == BIND_ALL:
            if any(u.protocol == p.protocol and u.port == p.port for u in used):
                return True
        elif HostPort(BIND_ALL, p.protocol, p.port) in used or p in used:
            return True
    return False


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator in ("", "Equal") and self.value == taint.value


@dataclass(frozen=True)
class Placement:
    """A pod's node constraints; `key` is equal for pods that constrain alike (the scheduler's
    equivalence classes include it)."""

    node_selector: tuple[tuple[str, str], ...] = ()
    required: Mapping[str, Any] | None = None
    preferred: tuple[tuple[int, Mapping[str, Any]], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    pod_terms: interpod.PodTerms | None = None  # pod (anti-)affinity and spread constraints (interpod.py)
    key: str = field(default="", compare=False)

    def reason(self, name: str, labels: Mapping[str, str], taints: Sequence[Taint], cordoned: bool,
               used_ports: Mapping[HostPort, int] | None = None) -> str | None:
        """Why the node is out (the first filter that fails, in the scheduler's order), or None."""
        if cordoned and not any(t.tolerates(_CORDON) for t in self.tolerations):
            return CORDONED
        for taint in taints:
            if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not any(t.tolerates(taint) for t in self.tolerations):
                return UNTOLERATED_TAINT
        if not self.node_affinity(name, labels):
            return AFFINITY_MISMATCH
        if self.host_ports and used_ports and ports_conflict(self.host_ports, used_ports):
            return NO_FREE_PORTS
        return None

    def node_affinity(self, name: str, labels: Mapping[str, str]) -> bool:
        """spec.nodeSelector and the required node affinity hold (GetRequiredNodeAffinity.Match)."""
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        return self.required is None or node_selector_matches(self.required, name, labels)

    def tolerates(self, taints: Sequence[Taint]) -> bool:
        """Every NoSchedule and NoExecute taint is tolerated."""
        return all(any(t.tolerates(taint) for t in self.tolerations) for taint in taints
                   if taint.effect in (NO_SCHEDULE, NO_EXECUTE))

    def preference(self, name: str, labels: Mapping[str, str]) -> int:
        """The summed weight of the preferred terms this node matches."""
        return sum(w for w, term in self.preferred
                   if node_selector_matches({"nodeSelectorTerms": [term]}, name, labels))


NONE = Placement()
_CORDON = Taint(UNSCHEDULABLE_TAINT, "", NO_SCHEDULE)


def placement_of(pod: Mapping[str, Any]) -> Placement:
    spec = pod.get("spec") or {}
    selector = tuple(sorted((str(k), str(v)) for k, v in _mapping(spec.get("nodeSelector")).items()))
    node_aff = _mapping(_mapping(spec.get("affinity")).get("nodeAffinity"))
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
    preferred = tuple(
        (int(p.get("weight") or 0), p.get("preference") or {})
        for p in node_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        if isinstance(p, Mapping)
    )
    tolerations = tuple(
        Toleration(str(t.get("key") or ""), str(t.get("operator") or "Equal"), str(t.get("value") or ""),
                   str(t.get("effect") or ""))
        for t in spec.get("tolerations") or () if isinstance(t, Mapping)
    )
    ports = host_ports_of(spec)
    terms = interpod.terms_of(spec)
    if not (selector or required or preferred or tolerations or ports or terms):
        return NONE
    key = json.dumps([selector, required, preferred, [dataclasses.astuple(t) for t in tolerations],
                      [dataclasses.astuple(p) for p in ports], terms.key if terms else None],
                     sort_keys=True, separators=(",", ":"), default=str)
    return Placement(selector, required if isinstance(required, Mapping) else None, preferred, tolerations, ports,
                     terms, key)


def host_ports_of(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """util.GetHostPorts: the ports with a hostPort of the restartable init containers, then of the
    containers."""
    out: list[HostPort] = []
    sidecars = [c for c in spec.get("initContainers") or () if isinstance(c, Mapping)
                and c.get("restartPolicy") == "Always"]
    for c in (*sidecars, *(c for c in spec.get("containers") or () if isinstance(c, Mapping))):
        for p in c.get("ports") or ():
            if not isinstance(p, Mapping):
                continue
            port = p.get("hostPort")
            if isinstance(port, int) and not isinstance(port, bool) and port > 0:
                out.append(HostPort(str(p.get("hostIP") or BIND_ALL), str(p.get("protocol") or "TCP"), port))
    return tuple(out)


def _mapping(value: Any) -> Mapping[str, Any]:
    """Objects written straight to the store skip pod validation: a malformed field matches nothing."""
    return value if type(value) is dict or isinstance(value, Mapping) else {}  # dict: no ABC check


def taints_of(node: Mapping[str, Any]) -> tuple[Taint, ...]:
    return tuple(
        Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
        for t in (node.get("spec") or {}).get("taints") or () if isinstance(t, Mapping)
    )


def cordoned(node: Mapping[str, Any]) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))
