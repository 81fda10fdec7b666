"""Upstream's validation of networking.k8s.io/v1 ServiceCIDR and IPAddress, storage.k8s.io/v1
VolumeAttributesClass and storagemigration.k8s.io/v1 StorageVersionMigration
(pkg/apis/networking/validation, pkg/apis/storage/validation), creates and updates, through the REST
API: each refused with kube-apiserver's code, reason, message and details; compared with the real
kube-apiserver when that tier runs (NODEAGENT_KUBE_APISERVER=1).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import Send, daemon_sender, kube_sender

pytestmark = [pytest.mark.integration]

JSON, MERGE = "application/json", "application/merge-patch+json"
CIDRS = "/apis/networking.k8s.io/v1/servicecidrs"
IPS = "/apis/networking.k8s.io/v1/ipaddresses"
SVMS = "/apis/storagemigration.k8s.io/v1/storageversionmigrations"
PARENT = {"group": "", "resource": "services", "namespace": "default", "name": "web"}
VACS = "/apis/storage.k8s.io/v1/volumeattributesclasses"
CIDR_OK = "10.202.0.0/24"
VAC_OK = {"driverName": "example.com", "parameters": {"iops": "3"}}


def _cidr(*cidrs: str) -> dict[str, Any]:
    return {"metadata": {"name": "kv-cidr"}, "spec": {"cidrs": list(cidrs)}}


CREATES: list[tuple[str, dict[str, Any], str]] = [
    (CIDRS, _cidr(), 'spec.cidrs: Required value: at least one CIDR required'),
    (CIDRS, _cidr("10.0.0.0/24", "10.1.0.0/24", "fd00::/64"),
     'spec.cidrs: Invalid value: {"CIDRs":["10.0.0.0/24","10.1.0.0/24","fd00::/64"]}: may only hold up to 2 values'),
    (CIDRS, _cidr("10.0.0.1/24"), 'spec.cidrs[0]: Invalid value: "10.0.0.1/24": must not have bits set beyond the '
                                  'prefix length'),
    (CIDRS, _cidr("010.0.0.0/24"), 'spec.cidrs[0]: Invalid value: "010.0.0.0/24": must not have leading 0s in IP or '
                                   'prefix length'),
    (CIDRS, _cidr("10.0.0.0/024"), 'spec.cidrs[0]: Invalid value: "10.0.0.0/024": must not have leading 0s in IP or '
                                   'prefix length'),
    (CIDRS, _cidr("::ffff:10.0.0.0/120"), 'spec.cidrs[0]: Invalid value: "::ffff:10.0.0.0/120": must not have an '
                                          'IPv4-mapped IPv6 address'),
    (CIDRS, _cidr("10.0.0.0/24", "10.1.0.0/24"), 'spec.cidrs: Invalid value: ["10.0.0.0/24","10.1.0.0/24"]: may '
     'specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64'),
    (CIDRS, _cidr("x"), 'spec.cidrs[0]: Invalid value: "x": must be a valid CIDR value, (e.g. 10.9.8.0/24 or '
                        '2001:db8::/64)'),
    (CIDRS, _cidr("10.0.0.0"), 'spec.cidrs[0]: Invalid value: "10.0.0.0": must be a valid CIDR value, (e.g. '
                               '10.9.8.0/24 or 2001:db8::/64)'),
    (CIDRS, _cidr("2001:DB8::/64"), 'spec.cidrs[0]: Invalid value: "2001:DB8::/64": must be in canonical form '
                                    '("2001:db8::/64")'),
    (IPS, {"metadata": {"name": "10.0.0.300"}, "spec": {"parentRef": PARENT}},
     'metadata.name: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
    (IPS, {"metadata": {"name": "kv-ip"}, "spec": {"parentRef": PARENT}},
     'metadata.name: Invalid value: "kv-ip": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
    (IPS, {"metadata": {"name": "010.0.0.1"}, "spec": {"parentRef": PARENT}},
     'metadata.name: Invalid value: "010.0.0.1": must not have leading 0s'),
    (IPS, {"metadata": {"name": "2001:DB8::7"}, "spec": {"parentRef": PARENT}},
     'metadata.name: Invalid value: "2001:DB8::7": must be in canonical form ("2001:db8::7")'),
    (IPS, {"metadata": {"name": "::ffff:10.0.0.1"}, "spec": {"parentRef": PARENT}},
     'metadata.name: Invalid value: "::ffff:10.0.0.1": must not be an IPv4-mapped IPv6 address'),
    (IPS, {"metadata": {"name": "10.0.0.7"}, "spec": {}}, "spec.parentRef: Required value"),
    (IPS, {"metadata": {"name": "10.0.0.7"}, "spec": {"parentRef": {**PARENT, "resource": ""}}},
     "spec.parentRef.resource: Required value"),
    (IPS, {"metadata": {"name": "10.0.0.7"}, "spec": {"parentRef": {**PARENT, "name": "a/b"}}},
     "spec.parentRef.name: Invalid value: \"a/b\": may not contain '/'"),
    (IPS, {"metadata": {"name": "10.0.0.7"}, "spec": {"parentRef": {**PARENT, "group": "Bad_Group"}}},
     'spec.parentRef.group: Invalid value: "Bad_Group": a lowercase RFC 1123 subdomain must consist of lower case '
     "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
     "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    (SVMS, {"metadata": {"name": "kv-svm"}, "spec": {}},
     "spec.resource.resource: Required value: resource is required to be set"),
    (SVMS, {"metadata": {"name": "kv-svm"}, "spec": {"resource": {"resource": "Deploy"}}},
     'spec.resource.resource: Invalid value: "Deploy": a DNS-1035 label must consist of lower case alphanumeric '
     "characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. "
     "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"),
    (SVMS, {"metadata": {"name": "kv-svm"}, "spec": {"resource": {"resource": "deployments", "group": "A_b"}}},
     'spec.resource.group: Invalid value: "A_b": a lowercase RFC 1123 subdomain must consist of lower case '
     "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
     "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    (VACS, {"metadata": {"name": "kv-vac"}, "driverName": "", "parameters": {"a": "b"}}, "driverName: Required value"),
    (VACS, {"metadata": {"name": "kv-vac"}, "driverName": "Bad_Driver!", "parameters": {"a": "b"}},
     'driverName: Invalid value: "bad_driver!": name part must consist of alphanumeric characters, \'-\', \'_\' or '
     "'.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
     "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    (VACS, {"metadata": {"name": "kv-vac"}, "driverName": "example.com"},
     "parameters: Required value: must contain at least one key/value pair"),
    (VACS, {"metadata": {"name": "kv-vac"}, "driverName": "example.com", "parameters": {"": "b"}},
     'parameters: Invalid value: "": field can not be empty.'),
]
# (collection, valid object, merge patch, the refusal)
UPDATES: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    (CIDRS, _cidr(CIDR_OK), {"spec": {"cidrs": ["10.203.0.0/24"]}},
     'spec.cidrs[0]: Invalid value: "10.203.0.0/24": field is immutable'),
    (CIDRS, _cidr(CIDR_OK), {"spec": {"cidrs": ["10.203.0.0/24", "fd00::/64"]}},
     'spec.cidrs[0]: Invalid value: "10.203.0.0/24": field is immutable'),
    (CIDRS, _cidr(CIDR_OK), {"spec": {"cidrs": [CIDR_OK, "10.204.0.0/24"]}},
     'spec.cidrs: Invalid value: ["10.202.0.0/24","10.204.0.0/24"]: may specify no more than one IP for each IP '
     "family, i.e 192.168.0.0/24 and 2001:db8::/64"),
    (CIDRS, _cidr(CIDR_OK, "fd00::/64"), {"spec": {"cidrs": [CIDR_OK]}},
     'spec.cidrs: Invalid value: ["10.202.0.0/24"]: field is immutable'),
    (IPS, {"metadata": {"name": "2001:db8::7"}, "spec": {"parentRef": PARENT}},
     {"spec": {"parentRef": {"name": "other"}}},
     "spec.parentRef: Invalid value: null: field is immutable"),
    (SVMS, {"metadata": {"name": "kv-svm"}, "spec": {"resource": {"group": "apps", "resource": "deployments"}}},
     {"spec": {"resource": {"resource": "replicasets"}}},
     'spec: Invalid value: {"Resource":{"group":"apps","resource":"replicasets"}}: field is immutable'),
    (VACS, {"metadata": {"name": "kv-vac"}, **VAC_OK}, {"driverName": "example.org"},
     "driverName: Forbidden: updates to driverName are forbidden."),
    (VACS, {"metadata": {"name": "kv-vac"}, **VAC_OK}, {"parameters": {"iops": "4"}},
     "parameters: Forbidden: updates to parameters are forbidden."),
]


def _refusal(code: int, body: Any) -> Any:
    return code, body.get("reason"), body.get("message"), body.get("details")


def _answers(send: Send, tag: str) -> list[Any]:
    out = [_refusal(*send("POST", path, obj, JSON)) for path, obj, _ in CREATES]
    # each its own name: kube-controller-manager's service-cidr controller keeps a deleted ServiceCIDR
    # (its finalizer) while it looks for IPAddresses in it
    for i, (path, obj, patch, _) in enumerate(UPDATES):
        name = obj["metadata"]["name"] if path == IPS else f"{obj['metadata']['name']}-{tag}{i}"
        code, made = send("POST", path, {**obj, "metadata": {"name": name}}, JSON)
        assert code == 201, made
        code, body = send("PATCH", f"{path}/{name}", patch, MERGE)
        out.append(_refusal(code, body) if code >= 300 else code)
        send("DELETE", f"{path}/{name}", None, JSON)
    # a single-stack ServiceCIDR may gain the other family
    name = f"kv-cidr-{tag}"
    send("POST", CIDRS, {**_cidr(CIDR_OK), "metadata": {"name": name}}, JSON)
    out.append(send("PATCH", f"{CIDRS}/{name}", {"spec": {"cidrs": [CIDR_OK, "fd00:1::/64"]}}, MERGE)[0])
    send("DELETE", f"{CIDRS}/{name}", None, JSON)
    return out


def test_refusals(api_daemon: Daemon) -> None:
    got = _answers(daemon_sender(api_daemon), "a")
    want = [m for _, _, m in CREATES] + [m for *_, m in UPDATES]
    names = [c[1]["metadata"]["name"] for c in CREATES] + [
        u[1]["metadata"]["name"] if u[0] == IPS else f"{u[1]['metadata']['name']}-a{i}" for i, u in enumerate(UPDATES)]
    for (code, reason, message, details), text, path, name in zip(got, want, [c[0] for c in CREATES + UPDATES],
                                                                  names, strict=False):
        kind = {CIDRS: "ServiceCIDR.networking.k8s.io", IPS: "IPAddress.networking.k8s.io",
                SVMS: "StorageVersionMigration.storagemigration.k8s.io"}.get(
            path, "VolumeAttributesClass.storage.k8s.io")
        assert (code, reason, message) == (422, "Invalid", f'{kind} "{name}" is invalid: {text}')
        assert details["causes"][0]["field"] == text.split(":")[0]
    assert got[-1] == 200


@pytest.mark.kube_apiserver
def test_refusals_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    assert _answers(daemon_sender(api_daemon), "b") == _answers(kube_sender(kube_apiserver), "b")
