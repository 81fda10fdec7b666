"""The kinds kube-controller-manager's default controllers list beyond the workload, core and storage
ones (autoscaling/v2 HorizontalPodAutoscaler, admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy
and binding, certificates.k8s.io/v1 CertificateSigningRequest and PodCertificateRequest,
networking.k8s.io/v1 ServiceCIDR and IPAddress, storagemigration.k8s.io/v1 StorageVersionMigration,
storage.k8s.io/v1 VolumeAttributesClass), through kubectl and the Python kubernetes client against a
running daemon's API: create, get (table and JSON), list, watch, patch, server-side apply, delete,
discovery, a CSR's approval subresource; and, when the kube-apiserver tier runs
(NODEAGENT_KUBE_APISERVER=1), the same tables and discovery entries as the real kube-apiserver's.
"""

from __future__ import annotations

import base64
import json
import shutil
from dataclasses import dataclass
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


def _csr_pem() -> str:
    """A real PKCS#10 request (kube-apiserver parses it), base64 as the JSON field carries it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    csr = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kk-user")])).sign(key, hashes.SHA256())
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def _stub_csr() -> str:
    """An empty Ed25519 PKCS#10 request in DER, as the kubelet makes a PodCertificateRequest's
    stubPKCS10Request (kube-apiserver checks its key type and signature)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    csr = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([])).sign(
        ed25519.Ed25519PrivateKey.generate(), None)
    return base64.b64encode(csr.public_bytes(serialization.Encoding.DER)).decode()


@dataclass(frozen=True)
class Case:
    obj: dict[str, Any]
    plural: str
    header: list[str]
    row: list[str]
    patch: dict[str, Any]
    patched: tuple[tuple[str | int, ...], Any]
    namespace: str = ""
    compare: bool = True  # its table compared with the real kube-apiserver's (a PodCertificateRequest needs a real
    # pod and node there)

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


def _meta(name: str, namespace: str = "") -> dict[str, Any]:
    return {"name": name, **({"namespace": namespace} if namespace else {})}


HPA = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": _meta("kk-hpa", "default"),
       "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 4,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                    "type": "Utilization", "averageUtilization": 60}}}]}}
VAP = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
       "metadata": _meta("kk-vap"),
       "spec": {"failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                        "operations": ["CREATE", "UPDATE"],
                                                        "resources": ["deployments"]}]},
                "validations": [{"expression": "object.spec.replicas <= 5"}]}}
VAPB = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": _meta("kk-vapb"),
        "spec": {"policyName": "kk-vap", "validationActions": ["Deny"],
                 "paramRef": {"name": "p1", "namespace": "default", "parameterNotFoundAction": "Allow"}}}
CSR = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": _meta("kk-csr"),
       "spec": {"request": _csr_pem(), "signerName": "example.com/signer", "usages": ["client auth"],
                "expirationSeconds": 3600}}
PCR = {"apiVersion": "certificates.k8s.io/v1", "kind": "PodCertificateRequest",
       "metadata": _meta("kk-pcr", "default"),
       "spec": {"signerName": "example.com/pods", "podName": "p", "podUID": "u1", "serviceAccountName": "default",
                "serviceAccountUID": "u2", "nodeName": "n1", "nodeUID": "u3",
                "stubPKCS10Request": _stub_csr()}}
SERVICE_CIDR = {"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": _meta("kk-cidr"),
                "spec": {"cidrs": ["10.200.0.0/24"]}}
IP_ADDRESS = {"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress", "metadata": _meta("10.200.0.7"),
              "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "web"}}}
SVM = {"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration", "metadata": _meta("kk-svm"),
       "spec": {"resource": {"group": "apps", "resource": "deployments"}}}
VAC = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass", "metadata": _meta("kk-vac"),
       "driverName": "csi.example.com", "parameters": {"iops": "300"}}

