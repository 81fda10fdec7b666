"""Pod status writes are validated as kube-apiserver validates them (ValidatePodStatusUpdate's
allocatedResourcesStatus rules): the same 422, with the same message, field paths and texts.

The first run against a real kubelet found nodeagent's node writing `claim:gpu/gpu` for a
container whose claim reference names no request (the kubelet writes `claim:gpu`) and entries on
init containers, which kube-apiserver refused while nodeagent's API server took them. The cases
here go to nodeagent's API server always, and to the real kube-apiserver too when that tier runs
(NODEAGENT_KUBE_APISERVER=1), where both answers must be identical.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer

pytestmark = [pytest.mark.integration]

CLAIM_TEXT = ("must match one of the container's resource claims as 'claim:<claimName>/<requestName>' when "
              "container.resources.claims[*].request is set or 'claim:<claimName>' when it is empty")

Send = Callable[[str, str, Any, str], tuple[int, Any]]


def pod(name: str) -> dict[str, Any]:
    """A pod bound to a node that does not run (nothing else writes its status), with a claim
    referenced without a request by `main` and with one by the init container `setup`."""
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": "no-such-node",
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
            "initContainers": [{"name": "setup", "image": "pause",
                                "resources": {"claims": [{"name": "gpu", "request": "gpu"}]}}],
            "containers": [{"name": "main", "image": "pause",
                            "resources": {"claims": [{"name": "gpu"}], "requests": {"example.com/nic": "1"},
                                          "limits": {"example.com/nic": "1"}}}],
        },
    }


def _status(name: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "image": "pause", "imageID": "", "ready": False, "restartCount": 0,
            "state": {"waiting": {"reason": "ContainerCreating"}}, "allocatedResourcesStatus": entries}


def _health(*ids: str, health: str = "Healthy", **extra: Any) -> list[dict[str, Any]]:
    return [{"resourceID": i, "health": health, **extra} for i in ids]


# (case, status patch, expected 422 message or None when accepted)
CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("claim without request, as the kubelet names it",
     {"containerStatuses": [_status("main", [{"name": "claim:gpu", "resources": _health("d/p/0")}])]}, None),
    ("device plugin resource",
     {"containerStatuses": [_status("main", [{"name": "example.com/nic", "resources": _health("nic-0")}])]}, None),
    ("claim with a request the reference does not name",
     {"containerStatuses": [_status("main", [{"name": "claim:gpu/gpu", "resources": _health("d/p/0")}])]},
     'Pod "{pod}" is invalid: status.containerStatuses[0].allocatedResourcesStatus[0].name: '
     f'Invalid value: "claim:gpu/gpu": {CLAIM_TEXT}'),
    ("init container checked against its own claims",
     {"initContainerStatuses": [_status("setup", [{"name": "claim:gpu", "resources": _health("d/p/0")}])]},
     'Pod "{pod}" is invalid: status.initContainerStatuses[0].allocatedResourcesStatus[0].name: '
     f'Invalid value: "claim:gpu": {CLAIM_TEXT}'),
    ("resource not requested, bad health, duplicate id, empty message",
     {"containerStatuses": [_status("main", [
         {"name": "example.com/gpu", "resources": _health("a", "a", health="Broken")},
         {"name": "claim:gpu", "resources": _health("b", message="")}])]},
     'Pod "{pod}" is invalid: [status.containerStatuses[0].allocatedResourcesStatus[0].name: Invalid value: '
     '"example.com/gpu": must match one of the container\'s resource requests, '
     'status.containerStatuses[0].allocatedResourcesStatus[0].resources[0].health: Unsupported value: "Broken": '
     'supported values: "Healthy", "Unhealthy", "Unknown", '
     'status.containerStatuses[0].allocatedResourcesStatus[0].resources[1].health: Unsupported value: "Broken": '
     'supported values: "Healthy", "Unhealthy", "Unknown", '
     'status.containerStatuses[0].allocatedResourcesStatus[0].resources[1].resourceID: Duplicate value: "a", '
     'status.containerStatuses[0].allocatedResourcesStatus[1].resources[0].message: Required value: '
     'must be non-empty if specified]'),
    ("message over 1024 bytes",
     {"containerStatuses": [_status("main", [{"name": "claim:gpu", "resources": _health("b", message="x" * 1025)}])]},
     'Pod "{pod}" is invalid: status.containerStatuses[0].allocatedResourcesStatus[0].resources[0].message: '
     'Too long: may not be more than 1024 bytes'),
]


def daemon_sender(d: Daemon) -> Send:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    return _sender(cluster["server"], ctx, {"Authorization": f"Bearer {user['token']}"})


def kube_sender(server: KubeAPIServer) -> Send:
    return _sender(server.url, server._ssl(), {})


def _sender(url: str, ctx: ssl.SSLContext, headers: dict[str, str]) -> Send:
    def send(method: str, path: str, body: Any, content_type: str = "application/json") -> tuple[int, Any]:
        req = urllib.request.Request(url + path, data=json.dumps(body).encode() if body is not None else None,
                                     method=method, headers={**headers, "Accept": "application/json",
                                                             "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    return send


def run_case(send: Send, name: str, patch: dict[str, Any]) -> tuple[int, Any]:
    send("DELETE", f"/api/v1/namespaces/default/pods/{name}", {"gracePeriodSeconds": 0}, "application/json")
    code, body = send("POST", "/api/v1/namespaces/default/pods", pod(name), "application/json")
    assert code == 201, body
    return send("PATCH", f"/api/v1/namespaces/default/pods/{name}/status", {"status": patch},
                "application/merge-patch+json")


def _answer(code: int, body: Any) -> Any:
    """The parts of a Status that must match kube-apiserver's (an accepted write: its code only)."""
    if code < 300:
        return code
    return code, body.get("reason"), body.get("message"), body.get("details")


@pytest.mark.parametrize(("case", "patch", "message"), CASES, ids=[c[0] for c in CASES])
def test_embedded_api_server_validates_allocated_resources_status(
        api_daemon: Daemon, case: str, patch: dict[str, Any], message: str | None) -> None:
    name = f"arstatus-{CASES.index((case, patch, message))}"
    code, body = run_case(daemon_sender(api_daemon), name, patch)
    if message is None:
        assert code == 200, body
        return
    assert code == 422, body
    assert body["message"] == message.format(pod=name)
    assert body["details"]["name"] == name and body["details"]["kind"] == "Pod"
    for cause in body["details"]["causes"]:
        assert cause["field"].startswith("status.") and cause["message"] in body["message"]


@pytest.mark.kube_apiserver
def test_the_same_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours, theirs = daemon_sender(api_daemon), kube_sender(kube_apiserver)
    for i, (case, patch, _) in enumerate(CASES):
        name = f"arstatus-cmp-{i}"
        assert _answer(*run_case(ours, name, patch)) == _answer(*run_case(theirs, name, patch)), case
