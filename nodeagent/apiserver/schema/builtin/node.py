"""Schema of node.k8s.io/v1 RuntimeClass (k8s.io/api node/v1 types.go).

Why served: pods name a RuntimeClass by runtimeClassName and charts create them (kinds/node.py).
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import arr, core, kind, obj, qmap, ref, s, smap
from nodeagent.apiserver.schema.model import Schema

N1 = "io.k8s.api.node.v1."


def node_definitions() -> dict[str, Schema]:
    return {
        N1 + "RuntimeClass": kind("A container runtime configuration pods may name by runtimeClassName.", {
            "handler": s("The CRI handler (a DNS label); immutable."),
            "overhead": ref(N1 + "Overhead", "The resources a pod of this class uses beyond its containers'."),
            "scheduling": ref(N1 + "Scheduling", "The nodes that support this class."),
        }, ["handler"]),
        N1 + "Overhead": obj("A pod's fixed overhead.", {
            "podFixed": qmap("The resources each pod of the class adds."),
        }),
        N1 + "Scheduling": obj("Where pods of the class may run.", {
            "nodeSelector": smap("Labels the node must have (merged into the pod's).", atomic=True),
            "tolerations": arr(core("Toleration"), "Tolerations added to the pod's.", atomic=True),
        }),
    }
