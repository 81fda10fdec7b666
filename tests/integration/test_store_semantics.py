"""Store semantics kind by kind as kube-apiserver v1.37.2's strategies set them: whether an update
may leave out metadata.resourceVersion (AllowUnconditionalUpdate), through the daemon's REST API.
When the kube-apiserver tier runs (NODEAGENT_KUBE_APISERVER=1) the same requests give the real
kube-apiserver's answers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_validating_admission_policy import Send, _sender, daemon_send

pytestmark = [pytest.mark.integration]

SELECTOR = {"matchLabels": {"app": "ss"}}


def _case(api: str, kind: str, plural: str, namespaced: bool, name: str, body: dict[str, Any]) -> tuple[str, Any]:
    prefix = "/api/v1" if api == "v1" else f"/apis/{api}"
    path = f"{prefix}/namespaces/default/{plural}" if namespaced else f"{prefix}/{plural}"
    return path, {"apiVersion": api, "kind": kind, "metadata": {"name": name}, **body}


CASES = [
    _case("v1", "ConfigMap", "configmaps", True, "ss-cm", {"data": {"a": "1"}}),
    _case("v1", "Secret", "secrets", True, "ss-sec", {"stringData": {"a": "1"}}),
    _case("coordination.k8s.io/v1", "Lease", "leases", True, "ss-lease", {"spec": {"holderIdentity": "a"}}),
    _case("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True, "ss-pdb",
          {"spec": {"minAvailable": 1, "selector": SELECTOR}}),
    _case("storage.k8s.io/v1", "CSIDriver", "csidrivers", False, "ss.csi.example.com",
          {"spec": {"requiresRepublish": False}}),
    _case("storage.k8s.io/v1", "CSINode", "csinodes", False, "ss-csinode", {"spec": {"drivers": []}}),
    _case("storage.k8s.io/v1", "CSIStorageCapacity", "csistoragecapacities", True, "ss-cap",
          {"storageClassName": "x", "capacity": "1Gi"}),
    _case("storage.k8s.io/v1", "StorageClass", "storageclasses", False, "ss-sc", {"provisioner": "d.example.com"}),
    _case("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False, "ss-pc", {"value": 10}),
    _case("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", True, "ss-eps",
          {"addressType": "IPv4", "endpoints": []}),
    _case("resource.k8s.io/v1", "ResourceClaim", "resourceclaims", True, "ss-claim",
          {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}}}),
    _case("resource.k8s.io/v1", "DeviceClass", "deviceclasses", False, "ss-dc", {"spec": {}}),
    _case("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings",
          False, "ss-vapb", {"spec": {"policyName": "ss-none", "validationActions": ["Warn"]}}),
    _case("storagemigration.k8s.io/v1", "StorageVersionMigration", "storageversionmigrations", False, "ss-svm",
          {"spec": {"resource": {"group": "apps", "resource": "deployments"}}}),
    _case("rbac.authorization.k8s.io/v1", "Role", "roles", True, "ss-role", {"rules": []}),
]

REFUSED = ("Lease", "PodDisruptionBudget", "CSIDriver", "CSINode", "CSIStorageCapacity",
           "ValidatingAdmissionPolicyBinding", "StorageVersionMigration")


def unconditional_updates(send: Send) -> dict[str, Any]:
    """Per kind: the answer to a PUT without metadata.resourceVersion (a label added)."""
    out: dict[str, Any] = {}
    for path, obj in CASES:
        url = f"{path}/{obj['metadata']['name']}"
        send("DELETE", url, None)
        code, made, _ = send("POST", path, obj)
        assert code == 201, (obj["kind"], made)
        sent = copy.deepcopy(made)
        sent["metadata"].pop("resourceVersion")
        sent["metadata"]["labels"] = {"l": "1"}
        code, got, _ = send("PUT", url, sent)
        out[obj["kind"]] = (code, got.get("message") if code >= 300 else "updated")
        send("DELETE", url, None)
    return out


def test_update_without_resource_version(api_daemon: Daemon) -> None:
    got = unconditional_updates(daemon_send(api_daemon))
    for kind, (code, message) in got.items():
        if kind in REFUSED:
            assert code == 422, (kind, message)
            assert message.endswith(
                '" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update'), message
        else:
            assert (code, message) == (200, "updated"), kind


@pytest.mark.kube_apiserver
def test_the_same_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = unconditional_updates(daemon_send(api_daemon))
    theirs = unconditional_updates(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}))
    differ = [(k, ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]]
    assert not differ, "\n".join(f"{k}:\n ours   {a}\n theirs {b}" for k, a, b in differ)
