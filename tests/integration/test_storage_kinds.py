"""The storage.k8s.io, policy, scheduling.k8s.io and discovery.k8s.io kinds the real kube-scheduler
lists, through kubectl and the Python kubernetes client against a running daemon's API: create,
get (table and JSON), list, watch, patch, server-side apply, delete, discovery; and refused writes
with kube-apiserver's texts, identical to the real kube-apiserver's answers when that tier runs
(NODEAGENT_KUBE_APISERVER=1).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import daemon_sender, kube_sender

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import config, dynamic  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]


@dataclass(frozen=True)
class Case:
    """One kind: a valid object, kubectl's table for it, a merge patch and what it changes, and an
    invalid object with the message kube-apiserver answers it with."""

    obj: dict[str, Any]
    plural: str
    header: list[str]
    row: list[str]
    patch: dict[str, Any]
    patched: tuple[tuple[str | int, ...], Any]
    invalid: dict[str, Any]
    message: str
    short: str = ""
    namespace: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def api_version(self) -> str:
        return str(self.obj["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def resource(self) -> str:
        return f"{self.plural}.{self.api_version.rpartition('/')[0]}"

    def path(self, name: str = "") -> str:
        ns = f"/namespaces/{self.namespace}" if self.namespace else ""
        return f"/apis/{self.api_version}{ns}/{self.plural}" + (f"/{name}" if name else "")


def _with(obj: dict[str, Any], name: str, **top: Any) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "name": name}, **top}


CSINODE = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "sk-node"},
           "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1", "topologyKeys": ["zone"],
                                 "allocatable": {"count": 4}}]}}

CASES = [
    Case(CSINODE, "csinodes", ["NAME", "DRIVERS", "AGE"], ["sk-node", "1"],
         {"spec": {"drivers": [{"name": "other.example.com", "nodeID": "n1"}]}},
         (("spec", "drivers", 0, "name"), "other.example.com"),
         _with(CSINODE, "sk-node-bad", spec={"drivers": [{"name": "csi.example.com", "nodeID": ""}]}),
         'CSINode.storage.k8s.io "sk-node-bad" is invalid: spec.drivers[0].nodeID: Required value'),
]
CSIDRIVER = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "sk.csi.example.com"},
             "spec": {"attachRequired": False, "volumeLifecycleModes": ["Persistent", "Ephemeral"]}}
STORAGECLASS = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sk-fast"},
                "provisioner": "sk.csi.example.com", "volumeBindingMode": "WaitForFirstConsumer",
                "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]}
CAPACITY = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
            "metadata": {"name": "sk-cap", "namespace": "default"}, "storageClassName": "sk-fast",
            "capacity": "10Gi", "nodeTopology": {"matchLabels": {"zone": "a"}}}
ATTACHMENT = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "sk-va"},
              "spec": {"attacher": "sk.csi.example.com", "nodeName": "node-a",
                       "source": {"persistentVolumeName": "pv-1"}}}
CASES += [
    Case(CSIDRIVER, "csidrivers",
         ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS", "REQUIRESREPUBLISH",
          "MODES", "AGE"],
         ["sk.csi.example.com", "false", "false", "false", "<unset>", "false", "Persistent,Ephemeral"],
         {"spec": {"podInfoOnMount": True}}, (("spec", "podInfoOnMount"), True),
         _with(CSIDRIVER, "bad.csi.example.com", spec={"fsGroupPolicy": "Sometimes"}),
         'CSIDriver.storage.k8s.io "bad.csi.example.com" is invalid: spec.fsGroupPolicy: Unsupported value: '
         '"Sometimes": supported values: "File", "None", "ReadWriteOnceWithFSType"'),
    Case(STORAGECLASS, "storageclasses",
         ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"],
         ["sk-fast", "sk.csi.example.com", "Delete", "WaitForFirstConsumer", "false"],
         {"allowVolumeExpansion": True}, (("allowVolumeExpansion",), True),
         _with(STORAGECLASS, "sk-bad", reclaimPolicy="Recycle"),
         'StorageClass.storage.k8s.io "sk-bad" is invalid: reclaimPolicy: Unsupported value: "Recycle": '
         'supported values: "Delete", "Retain"', short="sc"),
    Case(CAPACITY, "csistoragecapacities", ["NAME", "STORAGECLASSNAME", "CAPACITY"], ["sk-cap", "sk-fast", "10Gi"],
         {"capacity": "5Gi"}, (("capacity",), "5Gi"),
         _with(CAPACITY, "sk-cap-bad", capacity="-1"),
         'CSIStorageCapacity.storage.k8s.io "sk-cap-bad" is invalid: capacity: Invalid value: "-1": '
         "must be greater than or equal to 0", namespace="default"),
    Case(ATTACHMENT, "volumeattachments", ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"],
         ["sk-va", "sk.csi.example.com", "pv-1", "node-a", "false"],
         {"metadata": {"annotations": {"note": "x"}}}, (("metadata", "annotations", "note"), "x"),
         _with(ATTACHMENT, "sk-va-bad", spec={"attacher": "sk.csi.example.com", "nodeName": "node-a", "source": {}}),
         'VolumeAttachment.storage.k8s.io "sk-va-bad" is invalid: spec.source: Required value: '
         "must specify exactly one of inlineVolumeSpec and persistentVolumeName"),
]
PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "sk-pdb", "namespace": "default"},
       "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}
PRIORITY = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "sk-high"},
            "value": 1000, "description": "high"}
SLICE = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "sk-web-abc", "namespace": "default", "labels": {"kubernetes.io/service-name": "web"}},
         "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": True}}],
         "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}
CASES += [
    Case(PDB, "poddisruptionbudgets",
         ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"],
         ["sk-pdb", "2", "N/A", "0"], {"spec": {"minAvailable": "50%"}}, (("spec", "minAvailable"), "50%"),
         _with(PDB, "sk-pdb-bad", spec={"maxUnavailable": "150%"}),
         'PodDisruptionBudget.policy "sk-pdb-bad" is invalid: spec.maxUnavailable: Invalid value: "150%": '
         "must not be greater than 100%", short="pdb", namespace="default"),
    Case(PRIORITY, "priorityclasses", ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"],
         ["sk-high", "1000", "false"], {"description": "higher"}, (("description",), "higher"),
         _with(PRIORITY, "sk-too-high", value=1_000_000_001),
         'PriorityClass.scheduling.k8s.io "sk-too-high" is invalid: value: Forbidden: maximum allowed value of a '
         "user defined priority is 1000000000", short="pc"),
    Case(SLICE, "endpointslices", ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
         ["sk-web-abc", "IPv4", "80", "10.1.0.5"],
         {"endpoints": [{"addresses": ["10.1.0.6"]}]}, (("endpoints", 0, "addresses", 0), "10.1.0.6"),
         _with(SLICE, "sk-web-bad", endpoints=[{"addresses": ["127.0.0.1"]}]),
         'EndpointSlice.discovery.k8s.io "sk-web-bad" is invalid: endpoints[0].addresses[0]: Invalid value: '
         '"127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)', namespace="default"),
]
IDS = [c.kind for c in CASES]


def _at(obj: Any, keys: tuple[str | int, ...]) -> Any:
    for key in keys:
        obj = obj[key]
    return obj


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_kubectl_create_get_patch_apply_delete(api_daemon: Daemon, case: Case) -> None:
    kind, ns = case.kind.lower(), (["-n", case.namespace] if case.namespace else [])
    out = api_daemon.kubectl("create", "-f", "-", input=yaml.safe_dump(case.obj))
    assert out.stdout.strip() == f"{kind}.{case.api_version.rpartition('/')[0]}/{case.name} created"
    table = api_daemon.kubectl("get", case.resource, case.name, *ns).stdout.splitlines()
    assert table[0].split() == case.header
    assert table[1].split()[:len(case.row)] == case.row
    got = json.loads(api_daemon.kubectl("get", case.short or case.resource, case.name, *ns, "-o", "json").stdout)
    assert got["kind"] == case.kind and got["metadata"]["uid"] and got["metadata"]["creationTimestamp"]
    api_daemon.kubectl("patch", case.resource, case.name, *ns, "--type=merge", "-p", json.dumps(case.patch))
    got = json.loads(api_daemon.kubectl("get", case.resource, case.name, *ns, "-o", "json").stdout)
    assert _at(got, case.patched[0]) == case.patched[1]
    labelled = {**case.obj, "metadata": {**case.obj["metadata"], "labels": {"applied": "yes"}}}
    out = api_daemon.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=yaml.safe_dump(labelled))
    assert out.stdout.strip().endswith("serverside-applied")
    got = json.loads(api_daemon.kubectl("get", case.resource, case.name, *ns, "-o", "json",
                                        "--show-managed-fields").stdout)
    assert got["metadata"]["labels"]["applied"] == "yes"
    assert "kubectl" in {m["manager"] for m in got["metadata"]["managedFields"]}
    bad = api_daemon.kubectl("create", "-f", "-", input=yaml.safe_dump(case.invalid), check=False)
    # kubectl prints `The <Kind> "<name>" is invalid: ` before the causes
    assert bad.returncode == 1 and case.message.partition(" is invalid: ")[2] in bad.stderr
    out = api_daemon.kubectl("delete", case.resource, case.name, *ns)
    assert out.stdout.strip() == f'{kind}.{case.api_version.rpartition("/")[0]} "{case.name}" deleted'


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_python_client_create_list_watch_patch_delete(api_daemon: Daemon, case: Case) -> None:
    client = dynamic.DynamicClient(config.new_client_from_config(str(api_daemon.kubeconfig)))
    api = client.resources.get(api_version=case.api_version, kind=case.kind)
    name = case.name + "-py"
    ns = {"namespace": case.namespace} if case.namespace else {}
    created = api.create(body=_with(case.obj, name), **ns)
    listed = api.get(**ns)
    assert name in [i.metadata.name for i in listed.items]
    seen: list[tuple[str, str, str]] = []
    api.patch(name=name, body={"metadata": {"labels": {"patched": "yes"}}},
              content_type="application/merge-patch+json", **ns)
    events = api.watch(resource_version=created.metadata.resourceVersion, timeout=3, **ns)
    for event in events:
        # a controller's status write may come first (the disruption controller's of a new budget): the patch's
        # MODIFIED is the one with the label
        labels = event["object"].metadata.labels or {}
        seen.append((event["type"], event["object"].metadata.name, labels.get("patched", "")))
        if event["type"] == "MODIFIED" and labels.get("patched"):
            break
    assert ("MODIFIED", name, "yes") in seen
    assert api.get(name=name, **ns).metadata.labels["patched"] == "yes"
    api.delete(name=name, **ns)
    assert name not in [i.metadata.name for i in api.get(**ns).items]


def test_discovery_lists_the_kinds(api_daemon: Daemon) -> None:
    wide = api_daemon.kubectl("api-resources", "-o", "wide").stdout.splitlines()
    rows = {line.split()[0]: line for line in wide[1:]}
    for case in CASES:
        assert case.plural in rows, case.plural
        row = rows[case.plural].split()
        assert case.kind in row
        assert ("true" if case.namespace else "false") in row
    group = json.loads(api_daemon.kubectl("get", "--raw", "/apis/storage.k8s.io/v1").stdout)
    csinodes = next(r for r in group["resources"] if r["name"] == "csinodes")
    assert not csinodes["namespaced"] and "watch" in csinodes["verbs"]
    assert {"csinodes/status", "volumeattachments/status"} <= {r["name"] for r in group["resources"]}
    sc = next(r for r in group["resources"] if r["name"] == "storageclasses")
    assert sc["shortNames"] == ["sc"]
    pdbs = json.loads(api_daemon.kubectl("get", "--raw", "/apis/policy/v1").stdout)
    assert {"poddisruptionbudgets", "poddisruptionbudgets/status"} <= {r["name"] for r in pdbs["resources"]}


def test_system_priority_classes_exist_at_start(api_daemon: Daemon) -> None:
    """kube-apiserver's scheduling/bootstrap-system-priority-classes: both exist, as upstream writes them."""
    got = json.loads(api_daemon.kubectl("get", "priorityclasses", "-o", "json").stdout)["items"]
    system = {c["metadata"]["name"]: (c["value"], c.get("globalDefault", False), c["preemptionPolicy"])
              for c in got if c["metadata"]["name"].startswith("system-")}
    assert system == {"system-node-critical": (2000001000, False, "PreemptLowerPriority"),
                      "system-cluster-critical": (2000000000, False, "PreemptLowerPriority")}


