"""A CRD's selectableFields (field selectors on custom resources, KEP-4358) compared with the real
kube-apiserver's: the CRD checks' 422s (each jsonPath rule, per version and lifted to spec.selectableFields),
then on a two-version CRD whose versions select different fields: lists with `=`, `==`, `!=`, several
requirements, an absent field, integers and booleans, a label selector beside, the 400 for a field the
version does not select; watches that see objects enter and leave their selection (ADDED, MODIFIED,
DELETED), open during the changes and resumed at the resourceVersion before them afterwards (what
matched then decides: nodeagent once sent nothing for an object that left); a deletecollection by
field; a CRD update that adds a field to a version; and a cluster-scoped custom resource's
metadata.namespace. Every answer (codes, Status messages, listed names, watch event
types) must be the same. Runs against kube-apiserver only in its tier (NODEAGENT_KUBE_APISERVER=1, the
`kube_apiserver` marker); the daemon's half always runs, and kubectl's `get --field-selector` against
the daemon.
"""

from __future__ import annotations

import base64
import copy
import difflib
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.client import HTTPResponse
from typing import Any

import pytest
import yaml

from tests.integration import test_validating_admission_policy as vap
from tests.integration.crd_served import wait_present, wait_served
from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_custom_resource_managed_fields import CRDS, JSON

pytestmark = [pytest.mark.integration]

GROUP = "sf.example.com"
MERGE = "application/merge-patch+json"
WATCH_SECONDS = 4


@dataclass(frozen=True)
class Endpoint:
    """Where a server is and how to talk to it (plain requests, and watches read to their end)."""

    url: str
    ctx: ssl.SSLContext
    headers: dict[str, str]

    def send(self, method: str, path: str, body: Any = None, ctype: str = JSON) -> tuple[int, Any]:
        return vap._sender(self.url, self.ctx, self.headers)(method, path, body, ctype)[:2]

    def watch(self, path: str) -> HTTPResponse | tuple[int, Any]:
        """An open watch, or the refusal's (code, Status)."""
        req = urllib.request.Request(self.url + path, headers={**self.headers, "Accept": "application/json"})
        try:
            return urllib.request.urlopen(req, context=self.ctx, timeout=30)  # type: ignore[no-any-return]
        except urllib.error.HTTPError as err:
            with err:
                return err.code, json.loads(err.read() or b"{}")


def daemon_endpoint(d: Daemon) -> Endpoint:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    return Endpoint(cluster["server"], ctx, {"Authorization": f"Bearer {user['token']}"})


def kube_endpoint(server: KubeAPIServer) -> Endpoint:
    return Endpoint(server.url, server._ssl(), {})


_SPEC = {"type": "object", "properties": {
    "color": {"type": "string"},
    "quantity": {"type": "integer"},
    "size": {"type": "string", "enum": ["S", "M", "L", "XL"]},
    "branded": {"type": "boolean"},
    "made": {"type": "string", "format": "date-time"},
    "ratio": {"type": "number"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "extra": {"type": "object", "additionalProperties": {"type": "string"}},
    **{f"s{i}": {"type": "string"} for i in range(9)},
}}


def _schema(description: str = "") -> dict[str, Any]:
    spec = {**_SPEC, "description": description} if description else _SPEC
    return {"type": "object", "properties": {"spec": spec}}


def _fields(*paths: str) -> list[dict[str, str]]:
    return [{"jsonPath": p} for p in paths]


def _version(name: str, fields: list[dict[str, str]] | None, *, storage: bool = True, description: str = "",
             schema: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "served": True, "storage": storage,
                           "schema": {"openAPIV3Schema": schema or _schema(description)}}
    if fields is not None:
        out["selectableFields"] = fields
    return out


def _crd(plural: str, versions: list[dict[str, Any]], scope: str = "Namespaced") -> dict[str, Any]:
    kind = plural[:-1].title()
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": scope, "versions": versions,
                     "names": {"plural": plural, "singular": plural[:-1], "kind": kind, "listKind": kind + "List"}}}


