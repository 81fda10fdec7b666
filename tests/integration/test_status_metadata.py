"""A /status write's metadata, per kind, as kube-apiserver's status strategies keep it.

Most status strategies (pods, PVCs, nodes, namespaces, services, workloads) take the new object's
ObjectMeta: labels and annotations sent through /status are written (a pod's ownerReferences and
a Deployment's labels excepted). Those that call ResetObjectMetaForStatus (ResourceClaims,
CSINodes, VolumeAttachments, ServiceCIDRs...) keep the stored ones. nodeagent's status path used
to drop them for every kind. The answers are compared with the real kube-apiserver's when that
tier runs (NODEAGENT_KUBE_APISERVER=1).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import Send, daemon_sender, kube_sender

pytestmark = [pytest.mark.integration]

# (collection path, object without its name, status patch)
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("/api/v1/namespaces/default/pods",
     {"spec": {"nodeName": "no-such-node", "containers": [{"name": "c", "image": "pause"}]}},
     {"message": "written"}),
    ("/api/v1/namespaces/default/persistentvolumeclaims",
     {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
     {"phase": "Pending"}),
    ("/api/v1/namespaces/default/services", {"spec": {"ports": [{"port": 80}]}}, {"loadBalancer": {}}),
    ("/api/v1/namespaces", {}, {"phase": "Active"}),
    ("/apis/apps/v1/namespaces/default/deployments",
     {"spec": {"selector": {"matchLabels": {"app": "s"}}, "replicas": 0,
               "template": {"metadata": {"labels": {"app": "s"}},
                            "spec": {"containers": [{"name": "c", "image": "pause"}]}}}},
     {"observedGeneration": 1}),
    ("/apis/batch/v1/namespaces/default/cronjobs",
     {"spec": {"schedule": "*/5 * * * *", "suspend": True,
               "jobTemplate": {"spec": {"template": {"spec": {
                   "restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}}}}}},
     {"active": []}),
    ("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
     {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}}},
     {"devices": []}),
    ("/apis/networking.k8s.io/v1/servicecidrs", {"spec": {"cidrs": ["10.202.0.0/24"]}}, {"conditions": []}),
]
SENT_META = {"labels": {"a": "2", "b": "3"}, "annotations": {"y": "2"}}
CHANGED = ({"a": "2", "b": "3"}, {"x": "1", "y": "2"})
KEPT = ({"a": "1"}, {"x": "1"})
EXPECTED = {
    "pods": CHANGED, "persistentvolumeclaims": CHANGED, "services": CHANGED,
    "namespaces": ({"a": "2", "b": "3", "kubernetes.io/metadata.name": "P-namespaces"}, {"x": "1", "y": "2"}),
    "deployments": ({"a": "1"}, {"x": "1", "y": "2"}),  # deploymentStatusStrategy resets the labels only
    "cronjobs": CHANGED,
    "resourceclaims": KEPT, "servicecidrs": KEPT,
}


def _answers(send: Send, prefix: str) -> dict[str, Any]:
    """Per resource, the labels and annotations after a merge patch of /status that sets both."""
    out: dict[str, Any] = {}
    for path, body, status in CASES:
        plural = path.rsplit("/", 1)[1]
        name = f"{prefix}-{plural[:20]}"
        made_meta = {"name": name, "labels": {"a": "1"}, "annotations": {"x": "1"}}
        code, made = send("POST", path, {**body, "metadata": made_meta}, "application/json")
        assert code == 201, (path, made)
        code, patched = send("PATCH", f"{path}/{name}/status", {"metadata": SENT_META, "status": status},
                             "application/merge-patch+json")
        assert code == 200, (path, patched)
        code, got = send("GET", f"{path}/{name}", None, "application/json")
        assert code == 200, (path, got)
        md = got["metadata"]
        labels = {k: v.replace(prefix, "P") for k, v in (md.get("labels") or {}).items()}
        # the Deployment controller's revision annotation (nodeagent's embedded one runs) is no status write's
        annotations = {k: v for k, v in (md.get("annotations") or {}).items()
                       if k != "deployment.kubernetes.io/revision"}
        out[plural] = (labels, annotations)
        assert (patched["metadata"].get("labels") or {}) == (md.get("labels") or {})
        send("DELETE", f"{path}/{name}", {"gracePeriodSeconds": 0}, "application/json")
    return out


def test_status_write_metadata_per_kind(api_daemon: Daemon) -> None:
    assert _answers(daemon_sender(api_daemon), "sm") == EXPECTED


def test_status_write_keeps_pod_owner_references(api_daemon: Daemon) -> None:
    """podStatusStrategy keeps the stored ownerReferences (old kubelets corrupted them)."""
    send = daemon_sender(api_daemon)
    code, cm = send("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "sm-owner"}},
                    "application/json")
    assert code == 201, cm
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "sm-owner", "uid": cm["metadata"]["uid"]}
    code, made = send("POST", "/api/v1/namespaces/default/pods",
                      {"metadata": {"name": "sm-owned", "ownerReferences": [owner]},
                       "spec": {"nodeName": "no-such-node", "containers": [{"name": "c", "image": "pause"}]}},
                      "application/json")
    assert code == 201, made
    code, patched = send("PATCH", "/api/v1/namespaces/default/pods/sm-owned/status",
                         {"metadata": {"ownerReferences": None, "labels": {"k": "v"}}, "status": {"message": "m"}},
                         "application/merge-patch+json")
    assert code == 200, patched
    assert patched["metadata"]["ownerReferences"] == [owner]
    assert patched["metadata"]["labels"] == {"k": "v"}


@pytest.mark.kube_apiserver
def test_status_write_metadata_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    assert _answers(daemon_sender(api_daemon), "sk") == _answers(kube_sender(kube_apiserver), "sk")
