"""What kube-apiserver does to a Node on its way in: the decoding's defaults (SetObjectDefaults_Node)
and the TaintNodesByCondition admission plugin (plugin/pkg/admission/nodetaint, on by default).

Why: every Node is created with the node.kubernetes.io/not-ready:NoSchedule taint, so that no pod
is scheduled to it before the node lifecycle controller has seen it Ready (the controller removes
the taint then). The plugin handles creates only, of the object proper (no subresource); a taint
of that key and effect already there is kept as it is. Pure: mutates the dict it is given.
"""

from __future__ import annotations

from typing import Any

NOT_READY = "node.kubernetes.io/not-ready"


def admit_new_node(node: dict[str, Any]) -> None:
    """TaintNodesByCondition's Admit on a Node create: the not-ready NoSchedule taint added."""
    spec = node.get("spec")
    if spec is None:
        spec = node["spec"] = {}
    if not isinstance(spec, dict):
        return  # validation names what is wrong
    taints = spec.get("taints")
    if taints is None:
        taints = []
    if not isinstance(taints, list):
        return
    if any(isinstance(t, dict) and t.get("key") == NOT_READY and t.get("effect") == "NoSchedule" for t in taints):
        return
    spec["taints"] = [*taints, {"key": NOT_READY, "effect": "NoSchedule"}]


def node_defaults(node: dict[str, Any]) -> None:
    """SetDefaults_NodeStatus: a status with capacity and no allocatable gets allocatable = capacity."""
    status = node.get("status")
    if isinstance(status, dict) and status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
        status["allocatable"] = dict(status["capacity"])