def invalid_crds(suffix: str) -> list[tuple[str, dict[str, Any]]]:
    """CRDs each of whose selectableFields break a rule of ValidateCustomResourceSelectableFields."""
    with_meta = {"type": "object", "properties": {"metadata": {"type": "object"}, "spec": _SPEC}}
    cases: list[tuple[str, list[dict[str, Any]]]] = [
        ("no leading dot", [_version("v1", _fields("spec.color"))]),
        ("no such field", [_version("v1", _fields(".spec.nosuch"))]),
        ("an object", [_version("v1", _fields(".spec"))]),
        ("a number", [_version("v1", _fields(".spec.ratio"))]),
        ("an array", [_version("v1", _fields(".spec.tags"))]),
        ("array notation", [_version("v1", _fields(".spec.tags[0]"))]),
        ("bracket notation", [_version("v1", _fields(".spec['color']"))]),
        ("ends with a dot", [_version("v1", _fields(".spec."))]),
        ("metadata", [_version("v1", _fields(".metadata"), schema=with_meta)]),
        ("metadata.name", [_version("v1", _fields(".metadata.name"))]),
        ("duplicate and empty", [_version("v1", _fields(".spec.color", ".spec.quantity", ".spec.color", ""))]),
        ("nine", [_version("v1", _fields(*(f".spec.s{i}" for i in range(9))))]),
        ("per version, one bad", [_version("v1", _fields(".spec.color")),
                                  _version("v2", _fields(".spec.nosuch"), storage=False, description="v2")]),
        ("per version, same schema", [_version("v1", _fields(".spec.color")),
                                      _version("v2", _fields(".spec.size"), storage=False)]),
        ("same fields, other schemas", [_version("v1", _fields(".spec.color")),
                                        _version("v2", _fields(".spec.color"), storage=False, description="v2")]),
    ]
    return [(label, _crd(f"bad{i}x{suffix}s", versions)) for i, (label, versions) in enumerate(cases)]


def _shirt(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "metadata": {"name": name, "labels": {"app": name[-1]}},
            "spec": spec}


SHIRTS = [
    _shirt("shirt1", color="blue", quantity=2, size="S", branded=True, extra={"k": "a"}),
    _shirt("shirt2", color="blue", quantity=3, size="M", branded=False),
    _shirt("shirt3", color="green", quantity=2, branded=False),
]

V1_LISTS = [
    "spec.color=blue", "spec.color==blue", "spec.color!=blue", "spec.quantity=2", "spec.quantity=02",
    "spec.size=M", "spec.size=", "spec.size!=S", "spec.branded=false", "spec.branded=False",
    "spec.color=blue,spec.quantity=2", "spec.color=blue,spec.branded=false", "spec.color=blue,spec.color!=blue",
    "metadata.name=shirt2,spec.color=blue", "metadata.namespace=default,spec.quantity!=3",
    "spec.extra.k=a", "spec.made=", "spec.nosuchfield=xyz", "spec.color=blue,spec.hue=x",
    "spec.hue=x,spec.color", "spec.color",
]
V1BETA1_LISTS = ["spec.size=M", "spec.color=green", "spec.quantity=2", "spec.branded=true"]
WATCHES = [
    ("v1", "spec.color=blue"), ("v1", "spec.quantity=2"), ("v1", "spec.color!=blue"),
    ("v1", "spec.color=blue,spec.branded=false"), ("v1beta1", "spec.size=M"), ("v1beta1", "spec.quantity=2"),
]


def _q(**params: str) -> str:
    return "?" + urllib.parse.urlencode(params)


Send = Callable[..., tuple[int, Any]]


def _listed(send: Send, path: str) -> Callable[[], list[str] | None]:
    """The names a list answers, once it answers a list (a refusal until the server has the change)."""
    def probe() -> list[str] | None:
        got = _answer(*send("GET", path))
        return got if isinstance(got, list) else None
    return probe


def _answer(code: int, body: Any) -> Any:
    """What is compared of an answer: the names listed, or the refusal's code and message."""
    if code == 200 and isinstance(body, dict) and "items" in body:
        return sorted(i["metadata"]["name"] for i in body["items"])
    return code, body.get("message") if isinstance(body, dict) else body


def _events(resp: HTTPResponse) -> list[tuple[str, str]]:
    with resp:
        text = resp.read().decode()
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in map(json.loads, text.splitlines()) if e]