CASES = [
    Case(HPA, "horizontalpodautoscalers", ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"],
         ["kk-hpa", "Deployment/web", "cpu:", "<unknown>/60%", "1", "4", "0"], {"spec": {"maxReplicas": 5}},
         (("spec", "maxReplicas"), 5), namespace="default"),
    Case(VAP, "validatingadmissionpolicies", ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"], ["kk-vap", "1", "<unset>"],
         {"spec": {"failurePolicy": "Ignore"}}, (("spec", "failurePolicy"), "Ignore")),
    Case(VAPB, "validatingadmissionpolicybindings", ["NAME", "POLICYNAME", "PARAMREF", "AGE"],
         # Audit, not Warn: the apply below keeps kubectl's Deny beside the patch's action (a set), and Deny
         # with Warn is refused by the binding's validation (as kube-apiserver refuses it)
         ["kk-vapb", "kk-vap", "default/p1"], {"spec": {"validationActions": ["Audit"]}},
         (("spec", "validationActions"), ["Audit"])),
    Case(CSR, "certificatesigningrequests",
         ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"],
         ["kk-csr"], {"metadata": {"annotations": {"a": "b"}}}, (("metadata", "annotations", "a"), "b")),
    Case(PCR, "podcertificaterequests", ["NAME", "PODNAME", "SERVICEACCOUNTNAME", "NODENAME", "SIGNERNAME", "STATE"],
         ["kk-pcr", "p", "default", "n1", "example.com/pods", "Pending"],
         {"metadata": {"labels": {"a": "b"}}}, (("metadata", "labels", "a"), "b"), namespace="default",
         compare=False),
    Case(SERVICE_CIDR, "servicecidrs", ["NAME", "CIDRS", "AGE"], ["kk-cidr", "10.200.0.0/24"],
         {"metadata": {"labels": {"a": "b"}}}, (("metadata", "labels", "a"), "b")),
    Case(IP_ADDRESS, "ipaddresses", ["NAME", "PARENTREF"], ["10.200.0.7", "services/default/web"],
         {"metadata": {"labels": {"a": "b"}}}, (("metadata", "labels", "a"), "b")),
    # not compared: the real cluster's kube-controller-manager starts the migration at once (Running)
    Case(SVM, "storageversionmigrations", ["NAME", "RESOURCE", "STATUS"], ["kk-svm", "deployments.apps", "Unknown"],
         {"metadata": {"labels": {"a": "b"}}}, (("metadata", "labels", "a"), "b"), compare=False),
    Case(VAC, "volumeattributesclasses", ["NAME", "DRIVERNAME", "AGE"], ["kk-vac", "csi.example.com"],
         {"metadata": {"labels": {"a": "b"}}}, (("metadata", "labels", "a"), "b")),
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
    api_daemon.kubectl("patch", case.resource, case.name, *ns, "--type=merge", "-p", json.dumps(case.patch))
    got = json.loads(api_daemon.kubectl("get", case.resource, case.name, *ns, "-o", "json").stdout)
    assert got["kind"] == case.kind and got["metadata"]["uid"] and got["metadata"]["creationTimestamp"]
    assert _at(got, case.patched[0]) == case.patched[1]
    labelled = {**case.obj, "metadata": {**case.obj["metadata"], "labels": {"applied": "yes"}}}
    out = api_daemon.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=yaml.safe_dump(labelled))
    assert out.stdout.strip().endswith("serverside-applied")
    got = json.loads(api_daemon.kubectl("get", case.resource, case.name, *ns, "-o", "json",
                                        "--show-managed-fields").stdout)
    assert got["metadata"]["labels"]["applied"] == "yes"
    assert "kubectl" in {m["manager"] for m in got["metadata"]["managedFields"]}
    out = api_daemon.kubectl("delete", case.resource, case.name, *ns)
    assert out.stdout.strip() == f'{kind}.{case.api_version.rpartition("/")[0]} "{case.name}" deleted'


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_python_client_create_list_watch_patch_delete(api_daemon: Daemon, case: Case) -> None:
    client = dynamic.DynamicClient(config.new_client_from_config(str(api_daemon.kubeconfig)))
    api = client.resources.get(api_version=case.api_version, kind=case.kind)
    name = "10.200.0.8" if case.kind == "IPAddress" else case.name + "-py"
    ns = {"namespace": case.namespace} if case.namespace else {}
    created = api.create(body={**case.obj, "metadata": {**case.obj["metadata"], "name": name}}, **ns)
    assert name in [i.metadata.name for i in api.get(**ns).items]
    api.patch(name=name, body={"metadata": {"labels": {"patched": "yes"}}},
              content_type="application/merge-patch+json", **ns)
    seen: list[tuple[str, str]] = []
    for event in api.watch(resource_version=created.metadata.resourceVersion, timeout=3, **ns):
        seen.append((event["type"], event["object"].metadata.name))
        labels = event["object"].metadata.labels
        # a controller's status write may come first (a ValidatingAdmissionPolicy's observedGeneration and
        # typeChecking, as kube-controller-manager writes them): the patch's event is the one with the label
        if event["type"] == "MODIFIED" and labels and labels.to_dict().get("patched") == "yes":
            seen.append(("PATCHED", name))
            break
    assert ("PATCHED", name) in seen
    api.delete(name=name, **ns)
    assert name not in [i.metadata.name for i in api.get(**ns).items]


