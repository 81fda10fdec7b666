"""Builders of ReplicaSets, Deployments and pods for the decision tests."""

from __future__ import annotations

from typing import Any

from nodeagent.store.meta import rfc3339

NOW = 1_800_000_000.0
TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "img:1"}]}}


def pod(name: str, *, owner: dict[str, Any] | None = None, node: str = "n1", phase: str = "Running",
        ready: bool = True, ready_for: float = 3600, created_ago: float = 3600, labels: dict[str, str] | None = None,
        restarts: int = 0, deleting: bool = False) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}",
                          "labels": labels if labels is not None else {"app": "a"},
                          "creationTimestamp": rfc3339(NOW - created_ago)}
    if owner is not None:
        md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner["kind"], "name": owner["metadata"]["name"],
                                  "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    if owner is not None and owner["kind"] == "Job":  # created by the Job controller: not counted yet
        md["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    if deleting:
        md["deletionTimestamp"] = rfc3339(NOW)
    status: dict[str, Any] = {"phase": phase, "containerStatuses": [{"name": "c", "restartCount": restarts}]}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(NOW - ready_for)}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": {"nodeName": node}, "status": status}


def replica_set(name: str = "rs", replicas: int = 3, *, status: dict[str, Any] | None = None,
                owner: dict[str, Any] | None = None, annotations: dict[str, str] | None = None,
                template: dict[str, Any] | None = None, created_ago: float = 3600, generation: int = 1,
                ) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}", "generation": generation,
                          "creationTimestamp": rfc3339(NOW - created_ago),
                          "labels": dict((template or TEMPLATE)["metadata"]["labels"])}
    if annotations:
        md["annotations"] = annotations
    if owner is not None:
        md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": owner["metadata"]["name"],
                                  "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": md,
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "a"}},
                     "template": template or TEMPLATE},
            "status": status or {}}


def deployment(replicas: int = 4, *, strategy: dict[str, Any] | None = None, template: dict[str, Any] | None = None,
               status: dict[str, Any] | None = None, generation: int = 1, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "default", "uid": "uid-d", "generation": generation},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "a"}},
                     "template": template or TEMPLATE, "progressDeadlineSeconds": 600, "revisionHistoryLimit": 10,
                     "strategy": strategy or {"type": "RollingUpdate",
                                              "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                     **spec},
            "status": status or {}}