def scenario(ep: Endpoint, suffix: str) -> list[tuple[str, Any]]:
    send = ep.send
    out: list[tuple[str, Any]] = []
    made: list[str] = []
    try:
        for label, crd in invalid_crds(suffix):
            code, body = send("POST", CRDS, crd)
            if code == 201:
                made.append(crd["metadata"]["name"])
            out.append((f"crd {label}", (code, body.get("message"))))

        plural, hats = f"shirts{suffix}x", f"hats{suffix}x"
        shirts = _crd(plural, [
            _version("v1", _fields(".spec.color", ".spec.quantity", ".spec.size", ".spec.branded", ".spec.extra.k",
                                   ".spec.made")),
            _version("v1beta1", _fields(".spec.size", ".spec.color", ".spec.branded"), storage=False,
                     description="v1beta1"),
        ])
        for crd in (shirts, _crd(hats, [_version("v1", None)], scope="Cluster")):
            code, body = send("POST", CRDS, crd)
            assert code == 201, body
            made.append(crd["metadata"]["name"])
        base = {v: f"/apis/{GROUP}/{v}/namespaces/default/{plural}" for v in ("v1", "v1beta1")}
        for path in base.values():  # the real server serves a CRD's versions a moment after Established
            wait_served(lambda: send("GET", path)[0])  # noqa: B023 (called before the next turn)
        for shirt in SHIRTS:
            code, body = send("POST", base["v1"], {**shirt, "kind": shirts["spec"]["names"]["kind"]})
            assert code == 201, body

        for version, selectors in (("v1", V1_LISTS), ("v1beta1", V1BETA1_LISTS)):
            for selector in selectors:
                answer = _answer(*send("GET", base[version] + _q(fieldSelector=selector)))
                out.append((f"list {version} {selector}", answer))
        out.append(("list v1 with labels", _answer(*send("GET", base["v1"] + _q(
            fieldSelector="spec.color=blue", labelSelector="app in (2,3)")))))
        out.append(("list all namespaces", _answer(*send("GET", f"/apis/{GROUP}/v1/{plural}" + _q(
            fieldSelector="spec.quantity=2")))))

        code, listed = send("GET", base["v1"])
        rv = listed["metadata"]["resourceVersion"]
        watches = []
        for version, selector in WATCHES:
            opened = ep.watch(base[version] + _q(watch="1", resourceVersion=rv, fieldSelector=selector,
                                                 timeoutSeconds=str(WATCH_SECONDS)))
            watches.append((f"watch {version} {selector}", opened))
        out.append(("watch refused", ep.watch(base["v1"] + _q(watch="1", fieldSelector="spec.hue=x"))))
        for method, name, body, ctype in (
            ("DELETE", "shirt1", None, JSON),
            ("PATCH", "shirt2", {"spec": {"color": "green"}}, MERGE),   # leaves color=blue
            ("PATCH", "shirt3", {"spec": {"color": "blue"}}, MERGE),    # enters color=blue
            ("PATCH", "shirt3", {"spec": {"quantity": 5}}, MERGE),      # stays blue, leaves quantity=2
            ("PATCH", "shirt2", {"spec": {"size": "L"}}, MERGE),        # leaves v1beta1's size=M
        ):
            code, body = send(method, f"{base['v1']}/{name}", body, ctype)
            assert code == 200, body
        for label, opened in watches:
            out.append((label, opened if isinstance(opened, tuple) else _events(opened)))
        for version, selector in WATCHES[:4]:  # resumed at rv after the changes: the same events, replayed
            resumed = ep.watch(base[version] + _q(watch="1", resourceVersion=rv, fieldSelector=selector,
                                                  timeoutSeconds="1"))
            out.append((f"resumed {version} {selector}", resumed if isinstance(resumed, tuple) else _events(resumed)))

        out.append(("deletecollection", _answer(*send("DELETE", base["v1"] + _q(fieldSelector="spec.quantity=5")))))
        out.append(("after deletecollection", _answer(*send("GET", base["v1"]))))
        out.append(("deletecollection refused", _answer(*send("DELETE", base["v1beta1"] + _q(
            fieldSelector="spec.quantity=3")))))

        code, crd = send("GET", f"{CRDS}/{plural}.{GROUP}")
        new = copy.deepcopy(crd)
        new["spec"]["versions"][1]["selectableFields"].append({"jsonPath": ".spec.quantity"})
        code, body = send("PUT", f"{CRDS}/{plural}.{GROUP}", new)
        out.append(("crd update", (code, body.get("message") if code != 200 else "")))
        query = base["v1beta1"] + _q(fieldSelector="spec.quantity=3")
        out.append(("list v1beta1 after update", wait_present("the new selectable field", _listed(send, query))))
        code, crd = send("GET", f"{CRDS}/{plural}.{GROUP}")
        out.append(("crd stored", [v.get("selectableFields") for v in crd["spec"]["versions"]]))

        wait_served(lambda: send("GET", f"/apis/{GROUP}/v1/{hats}")[0])
        code, body = send("POST", f"/apis/{GROUP}/v1/{hats}", {"apiVersion": f"{GROUP}/v1", "kind": hats[:-1].title(),
                                                               "metadata": {"name": "hat1"}})
        assert code == 201, body
        for selector in ("metadata.name=hat1", "metadata.namespace=", "metadata.namespace!=x"):
            out.append((f"cluster-scoped {selector}", _answer(*send("GET", f"/apis/{GROUP}/v1/{hats}" + _q(
                fieldSelector=selector)))))
    finally:
        for name in made:
            send("DELETE", f"{CRDS}/{name}")
    return out