def test_kubectl_certificate_approve_writes_only_the_condition(api_daemon: Daemon) -> None:
    """`kubectl certificate approve` (PUT .../approval): the Approved condition lands, the table says so;
    a spec change sent along the approval is not written (csrApprovalStrategy)."""
    csr = {**CSR, "metadata": _meta("kk-approve")}
    api_daemon.kubectl("create", "-f", "-", input=yaml.safe_dump(csr))
    api_daemon.kubectl("certificate", "approve", "kk-approve")
    got = json.loads(api_daemon.kubectl("get", "csr", "kk-approve", "-o", "json").stdout)
    assert [(c["type"], c["status"]) for c in got["status"]["conditions"]] == [("Approved", "True")]
    table = api_daemon.kubectl("get", "csr", "kk-approve").stdout.splitlines()
    assert table[1].split()[-1] == "Approved"
    got["spec"]["signerName"] = "example.com/other"
    got["status"]["conditions"][0]["reason"] = "Manual"
    send = daemon_sender(api_daemon)
    code, body = send("PUT", "/apis/certificates.k8s.io/v1/certificatesigningrequests/kk-approve/approval", got,
                      "application/json")
    assert code == 200, body
    assert body["spec"]["signerName"] == "example.com/signer"
    assert body["status"]["conditions"][0]["reason"] == "Manual"
    api_daemon.kubectl("delete", "csr", "kk-approve")


def _discovered(send: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for gv in sorted({c.api_version for c in CASES}):
        code, doc = send("GET", f"/apis/{gv}", None, "application/json")
        assert code == 200, doc
        plurals = {c.plural for c in CASES if c.api_version == gv}
        for r in doc["resources"]:
            if r["name"].partition("/")[0] in plurals:
                out[f"{gv} {r['name']}"] = (r["namespaced"], r["kind"], sorted(r["verbs"]), r.get("shortNames"),
                                            r.get("categories"), r.get("singularName"))
    return out


def test_discovery_lists_the_kinds(api_daemon: Daemon) -> None:
    wide = api_daemon.kubectl("api-resources", "-o", "wide").stdout.splitlines()
    rows = {line.split()[0]: line for line in wide[1:]}
    for case in CASES:
        assert case.kind in rows[case.plural].split()
    found = _discovered(daemon_sender(api_daemon))
    assert "certificates.k8s.io/v1 certificatesigningrequests/approval" in found
    assert found["autoscaling/v2 horizontalpodautoscalers"][3] == ["hpa"]


@pytest.mark.kube_apiserver
def test_discovery_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    assert _discovered(daemon_sender(api_daemon)) == _discovered(kube_sender(kube_apiserver))


@pytest.mark.kube_apiserver
@pytest.mark.timeout(180)  # ~30 kubectl runs against both servers: 19 s on a quiet machine, over 60 s on a busy one
def test_tables_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    """The same object created on both servers prints the same `kubectl get` row (the age aside)."""
    def row(kubectl: Any, case: Case) -> list[list[str]]:
        ns = ["-n", case.namespace] if case.namespace else []
        lines = kubectl("get", case.resource, case.name, *ns).stdout.splitlines()
        header = lines[0].split()
        cut = header.index("AGE") if "AGE" in header else len(header)
        return [header, lines[1].split()[:cut + (1 if case.kind == "HorizontalPodAutoscaler" else 0)]]

    for case in CASES:
        if not case.compare:
            continue
        obj = {**case.obj, "metadata": {**case.obj["metadata"], "name": case.name if case.kind == "IPAddress"
                                        else case.name + "-cmp"}}
        if case.kind == "IPAddress":
            obj["metadata"]["name"] = "10.200.0.9"
        try:
            for kubectl in (api_daemon.kubectl, kube_apiserver.kubectl):
                kubectl("create", "-f", "-", input=yaml.safe_dump(obj))
            c = Case(obj, case.plural, case.header, case.row, case.patch, case.patched, case.namespace)
            ours, theirs = row(api_daemon.kubectl, c), row(kube_apiserver.kubectl, c)
            if case.kind == "HorizontalPodAutoscaler":
                ours[1], theirs[1] = ours[1][:-1], theirs[1][:-1]  # the age
            assert ours == theirs, case.kind
        finally:
            ns = ["-n", case.namespace] if case.namespace else []
            for kubectl in (api_daemon.kubectl, kube_apiserver.kubectl):
                kubectl("delete", case.resource, obj["metadata"]["name"], *ns, "--ignore-not-found")
