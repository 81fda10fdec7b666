"""networking.k8s.io/v1 Ingress, IngressClass and NetworkPolicy: the kinds a Helm chart very often holds,
which the embedded API server once did not serve (`no matches for kind "Ingress"`). Through kubectl and
the REST API of a running daemon: apply, get (table and JSON), patch, delete, discovery, an Ingress's
/status; the defaults kube-apiserver stores and the refusals of pkg/apis/networking/validation. When
the kube-apiserver tier runs (NODEAGENT_KUBE_APISERVER=1) the stored objects, the 422 answers, the
`kubectl get` rows and the discovery entries equal the real kube-apiserver's.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import Send, daemon_sender, kube_sender

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

JSON, MERGE = "application/json", "application/merge-patch+json"
NET = "/apis/networking.k8s.io/v1"
INGS, CLASSES, POLICIES = f"{NET}/namespaces/default/ingresses", f"{NET}/ingressclasses", \
    f"{NET}/namespaces/default/networkpolicies"
SVC = {"service": {"name": "web", "port": {"number": 80}}}


def _ing(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def _rule(host: str = "a.example.com", **path: Any) -> dict[str, Any]:
    return {"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": SVC, **path}]}}


def _class(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": name}, "spec": spec}


def _np(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


INGRESS = _ing("nk-ing", ingressClassName="nginx", rules=[_rule(), _rule("b.example.com")],
               tls=[{"hosts": ["a.example.com"], "secretName": "tls"}])
INGRESS_CLASS = {**_class("nk-class", controller="example.com/ingress",
                          parameters={"apiGroup": "k8s.example.com", "kind": "Params", "name": "p"}),
                 "metadata": {"name": "nk-class",
                              "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}}}
POLICY = _np("nk-np", podSelector={"matchLabels": {"app": "web"}},
             ingress=[{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
                                {"namespaceSelector": {}, "podSelector": {"matchLabels": {"role": "fe"}}}],
                       "ports": [{"port": 80}, {"port": "http"}, {"port": 8000, "endPort": 8080, "protocol": "UDP"}]}],
             egress=[{"to": [{"podSelector": {}}]}])
OBJECTS = [(INGS, INGRESS), (CLASSES, INGRESS_CLASS), (POLICIES, POLICY),
           (POLICIES, _np("nk-np-empty", podSelector={})),
           (CLASSES, _class("nk-class-ns", controller="example.com/x",
                            parameters={"kind": "P", "name": "p", "scope": "Namespace", "namespace": "default"})),
           (INGS, _ing("nk-ing-default", defaultBackend={"resource": {"apiGroup": "k8s.example.com", "kind": "Bucket",
                                                                       "name": "static"}}))]

CREATES: list[tuple[str, dict[str, Any], str]] = [
    (INGS, _ing("nk-bad"), "spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"),
    (INGS, _ing("nk-bad", rules=[_rule("1.2.3.4")]),
     'spec.rules[0].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address'),
    (INGS, _ing("nk-bad", rules=[_rule("*.*.example.com")]),
     'spec.rules[0].host: Invalid value: "*.*.example.com": a wildcard DNS-1123 subdomain must start with \'*.\', '
     "followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and "
     "end with an alphanumeric character (e.g. '*.example.com', regex used for validation is "
     "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    (INGS, _ing("nk-bad", rules=[_rule(path="a")]), 'spec.rules[0].http.paths[0].path: Invalid value: "a": must be '
                                                   "an absolute path"),
    (INGS, _ing("nk-bad", rules=[_rule(path="/a//b")]),
     "spec.rules[0].http.paths[0].path: Invalid value: \"/a//b\": must not contain '//'"),
    (INGS, _ing("nk-bad", rules=[_rule(path="/a/..")]),
     "spec.rules[0].http.paths[0].path: Invalid value: \"/a/..\": cannot end with '/..'"),
    (INGS, _ing("nk-bad", rules=[_rule(pathType="Regex")]),
     'spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": supported values: "Exact", '
     '"ImplementationSpecific", "Prefix"'),
    (INGS, _ing("nk-bad", rules=[_rule(pathType=None)]),
     "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"),
    (INGS, _ing("nk-bad", rules=[{"host": "a.example.com", "http": {"paths": []}}]),
     "spec.rules[0].http.paths: Required value"),
    (INGS, _ing("nk-bad", defaultBackend={}),
     'spec.defaultBackend: Invalid value: "": resource or service backend is required'),
    (INGS, _ing("nk-bad", defaultBackend={**SVC, "resource": {"kind": "B", "name": "b"}}),
     'spec.defaultBackend: Invalid value: "": cannot set both resource and service backends'),
    (INGS, _ing("nk-bad", defaultBackend={"service": {"name": "web", "port": {"name": "http", "number": 80}}}),
     'spec.defaultBackend: Invalid value: "": cannot set both port name & port number'),
    (INGS, _ing("nk-bad", defaultBackend={"service": {"name": "web", "port": {}}}),
     "spec.defaultBackend: Required value: port name or number is required"),
    (INGS, _ing("nk-bad", defaultBackend={"service": {"name": "web", "port": {"number": 70000}}}),
     "spec.defaultBackend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive"),
    (INGS, _ing("nk-bad", defaultBackend={"service": {"name": "Web", "port": {"number": 80}}}),
     'spec.defaultBackend.service.name: Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case '
     "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
     "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    (INGS, _ing("nk-bad", defaultBackend={"service": {"name": "web", "port": {"name": "a--b"}}}),
     'spec.defaultBackend.service.port.name: Invalid value: "a--b": must not contain consecutive hyphens'),
    (INGS, _ing("nk-bad", defaultBackend={"resource": {"kind": "a/b", "name": "x"}}),
     "spec.defaultBackend.resource.kind: Invalid value: \"a/b\": may not contain '/'"),
    (INGS, _ing("nk-bad", defaultBackend=SVC, tls=[{"secretName": "Bad_Name"}]),
     'spec.tls[0].secretName: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case '
     "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
     "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    (INGS, {**_ing("nk-bad", defaultBackend=SVC, ingressClassName="a"),
            "metadata": {"name": "nk-bad", "annotations": {"kubernetes.io/ingress.class": "b"}}},
     'annotations.kubernetes.io/ingress.class: Invalid value: "b": must match `ingressClassName` when both are '
     "specified"),
    (CLASSES, _class("nk-bad"), "spec.controller: Required value"),
    (CLASSES, _class("nk-bad", controller="nginx"),
     'spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")'),
    (CLASSES, _class("nk-bad", controller="example.com/" + "x" * 250),
     "spec.controller: Too long: may not be more than 250 bytes"),
    (CLASSES, _class("nk-bad", controller="example.com/a", parameters={"kind": "P", "name": "p", "scope": "Zone"}),
     'spec.parameters.scope: Unsupported value: "Zone": supported values: "Cluster", "Namespace"'),
    (CLASSES, _class("nk-bad", controller="example.com/a", parameters={"kind": "P", "name": "p", "scope": "Namespace"}),
     "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"),
    (CLASSES, _class("nk-bad", controller="example.com/a",
                     parameters={"kind": "P", "name": "p", "scope": "Cluster", "namespace": "default"}),
     "spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"),
    (CLASSES, _class("nk-bad", controller="example.com/a", parameters={"kind": "", "name": "p"}),
     "spec.parameters.kind: Required value"),
    (POLICIES, _np("nk-bad", ingress=[{"ports": [{"protocol": "ICMP"}]}]),
     'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"'),
    (POLICIES, _np("nk-bad", ingress=[{"ports": [{"port": 0}]}]),
     "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"),
    (POLICIES, _np("nk-bad", egress=[{"ports": [{"port": 90, "endPort": 80}]}]),
     "spec.egress[0].ports[0].endPort: Invalid value: 80: must be greater than or equal to `port`"),
    (POLICIES, _np("nk-bad", egress=[{"ports": [{"port": "http", "endPort": 80}]}]),
     "spec.egress[0].ports[0].endPort: Invalid value: 80: may not be specified when `port` is non-numeric"),
    (POLICIES, _np("nk-bad", egress=[{"ports": [{"endPort": 80}]}]),
     "spec.egress[0].ports[0].endPort: Invalid value: 80: may not be specified when `port` is not specified"),
    (POLICIES, _np("nk-bad", ingress=[{"from": [{}]}]), "spec.ingress[0].from[0]: Required value: must specify a peer"),
    (POLICIES, _np("nk-bad", ingress=[{"from": [{"podSelector": {}, "ipBlock": {"cidr": "10.0.0.0/8"}}]}]),
     "spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer"),
    (POLICIES, _np("nk-bad", ingress=[{"from": [{"ipBlock": {"cidr": "10.0.0.1/8"}}]}]),
     'spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix '
     "length"),
    (POLICIES, _np("nk-bad", ingress=[{"from": [{"ipBlock": {"cidr": "10.0.0.0"}}]}]),
     'spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "10.0.0.0": must be a valid CIDR value, (e.g. '
     "10.9.8.0/24 or 2001:db8::/64)"),
    (POLICIES, _np("nk-bad", ingress=[{"from": [{"ipBlock": {"cidr": "010.0.0.0/8"}}]}]),
     'spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "010.0.0.0/8": must not have leading 0s in IP or prefix '
     "length"),
    (POLICIES, _np("nk-bad", ingress=[{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]}]),
     'spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "11.0.0.0/16": must be a strict subset of `cidr`'),
    (POLICIES, _np("nk-bad", ingress=[{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/8"]}}]}]),
     'spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`'),
    (POLICIES, _np("nk-bad", policyTypes=["Ingress", "Egress", "Ingress"]),
     'spec.policyTypes: Invalid value: ["Ingress","Egress","Ingress"]: may not specify more than two policyTypes'),
    (POLICIES, _np("nk-bad", policyTypes=["Both"]),
     'spec.policyTypes[0]: Unsupported value: "Both": supported values: "Ingress", "Egress"'),
    (POLICIES, _np("nk-bad", podSelector={"matchLabels": {"app": "-x-"}}),
     'spec.podSelector.matchLabels: Invalid value: "-x-": a valid label must be an empty string or consist of '
     "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
     "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
     "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
]
# (collection, valid object, merge patch, the refusal)
UPDATES: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    (CLASSES, _class("nk-up", controller="example.com/a"), {"spec": {"controller": "example.com/b"}},
     'spec.controller: Invalid value: "example.com/b": field is immutable'),
    (INGS, _ing("nk-up", defaultBackend=SVC), {"spec": {"rules": [_rule("1.2.3.4")]}},
     'spec.rules[0].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address'),
    (POLICIES, _np("nk-up"), {"spec": {"egress": [{"ports": [{"port": 0}]}]}},
     "spec.egress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"),
]
STORED_KEYS = ("spec", "status")


def _stored(send: Send) -> list[Any]:
    """What each object is stored as after its create (the defaults): spec, status, generation."""
    out = []
    try:
        for path, obj in OBJECTS:
            code, body = send("POST", path, obj, JSON)
            assert code == 201, body
            out.append((body["kind"], body["metadata"]["name"], body["metadata"].get("generation"),
                        *(body.get(k) for k in STORED_KEYS)))
    finally:
        for path, obj in OBJECTS:
            send("DELETE", f"{path}/{obj['metadata']['name']}", None, JSON)
    return out


def _refusal(code: int, body: Any) -> Any:
    return code, body.get("reason"), body.get("message"), body.get("details")


def _answers(send: Send, tag: str) -> list[Any]:
    out = [_refusal(*send("POST", path, obj, JSON)) for path, obj, _ in CREATES]
    for path, obj, patch, _ in UPDATES:
        name = f"{obj['metadata']['name']}-{tag}"
        code, made = send("POST", path, {**obj, "metadata": {**obj["metadata"], "name": name}}, JSON)
        assert code == 201, made
        code, body = send("PATCH", f"{path}/{name}", patch, MERGE)
        out.append(_refusal(code, body) if code >= 300 else code)
        send("DELETE", f"{path}/{name}", None, JSON)
    return out


def test_defaults_as_stored(api_daemon: Daemon) -> None:
    got = {(k, n): rest for k, n, *rest in _stored(daemon_sender(api_daemon))}
    generation, spec, _ = got[("NetworkPolicy", "nk-np")]
    assert generation == 1
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert [p["protocol"] for p in spec["ingress"][0]["ports"]] == ["TCP", "TCP", "UDP"]
    assert got[("NetworkPolicy", "nk-np-empty")][1]["policyTypes"] == ["Ingress"]
    assert got[("IngressClass", "nk-class")][1]["parameters"]["scope"] == "Cluster"
    assert got[("Ingress", "nk-ing")][2] == {"loadBalancer": {}}
    # the DefaultIngressClass admission plugin: nk-class is annotated the default
    assert got[("Ingress", "nk-ing-default")][1]["ingressClassName"] == "nk-class"


@pytest.mark.kube_apiserver
def test_defaults_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    assert _stored(daemon_sender(api_daemon)) == _stored(kube_sender(kube_apiserver))


def test_refusals(api_daemon: Daemon) -> None:
    got = _answers(daemon_sender(api_daemon), "a")
    cases = [(p, o["metadata"]["name"], m) for p, o, m in CREATES] + [
        (p, f"{o['metadata']['name']}-a", m) for p, o, _, m in UPDATES]
    for (code, reason, message, details), (path, name, text) in zip(got, cases, strict=True):
        kind = {INGS: "Ingress", CLASSES: "IngressClass", POLICIES: "NetworkPolicy"}[path]
        assert (code, reason, message) == (422, "Invalid", f'{kind}.networking.k8s.io "{name}" is invalid: {text}')
        assert details["causes"][0]["field"] == text.split(":")[0]


@pytest.mark.kube_apiserver
def test_refusals_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    assert _answers(daemon_sender(api_daemon), "b") == _answers(kube_sender(kube_apiserver), "b")


def test_kubectl_apply_get_patch_delete(api_daemon: Daemon) -> None:
    """A chart's Ingress, IngressClass and NetworkPolicy: applied, listed, patched, deleted by kubectl."""
    docs = yaml.safe_dump_all([INGRESS_CLASS, INGRESS, POLICY])
    out = api_daemon.kubectl("apply", "-f", "-", input=docs).stdout.splitlines()
    assert out == ["ingressclass.networking.k8s.io/nk-class created", "ingress.networking.k8s.io/nk-ing created",
                   "networkpolicy.networking.k8s.io/nk-np created"]
    try:
        assert api_daemon.kubectl("apply", "-f", "-", input=docs).stdout.splitlines()[1].endswith("unchanged")
        table = [line.split() for line in api_daemon.kubectl("get", "ing", "nk-ing").stdout.splitlines()]
        assert table[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
        assert table[1][:5] == ["nk-ing", "nginx", "a.example.com,b.example.com", "80,", "443"]
        table = [line.split() for line in api_daemon.kubectl("get", "ingressclass").stdout.splitlines()]
        assert ["nk-class", "(default)", "example.com/ingress", "Params.k8s.example.com/p"] in [r[:4] for r in table]
        table = [line.split() for line in api_daemon.kubectl("get", "netpol", "nk-np").stdout.splitlines()]
        assert table[0] == ["NAME", "POD-SELECTOR", "AGE"] and table[1][:2] == ["nk-np", "app=web"]
        api_daemon.kubectl("patch", "ing", "nk-ing", "--type=merge", "-p", json.dumps({"spec": {"tls": None}}))
        got = json.loads(api_daemon.kubectl("get", "ing", "nk-ing", "-o", "json").stdout)
        assert "tls" not in got["spec"] and got["metadata"]["generation"] == 2
        # the status subresource: an ingress controller's address; the spec sent along is not written
        got["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}
        got["spec"]["ingressClassName"] = "other"
        code, body = daemon_sender(api_daemon)("PUT", f"{INGS}/nk-ing/status", got, JSON)
        assert code == 200, body
        assert body["spec"]["ingressClassName"] == "nginx" and body["metadata"]["generation"] == 2
        assert api_daemon.kubectl("get", "ing", "nk-ing").stdout.splitlines()[1].split()[3] == "192.0.2.10"
        got = body
        got["status"] = {"loadBalancer": {"ingress": [{"hostname": "1.2.3.4"}]}}
        code, body = daemon_sender(api_daemon)("PUT", f"{INGS}/nk-ing/status", got, JSON)
        assert (code, body["message"]) == (422, 'Ingress.networking.k8s.io "nk-ing" is invalid: status.loadBalancer.'
                                                'ingress[0].hostname: Invalid value: "1.2.3.4": must be a DNS name, '
                                                "not an IP address")
    finally:
        out = api_daemon.kubectl("delete", "-f", "-", input=docs).stdout.splitlines()
    assert out[1] == 'ingress.networking.k8s.io "nk-ing" deleted'


def _discovered(send: Send) -> dict[str, Any]:
    code, doc = send("GET", NET, None, JSON)
    assert code == 200, doc
    return {r["name"]: (r["namespaced"], r["kind"], sorted(r["verbs"]), r.get("shortNames"), r.get("categories"),
                        r.get("singularName")) for r in doc["resources"]
            if r["name"].partition("/")[0] in ("ingresses", "ingressclasses", "networkpolicies")}


def test_discovery_lists_the_kinds(api_daemon: Daemon) -> None:
    found = _discovered(daemon_sender(api_daemon))
    assert sorted(found) == ["ingressclasses", "ingresses", "ingresses/status", "networkpolicies"]
    assert found["ingresses"][3] == ["ing"] and found["networkpolicies"][3] == ["netpol"]
    names = {line.split()[0] for line in api_daemon.kubectl("api-resources", "--api-group=networking.k8s.io",
                                                            "--verbs=list").stdout.splitlines()[1:]}
    assert {"ingresses", "ingressclasses", "networkpolicies"} <= names


@pytest.mark.kube_apiserver
def test_discovery_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    assert _discovered(daemon_sender(api_daemon)) == _discovered(kube_sender(kube_apiserver))


@pytest.mark.kube_apiserver
@pytest.mark.timeout(180)
def test_tables_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    """The same objects created on both servers print the same `kubectl get` rows (the age aside)."""
    def rows(kubectl: Any, resource: str, name: str, namespaced: bool) -> list[list[str]]:
        ns = ["-n", "default"] if namespaced else []
        lines = [line.split() for line in kubectl("get", resource, name, *ns).stdout.splitlines()]
        return [line[:-1] for line in lines]  # the age

    many = _ing("nk-many", rules=[_rule(f"h{i}.example.com") for i in range(5)])
    status = {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}, {"hostname": "lb.example.com"}]}}
    objects = [(path, obj) for path, obj in OBJECTS] + [(INGS, many)]
    for send in (daemon_sender(api_daemon), kube_sender(kube_apiserver)):
        for path, obj in objects:
            code, body = send("POST", path, obj, JSON)
            assert code == 201, body
        code, body = send("PUT", f"{INGS}/nk-many/status", {**body, "status": status}, JSON)
        assert code == 200, body
    try:
        for path, obj in objects:
            resource = {INGS: "ingresses", CLASSES: "ingressclasses", POLICIES: "networkpolicies"}[path]
            args = (resource + ".networking.k8s.io", obj["metadata"]["name"], path != CLASSES)
            assert rows(api_daemon.kubectl, *args) == rows(kube_apiserver.kubectl, *args), obj["metadata"]["name"]
    finally:
        for send in (daemon_sender(api_daemon), kube_sender(kube_apiserver)):
            for path, obj in objects:
                send("DELETE", f"{path}/{obj['metadata']['name']}", None, JSON)
