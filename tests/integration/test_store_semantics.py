"""Store semantics kind by kind as kube-apiserver v1.37.2's strategies set them: whether an update
may leave out metadata.resourceVersion (AllowUnconditionalUpdate), and how metadata.generation is
kept (set on create, raised by a change of the spec, of the labels), through the daemon's REST API.
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


def _case(api: str, kind: str, plural: str, namespaced: bool, name: str, body: dict[str, Any],
          change: tuple[tuple[str, ...], Any] = ((), None)) -> tuple[str, Any, tuple[tuple[str, ...], Any]]:
    """(collection path, object, (path, value) of a change of its spec for the generation check)."""
    prefix = "/api/v1" if api == "v1" else f"/apis/{api}"
    path = f"{prefix}/namespaces/default/{plural}" if namespaced else f"{prefix}/{plural}"
    return path, {"apiVersion": api, "kind": kind, "metadata": {"name": name}, **body}, change


CASES = [
    _case("v1", "ConfigMap", "configmaps", True, "ss-cm", {"data": {"a": "1"}}, (("data", "a"), "2")),
    _case("v1", "Secret", "secrets", True, "ss-sec", {"stringData": {"a": "1"}}, (("data", "a"), "Mg==")),
    _case("coordination.k8s.io/v1", "Lease", "leases", True, "ss-lease",
          {"spec": {"holderIdentity": "a"}}, (("spec", "holderIdentity"), "b")),
    _case("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True, "ss-pdb",
          {"spec": {"minAvailable": 1, "selector": SELECTOR}}, (("spec", "minAvailable"), 2)),
    _case("storage.k8s.io/v1", "CSIDriver", "csidrivers", False, "ss.csi.example.com",
          {"spec": {"requiresRepublish": False}}, (("spec", "requiresRepublish"), True)),
    _case("storage.k8s.io/v1", "CSINode", "csinodes", False, "ss-csinode", {"spec": {"drivers": []}},
          (("spec", "drivers"), [{"name": "d.example.com", "nodeID": "n"}])),
    _case("storage.k8s.io/v1", "CSIStorageCapacity", "csistoragecapacities", True, "ss-cap",
          {"storageClassName": "x", "capacity": "1Gi"}, (("capacity",), "2Gi")),
    _case("storage.k8s.io/v1", "StorageClass", "storageclasses", False, "ss-sc", {"provisioner": "d.example.com"},
          (("allowVolumeExpansion",), True)),
    _case("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False, "ss-pc", {"value": 10},
          (("description",), "d")),
    _case("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", True, "ss-eps",
          {"addressType": "IPv4", "endpoints": []}, (("endpoints",), [{"addresses": ["10.1.1.1"]}])),
    _case("resource.k8s.io/v1", "ResourceClaim", "resourceclaims", True, "ss-claim",
          {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}}},
          (("metadata", "annotations"), {"a": "b"})),
    _case("resource.k8s.io/v1", "DeviceClass", "deviceclasses", False, "ss-dc", {"spec": {}},
          (("spec", "selectors"), [{"cel": {"expression": "true"}}])),
    _case("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings",
          False, "ss-vapb", {"spec": {"policyName": "ss-none", "validationActions": ["Warn"]}},
          (("spec", "validationActions"), ["Audit"])),
    _case("storagemigration.k8s.io/v1", "StorageVersionMigration", "storageversionmigrations", False, "ss-svm",
          {"spec": {"resource": {"group": "apps", "resource": "deployments"}}},
          (("metadata", "annotations"), {"a": "b"})),
    _case("rbac.authorization.k8s.io/v1", "Role", "roles", True, "ss-role", {"rules": []},
          (("rules",), [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])),
]

REFUSED = ("Lease", "PodDisruptionBudget", "CSIDriver", "CSINode", "CSIStorageCapacity",
           "ValidatingAdmissionPolicyBinding", "StorageVersionMigration")


def unconditional_updates(send: Send) -> dict[str, Any]:
    """Per kind: the answer to a PUT without metadata.resourceVersion (a label added)."""
    out: dict[str, Any] = {}
    for path, obj, _ in CASES:
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


def generations(send: Send) -> dict[str, list[Any]]:
    """Per kind: metadata.generation after a create, a label change, a spec change, a label change."""
    out: dict[str, list[Any]] = {}
    for path, obj, (keys, value) in CASES:
        url = f"{path}/{obj['metadata']['name']}-g"
        send("DELETE", url, None)
        code, cur, _ = send("POST", path, {**obj, "metadata": {"name": obj["metadata"]["name"] + "-g"}})
        assert code == 201, (obj["kind"], cur)
        seen = [cur["metadata"].get("generation")]
        for step in ("label", "spec", "label"):
            for _attempt in range(5):  # a controller (kube-controller-manager's disruption one) may write in between
                code, cur, _ = send("GET", url, None)
                sent = copy.deepcopy(cur)
                if step == "label":
                    sent["metadata"]["labels"] = {"step": str(len(seen))}
                else:
                    target = sent
                    for key in keys[:-1]:
                        target = target.setdefault(key, {})
                    target[keys[-1]] = value
                code, cur, _ = send("PUT", url, sent)
                if code != 409:
                    break
            assert code == 200, (obj["kind"], step, cur)
            seen.append(cur["metadata"].get("generation"))
        out[obj["kind"]] = seen
        send("DELETE", url, None)
    return out


GENERATIONS = {
    "PodDisruptionBudget": [1, 1, 2, 2], "DeviceClass": [1, 1, 2, 2], "ValidatingAdmissionPolicyBinding": [1, 1, 2, 2],
    "CSIDriver": [None, None, 1, 1], "PriorityClass": [1, 1, 1, 1], "EndpointSlice": [1, 2, 3, 4],
}
"""What kube-apiserver v1.37.2 answered for these kinds; every other kind here has no generation."""


def test_generation_per_kind(api_daemon: Daemon) -> None:
    got = generations(daemon_send(api_daemon))
    assert got == {obj["kind"]: GENERATIONS.get(obj["kind"], [None] * 4) for _, obj, _ in CASES}


@pytest.mark.kube_apiserver
def test_the_same_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    theirs_send = _sender(kube_apiserver.url, kube_apiserver._ssl(), {})
    ours = {**unconditional_updates(daemon_send(api_daemon)),
            **{f"{k} generation": v for k, v in generations(daemon_send(api_daemon)).items()}}
    theirs = {**unconditional_updates(theirs_send),
              **{f"{k} generation": v for k, v in generations(theirs_send).items()}}
    differ = [(k, ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]]
    assert not differ, "\n".join(f"{k}:\n ours   {a}\n theirs {b}" for k, a, b in differ)
