"""The pod manager seen as the Pods API's `PodsView`: every pod of the node as a v1 Pod.

Why here: the kubelet serves its pod manager's pods with the status its status manager
computed (the node's own view, fresher than the API server's), keeping what the control plane
owns (PodScheduled, resourceClaimStatuses, extendedResourceClaimStatus). nodeagent's pod manager
holds the pod as applied and the node's status; the status is laid over the applied one the way
the node sync writes it to the store (nodesync.status.merged_status). Static pods are included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.nodesync.status import merged_status
from nodeagent.objects.pod.manifest import pod_to_manifest, status_to_json
from nodeagent.pods.manager import PodManager


class PodManagerView:
    def __init__(self, pods: PodManager) -> None:
        self._pods = pods

    def generation(self) -> int:
        return self._pods.generation()

    def pods(self) -> Mapping[str, Mapping[str, Any]]:
        out: dict[str, Mapping[str, Any]] = {}
        for view in self._pods.list():
            applied = view.pod.manifest.get("status")
            doc = pod_to_manifest(view.pod)
            node_status = status_to_json(view.pod, view.status)
            doc["status"] = merged_status(applied, node_status) if isinstance(applied, Mapping) else node_status
            out[view.pod.uid] = doc
        return out