def _suffix() -> str:
    return str(int(time.time() * 1000) % 10**7)


def test_selectable_fields_select_custom_resources(api_daemon: Daemon) -> None:
    got = dict(scenario(daemon_endpoint(api_daemon), _suffix()))
    assert got["list v1 spec.color=blue"] == ["shirt1", "shirt2"]
    assert got["list v1 spec.size="] == ["shirt3"]
    assert got["list v1beta1 spec.quantity=2"] == (400, "field label not supported: spec.quantity")
    assert got["watch v1 spec.color=blue"] == [("DELETED", "shirt1"), ("DELETED", "shirt2"), ("ADDED", "shirt3"),
                                               ("MODIFIED", "shirt3")]
    for version, selector in WATCHES[:4]:
        assert got[f"resumed {version} {selector}"] == got[f"watch {version} {selector}"]
    assert got["list v1beta1 after update"] == ["shirt2"]
    assert got["cluster-scoped metadata.namespace="] == (400, "field label not supported: metadata.namespace")
    code, message = got["crd no such field"]
    assert code == 422 and "is an invalid path: does not refer to a valid field" in message


def test_kubectl_get_with_field_selector(api_daemon: Daemon) -> None:
    ep, suffix = daemon_endpoint(api_daemon), _suffix()
    plural = f"tees{suffix}x"
    crd = _crd(plural, [_version("v1", _fields(".spec.color", ".spec.quantity"))])
    assert ep.send("POST", CRDS, crd)[0] == 201
    try:
        for shirt in SHIRTS:
            shirt = {**shirt, "kind": crd["spec"]["names"]["kind"]}
            assert ep.send("POST", f"/apis/{GROUP}/v1/namespaces/default/{plural}", shirt)[0] == 201
        got = api_daemon.kubectl("get", plural, "--field-selector", "spec.color=blue,spec.quantity!=3", "-o", "name")
        assert got.stdout.split() == [f"{plural[:-1]}.{GROUP}/shirt1"]
        refused = api_daemon.kubectl("get", plural, "--field-selector", "spec.size=M", check=False)
        assert refused.returncode != 0 and "field label not supported: spec.size" in refused.stderr
    finally:
        ep.send("DELETE", f"{CRDS}/{plural}.{GROUP}")


@pytest.mark.kube_apiserver
@pytest.mark.timeout(300)
def test_selectable_fields_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    suffix = _suffix()
    ours = scenario(daemon_endpoint(api_daemon), suffix)
    theirs = scenario(kube_endpoint(kube_apiserver), suffix)
    assert [k for k, _ in ours] == [k for k, _ in theirs]
    failures = []
    for (key, a), (_, b) in zip(ours, theirs, strict=True):
        if a != b:
            diff = difflib.unified_diff(json.dumps(a, indent=1).splitlines(), json.dumps(b, indent=1).splitlines(),
                                        "nodeagent", "kube-apiserver", lineterm="", n=2)
            failures.append(f"{key}:\n" + "\n".join(diff))
    assert not failures, "\n\n".join(failures)
