"""node.k8s.io/v1 RuntimeClass, which the embedded API server once did not serve: created, listed,
refused and updated through a running daemon's REST API and kubectl; when the kube-apiserver tier runs
(NODEAGENT_KUBE_APISERVER=1) the stored object, the 422 answers, the `kubectl get` row and the discovery
entry equal the real kube-apiserver's.
"""

from __future__ import annotations

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
RCS = "/apis/node.k8s.io/v1/runtimeclasses"


def _rc(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, **fields}


GOOD = _rc("nk-rc", handler="runsc", overhead={"podFixed": {"cpu": "250m", "memory": "64Mi"}},
           scheduling={"nodeSelector": {"sandbox": "gvisor"},
                       "tolerations": [{"key": "sandbox", "operator": "Equal", "value": "gvisor",
                                        "effect": "NoSchedule"}]})
TOL = {"key": "a", "operator": "Exists", "effect": "NoSchedule"}
CREATES: list[tuple[dict[str, Any], str]] = [
    (_rc("nk-bad"), "handler: Required value"),
    (_rc("nk-bad", handler="Run_SC"),
     'handler: Invalid value: "Run_SC": a lowercase RFC 1123 label must consist of lower case alphanumeric '
     "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
     "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    (_rc("nk-bad", handler="runc", overhead={"podFixed": {"cpu": "-1"}}),
     'overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0'),
    (_rc("nk-bad", handler="runc", scheduling={"nodeSelector": {"a": "-x-"}}),
     'scheduling.nodeSelector: Invalid value: "-x-": a valid label must be an empty string or consist of '
     "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
     "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
     "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    (_rc("nk-bad", handler="runc", scheduling={"tolerations": [{"operator": "Equal", "value": "v"}]}),
     'scheduling.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, '
     'which means "match all values and all keys"'),
    (_rc("nk-bad", handler="runc", scheduling={"tolerations": [TOL, TOL]}),
     'scheduling.tolerations[1]: Duplicate value: {"Key":"a","Operator":"Exists","Value":"","Effect":"NoSchedule",'
     '"TolerationSeconds":null}'),
]


def _refusal(code: int, body: Any) -> Any:
    return code, body.get("reason"), body.get("message"), body.get("details")


def _answers(send: Send, tag: str) -> list[Any]:
    out: list[Any] = [_refusal(*send("POST", RCS, obj, JSON)) for obj, _ in CREATES]
    name = f"nk-rc-{tag}"
    code, made = send("POST", RCS, {**GOOD, "metadata": {"name": name}}, JSON)
    assert code == 201, made
    try:
        out.append((made["handler"], made["overhead"], made["scheduling"], made["metadata"].get("generation")))
        out.append(_refusal(*send("PATCH", f"{RCS}/{name}", {"handler": "kata"}, MERGE)))
        # an update without a resourceVersion is refused (AllowUnconditionalUpdate false)
        out.append(_refusal(*send("PUT", f"{RCS}/{name}", {**GOOD, "metadata": {"name": name}}, JSON)))
    finally:
        send("DELETE", f"{RCS}/{name}", None, JSON)
    return out


def test_refusals_and_stored(api_daemon: Daemon) -> None:
    got = _answers(daemon_sender(api_daemon), "a")
    for (code, reason, message, _), (_, text) in zip(got, CREATES, strict=False):
        assert (code, reason, message) == (422, "Invalid", f'RuntimeClass.node.k8s.io "nk-bad" is invalid: {text}')
    assert got[len(CREATES)] == ("runsc", GOOD["overhead"], GOOD["scheduling"], None)
    assert got[len(CREATES) + 1][2] == ('RuntimeClass.node.k8s.io "nk-rc-a" is invalid: handler: Invalid value: '
                                        "null: field is immutable")
    assert got[len(CREATES) + 2][0] == 422


@pytest.mark.kube_apiserver
def test_refusals_and_stored_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    assert _answers(daemon_sender(api_daemon), "b") == _answers(kube_sender(kube_apiserver), "b")


def _discovered(send: Send) -> Any:
    code, doc = send("GET", "/apis/node.k8s.io/v1", None, JSON)
    assert code == 200, doc
    return [(r["name"], r["namespaced"], r["kind"], sorted(r["verbs"]), r.get("shortNames")) for r in doc["resources"]]


def test_kubectl_apply_get_delete(api_daemon: Daemon) -> None:
    out = api_daemon.kubectl("apply", "-f", "-", input=yaml.safe_dump(GOOD)).stdout.strip()
    assert out == "runtimeclass.node.k8s.io/nk-rc created"
    try:
        table = [line.split() for line in api_daemon.kubectl("get", "runtimeclass", "nk-rc").stdout.splitlines()]
        assert table[0] == ["NAME", "HANDLER", "AGE"] and table[1][:2] == ["nk-rc", "runsc"]
    finally:
        api_daemon.kubectl("delete", "runtimeclass", "nk-rc")
    assert _discovered(daemon_sender(api_daemon))[0][:3] == ("runtimeclasses", False, "RuntimeClass")


@pytest.mark.kube_apiserver
def test_table_and_discovery_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    assert _discovered(daemon_sender(api_daemon)) == _discovered(kube_sender(kube_apiserver))
    rows = []
    for kubectl in (api_daemon.kubectl, kube_apiserver.kubectl):
        kubectl("create", "-f", "-", input=yaml.safe_dump(GOOD))
        try:
            rows.append([line.split()[:-1] for line in kubectl("get", "runtimeclass", "nk-rc").stdout.splitlines()])
        finally:
            kubectl("delete", "runtimeclass", "nk-rc")
    assert rows[0] == rows[1]