def _refusal(send: Any, case: Case) -> tuple[int, Any, Any, Any]:
    code, body = send("POST", case.path(), case.invalid, "application/json")
    return code, body.get("reason"), body.get("message"), body.get("details")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_refused_as_kube_apiserver_refuses(api_daemon: Daemon, case: Case) -> None:
    code, reason, message, details = _refusal(daemon_sender(api_daemon), case)
    assert (code, reason, message) == (422, "Invalid", case.message)
    assert details["kind"] == case.kind and details["name"] == case.invalid["metadata"]["name"]


@pytest.mark.kube_apiserver
def test_the_same_refusals_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    for case in CASES:
        assert _refusal(daemon_sender(api_daemon), case) == _refusal(kube_sender(kube_apiserver), case), case.kind


@pytest.mark.kube_apiserver
def test_system_priority_classes_as_kube_apiserver_makes_them(api_daemon: Daemon,
                                                              kube_apiserver: KubeAPIServer) -> None:
    def system(send: Any) -> list[tuple[Any, ...]]:
        code, body = send("GET", "/apis/scheduling.k8s.io/v1/priorityclasses", None, "application/json")
        assert code == 200, body
        return sorted((c["metadata"]["name"], c["value"], c.get("globalDefault"), c.get("description"),
                       c.get("preemptionPolicy")) for c in body["items"] if c["metadata"]["name"].startswith("system-"))

    assert system(daemon_sender(api_daemon)) == system(kube_sender(kube_apiserver))


_SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "managedFields")
"""Set by each server its own way (metadata.generation is compared: both set it only where the kind's
strategy does, PodDisruptionBudget and not CSINode)."""


def _created(send: Any, case: Case) -> Any:
    """The object a create answers with, less what each server sets its own way (uid, times, versions)."""
    obj = _with(case.obj, case.name + "-cmp")
    send("DELETE", case.path(obj["metadata"]["name"]), None, "application/json")
    code, body = send("POST", case.path(), obj, "application/json")
    assert code == 201, body
    send("DELETE", case.path(obj["metadata"]["name"]), None, "application/json")
    body["metadata"] = {k: v for k, v in body["metadata"].items() if k not in _SERVER_SET}
    return body


def test_created_objects_carry_upstreams_defaults(api_daemon: Daemon) -> None:
    """What kube-apiserver answers a create with (compared below when that tier runs): defaults, and
    Go's zero values encoding/json writes."""
    created = {case.kind: _created(daemon_sender(api_daemon), case) for case in CASES}
    assert created["CSINode"]["status"] == {}
    assert created["VolumeAttachment"]["status"] == {"attached": False}
    assert created["CSIDriver"]["spec"]["fsGroupPolicy"] == "ReadWriteOnceWithFSType"
    assert created["StorageClass"]["reclaimPolicy"] == "Delete"
    assert created["PriorityClass"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert created["PodDisruptionBudget"]["status"]["disruptionsAllowed"] == 0


@pytest.mark.kube_apiserver
def test_the_same_created_objects_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    differ = {}
    for case in CASES:
        ours, theirs = _created(daemon_sender(api_daemon), case), _created(kube_sender(kube_apiserver), case)
        if ours != theirs:
            differ[case.kind] = (ours, theirs)
    assert differ == {}


def test_kubectl_lists_the_default_storage_class(api_daemon: Daemon) -> None:
    annotated = {**STORAGECLASS, "metadata": {"name": "sk-default", "annotations": {
        "storageclass.kubernetes.io/is-default-class": "true"}}}
    api_daemon.kubectl("create", "-f", "-", input=yaml.safe_dump(annotated))
    try:
        rows = api_daemon.kubectl("get", "storageclasses").stdout.splitlines()[1:]
        assert "sk-default (default)" in [" ".join(r.split()[:2]) for r in rows]
        single = api_daemon.kubectl("get", "storageclass", "sk-default").stdout.splitlines()[1]
        assert single.split()[:2] == ["sk-default", "sk.csi.example.com"]
    finally:
        api_daemon.kubectl("delete", "storageclass", "sk-default")


INLINE = {"csi": {"driver": "sk.csi.example.com", "volumeHandle": "h"}, "accessModes": ["ReadWriteOnce"]}
EXTRA_REFUSALS = [
    replace(CASES[IDS.index("VolumeAttachment")], invalid=_with(ATTACHMENT, "sk-va-inline", spec={
        "attacher": "sk.csi.example.com", "nodeName": "node-a",
        "source": {"inlineVolumeSpec": {**INLINE, "capacity": {"storage": "1Gi"}}}})),
    replace(CASES[IDS.index("PriorityClass")], invalid=_with(PRIORITY, "system-node-critical", value=5)),
    replace(CASES[IDS.index("PodDisruptionBudget")], invalid=_with(PDB, "sk-pdb-both", spec={
        "minAvailable": 1, "maxUnavailable": 1})),
]


@pytest.mark.kube_apiserver
def test_more_refusals_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    for case in EXTRA_REFUSALS:
        ours = _refusal(daemon_sender(api_daemon), case)
        assert ours[0] == 422, ours
        assert ours == _refusal(kube_sender(kube_apiserver), case), case.kind


def _discovered(send: Any, group_versions: set[str], names: set[str]) -> dict[str, Any]:
    out = {}
    for gv in sorted(group_versions):
        code, body = send("GET", f"/apis/{gv}", None, "application/json")
        assert code == 200, body
        for r in body["resources"]:
            if r["name"].split("/")[0] in names:
                out[f"{gv}/{r['name']}"] = (r["namespaced"], r["kind"], sorted(r["verbs"]), r.get("shortNames"),
                                            r.get("singularName"), r.get("categories"))
    return out


@pytest.mark.kube_apiserver
def test_discovery_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    """Each kind's APIResource and its subresources (scope, kind, verbs, short names, singular,
    categories), against kube-apiserver's for the same group version."""
    gvs, names = {c.api_version for c in CASES}, {c.plural for c in CASES}
    ours = _discovered(daemon_sender(api_daemon), gvs, names)
    assert ours == _discovered(kube_sender(kube_apiserver), gvs, names)
    assert len(ours) == len(CASES) + 3  # csinodes/status, volumeattachments/status, poddisruptionbudgets/status
