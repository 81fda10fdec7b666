"""Small API semantics held to kube-apiserver's: aggregated discovery's responseKind, and the DELETE
handler's 202.

- responseKind: the installer copies each APIResource's group and version, which are empty unless
  the storage answers another kind (scale's autoscaling/v1 Scale); custom resources' name theirs.
- DELETE answers 202 when the object stays (finalizers pending) and orphanDependents=false was sent;
  every other pending deletion (propagationPolicy, orphanDependents=true) answers 200.
Compared with the real kube-apiserver when that tier runs (NODEAGENT_KUBE_APISERVER=1).
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import Send, daemon_sender, kube_sender

pytestmark = [pytest.mark.integration]

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
Get = Callable[[str], Any]

# (group, version, resource) whose responseKinds are compared
RESOURCES = [("", "v1", "pods"), ("", "v1", "replicationcontrollers"), ("", "v1", "namespaces"),
             ("apps", "v1", "deployments"), ("batch", "v1", "jobs"),
             ("resource.k8s.io", "v1", "resourceclaims"), ("events.k8s.io", "v1", "events"),
             ("example.com", "v1", "widgets")]
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def _getter(url: str, ctx: ssl.SSLContext, headers: dict[str, str]) -> Get:
    def get(path: str) -> Any:
        req = urllib.request.Request(url + path, headers={**headers, "Accept": AGGREGATED})
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return json.loads(resp.read())

    return get


def daemon_getter(d: Daemon) -> Get:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    return _getter(cluster["server"], ctx, {"Authorization": f"Bearer {user['token']}"})


def _response_kinds(send: Send, get: Get) -> dict[str, Any]:
    code, made = send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD, "application/json")
    assert code in (201, 409), made
    out: dict[str, Any] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        out = {}
        for path in ("/api", "/apis"):
            for group in get(path)["items"]:
                for version in group["versions"]:
                    for r in version["resources"]:
                        key = (group["metadata"].get("name", ""), version["version"], r["resource"])
                        if key in RESOURCES:
                            out["/".join(key)] = (r["responseKind"], {s["subresource"]: s["responseKind"]
                                                                      for s in r.get("subresources") or []})
        if len(out) == len(RESOURCES):
            break
        time.sleep(0.2)  # the CRD's discovery comes once it is established
    return out


def test_aggregated_response_kinds(api_daemon: Daemon) -> None:
    got = _response_kinds(daemon_sender(api_daemon), daemon_getter(api_daemon))
    assert got["/v1/pods"] == ({"group": "", "version": "", "kind": "Pod"},
                               {"status": {"group": "", "version": "", "kind": "Pod"},
                                "binding": {"group": "", "version": "", "kind": "Binding"},
                                **{k: v for k, v in got["/v1/pods"][1].items() if k not in ("status", "binding")}})
    assert got["apps/v1/deployments"][1]["scale"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert got["example.com/v1/widgets"] == (
        {"group": "example.com", "version": "v1", "kind": "Widget"},
        {"status": {"group": "example.com", "version": "v1", "kind": "Widget"}})


@pytest.mark.kube_apiserver
def test_aggregated_response_kinds_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = _response_kinds(daemon_sender(api_daemon), daemon_getter(api_daemon))
    theirs = _response_kinds(kube_sender(kube_apiserver),
                             _getter(kube_apiserver.url, kube_apiserver._ssl(), {}))
    # kube-apiserver serves subresources nodeagent does not (pods/exec, attach, log...): the shared ones
    for key, (kind, subs) in theirs.items():
        theirs[key] = (kind, {k: v for k, v in subs.items() if k in ours[key][1]})
    assert ours == theirs


# (DeleteOptions body, what the DELETE answers while the finalizer holds the object)
DELETES: list[dict[str, Any]] = [{"orphanDependents": False}, {"orphanDependents": True},
                                 {"propagationPolicy": "Orphan"}, {"propagationPolicy": "Foreground"}, {}]


def _delete_codes(send: Send, prefix: str) -> list[tuple[int, str]]:
    out = []
    path = "/api/v1/namespaces/default/configmaps"
    for i, options in enumerate(DELETES):
        name = f"{prefix}-{i}"
        code, made = send("POST", path, {"metadata": {"name": name, "finalizers": ["example.com/hold"]}},
                          "application/json")
        assert code == 201, made
        code, answer = send("DELETE", f"{path}/{name}", options, "application/json")
        out.append((code, answer.get("kind", "")))
        code, released = send("PATCH", f"{path}/{name}", {"metadata": {"finalizers": None}},
                              "application/merge-patch+json")
        assert code == 200, released
    return out


def test_delete_pending_finalizers_answers_202_for_orphan_dependents_false(api_daemon: Daemon) -> None:
    assert _delete_codes(daemon_sender(api_daemon), "da") == [
        (202, "ConfigMap"), (200, "ConfigMap"), (200, "ConfigMap"), (200, "ConfigMap"), (200, "ConfigMap")]


@pytest.mark.kube_apiserver
def test_delete_codes_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    assert _delete_codes(daemon_sender(api_daemon), "dk") == _delete_codes(kube_sender(kube_apiserver), "dk")


# (schedule, timeZone or None): CronJobs kube-apiserver refuses (or takes) for their schedule and zone
SCHEDULES: list[tuple[str, str | None]] = [
    ("foo", None), ("61 * * * *", None), ("*/5 * * * * *", None), ("TZ=UTC */5 * * * *", None),
    ("@every 5x", None), ("@fortnightly", None), ("5-1 * * * *", None), ("@hourly", None),
    ("*/5 * * * *", "Mars/Phobos"), ("*/5 * * * *", "Local"), ("*/5 * * * *", ""), ("*/5 * * * *", "Europe/Paris"),
    ("bad", "../etc"),
]


def _cron_answers(send: Send, prefix: str) -> list[Any]:
    out = []
    path = "/apis/batch/v1/namespaces/default/cronjobs"
    for i, (schedule, zone) in enumerate(SCHEDULES):
        name = f"{prefix}-{i}"
        spec: dict[str, Any] = {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}}}}}
        if zone is not None:
            spec["timeZone"] = zone
        code, answer = send("POST", path, {"metadata": {"name": name}, "spec": spec}, "application/json")
        out.append((code, answer.get("message", "").replace(name, "N") if code >= 300 else "",
                    [(c.get("field"), c.get("message")) for c in (answer.get("details") or {}).get("causes") or []]))
        if code == 201:
            send("DELETE", f"{path}/{name}", None, "application/json")
    return out


def test_cronjob_schedule_and_time_zone_are_validated(api_daemon: Daemon) -> None:
    got = _cron_answers(daemon_sender(api_daemon), "cs")
    assert [code for code, _, _ in got] == [422, 422, 422, 422, 422, 422, 422, 201, 422, 422, 422, 201, 422]
    assert got[0][1] == ('CronJob.batch "N" is invalid: spec.schedule: Invalid value: "foo": expected exactly 5 '
                         "fields, found 1: [foo]")
    assert got[9][2] == [("spec.timeZone", 'Invalid value: "Local": timeZone must be an explicit time zone as '
                          "defined in https://www.iana.org/time-zones")]


@pytest.mark.kube_apiserver
def test_cronjob_schedules_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours, theirs = _cron_answers(daemon_sender(api_daemon), "ck"), _cron_answers(kube_sender(kube_apiserver), "ck")
    for case, mine, real in zip(SCHEDULES, ours, theirs, strict=True):
        assert mine == real, case


# Job specs checked by validateJobSpec's indexed-Job rules (completions, parallelism, modes, policies)
JOB_SPECS: list[dict[str, Any]] = [
    {"backoffLimitPerIndex": 1},
    {"completionMode": "Indexed", "completions": 3, "maxFailedIndexes": 1},
    {"completionMode": "Indexed", "completions": 2, "backoffLimitPerIndex": 1, "maxFailedIndexes": 3},
    {"completionMode": "Indexed", "parallelism": 2},
    {"completionMode": "Weird", "completions": 1},
    {"successPolicy": {"rules": [{"succeededCount": 1}]}},
    {"completionMode": "Indexed", "completions": 3, "successPolicy": {"rules": []}},
    {"completionMode": "Indexed", "completions": 3, "successPolicy": {"rules": [{}]}},
    {"completionMode": "Indexed", "completions": 3, "successPolicy": {"rules": [{"succeededCount": 5}]}},
    {"completionMode": "Indexed", "completions": 3,
     "successPolicy": {"rules": [{"succeededIndexes": "0-1", "succeededCount": 3}]}},
    {"completionMode": "Indexed", "completions": 3,
     "podFailurePolicy": {"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]}},
    {"completionMode": "Indexed", "completions": 3, "backoffLimitPerIndex": 1, "maxFailedIndexes": 1,
     "successPolicy": {"rules": [{"succeededIndexes": "0,2", "succeededCount": 2}]},
     "podFailurePolicy": {"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]}},
]


def _job_answers(send: Send, prefix: str) -> list[Any]:
    out = []
    path = "/apis/batch/v1/namespaces/default/jobs"
    for i, extra in enumerate(JOB_SPECS):
        name = f"{prefix}-{i}"
        spec = {"suspend": True, **extra, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}}}
        code, answer = send("POST", path, {"metadata": {"name": name}, "spec": spec}, "application/json")
        out.append((code, answer.get("message", "").replace(name, "N") if code >= 300 else "",
                    [(c.get("field"), c.get("message")) for c in (answer.get("details") or {}).get("causes") or []]))
        if code == 201:
            send("DELETE", f"{path}/{name}", {"propagationPolicy": "Background"}, "application/json")
    return out


def test_indexed_job_rules_are_validated(api_daemon: Daemon) -> None:
    got = _job_answers(daemon_sender(api_daemon), "jv")
    assert [code for code, _, _ in got] == [422] * 11 + [201]
    assert got[0][2] == [("spec.backoffLimitPerIndex", "Invalid value: 1: requires indexed completion mode")]


@pytest.mark.kube_apiserver
def test_indexed_job_rules_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours, theirs = _job_answers(daemon_sender(api_daemon), "jk"), _job_answers(kube_sender(kube_apiserver), "jk")
    for case, mine, real in zip(JOB_SPECS, ours, theirs, strict=True):
        assert mine == real, (case, mine, real)


# RBAC roles whose rules have several faults: every error, the declarative ones (verbs) last
ROLES: list[tuple[str, dict[str, Any]]] = [
    ("/apis/rbac.authorization.k8s.io/v1/clusterroles",
     {"rules": [{}, {"verbs": ["get"], "nonResourceURLs": ["/x"], "resources": ["pods"]}, {"apiGroups": [""]}]}),
    ("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
     {"rules": [{"nonResourceURLs": ["/y"], "apiGroups": [""]}, {"verbs": ["list"], "resources": ["pods"]}]}),
    ("/apis/rbac.authorization.k8s.io/v1/clusterroles",
     {"rules": [{"resources": ["pods"]}], "aggregationRule": {"clusterRoleSelectors": []}}),
]


def _role_answers(send: Send, prefix: str) -> list[Any]:
    out = []
    for i, (path, body) in enumerate(ROLES):
        name = f"{prefix}-{i}"
        code, answer = send("POST", path, {**body, "metadata": {"name": name}}, "application/json")
        out.append((code, answer.get("message", "").replace(name, "N"),
                    [(c.get("field"), c.get("message")) for c in (answer.get("details") or {}).get("causes") or []]))
    return out


def test_role_rules_list_every_error(api_daemon: Daemon) -> None:
    got = _role_answers(daemon_sender(api_daemon), "rv")
    assert [code for code, _, _ in got] == [422, 422, 422]
    assert [field for field, _ in got[0][2]] == [
        "rules[0].apiGroups", "rules[0].resources", "rules[1].nonResourceURLs", "rules[2].resources",
        "rules[0].verbs", "rules[2].verbs"]


@pytest.mark.kube_apiserver
def test_role_rules_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours, theirs = _role_answers(daemon_sender(api_daemon), "rk"), _role_answers(kube_sender(kube_apiserver), "rk")
    for case, mine, real in zip(ROLES, ours, theirs, strict=True):
        assert mine == real, (case, mine, real)
