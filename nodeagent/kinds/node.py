"""The node.k8s.io kinds: v1 RuntimeClass.

Why served: Helm charts and operators (gVisor, Kata) create RuntimeClasses, and pods name one by
runtimeClassName; kube-apiserver stores them with no strategy of its own beyond validation. Facts
from k8s.io/kubernetes pkg/registry/node/runtimeclass (no generation, updates need a
resourceVersion). Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import Kind

RUNTIME_CLASS = Kind(
    "RuntimeClass", "runtimeclasses", namespaced=False, versions=("node.k8s.io/v1",),
    definition={"node.k8s.io": "io.k8s.api.node"}, store_hooks="node", printer="runtimeclass",
    unconditional_update=False,
)

KINDS = (RUNTIME_CLASS,)
