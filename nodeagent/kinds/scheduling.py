"""The scheduling.k8s.io kinds: scheduling.k8s.io/v1 PriorityClass.

Why served: pods name their priority by class, the real kube-scheduler's preemption reads them,
and kube-apiserver creates system-node-critical and system-cluster-critical at start (so does the
embedded API server: apiserver/server.py). Facts from k8s.io/kubernetes
pkg/registry/scheduling/priorityclass. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import GENERATION_CREATE, Kind

PRIORITY_CLASS = Kind(
    "PriorityClass", "priorityclasses", namespaced=False, versions=("scheduling.k8s.io/v1",),
    definition={"scheduling.k8s.io": "io.k8s.api.scheduling"}, short_names=("pc",), store_hooks="cluster",
    printer="priorityclass",
    generation=GENERATION_CREATE,
)

KINDS = (PRIORITY_CLASS,)
