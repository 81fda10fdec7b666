"""A pod create's managedFields compared with the real kube-apiserver's: the creator owns what it wrote
and the decoding's defaults, not what the mutating admission plugins add afterwards (the ServiceAccount
plugin's kube-api-access volume and mount, DefaultTolerationSeconds' tolerations), as upstream's create
handler takes the fields before admission. Runs against kube-apiserver only in its tier
(NODEAGENT_KUBE_APISERVER=1, the `kube_apiserver` marker); the daemon's half always runs.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_protobuf_answers import Raw, daemon_raw, kube_raw

pytestmark = [pytest.mark.integration]

PODS = "/api/v1/namespaces/default/pods"


def _created(send: Raw, name: str) -> dict[str, Any]:
    """The pod as the create answered it, made by "kubectl-run" once the namespace's default
    ServiceAccount exists (the real side's controller makes it shortly after start)."""
    deadline = time.monotonic() + 90
    while send("GET", "/api/v1/namespaces/default/serviceaccounts/default", None, "application/json")[0] != 200:
        assert time.monotonic() < deadline, "the default ServiceAccount never appeared"
        time.sleep(0.5)
    send("DELETE", f"{PODS}/{name}?gracePeriodSeconds=0", None, "application/json")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"run": name}},
           "spec": {"nodeName": "no-such-node", "containers": [{"name": "c", "image": "pause"}]}}
    code, _, body = send("POST", f"{PODS}?fieldManager=kubectl-run", pod, "application/json")
    assert code == 201, body
    out: dict[str, Any] = json.loads(body)
    send("DELETE", f"{PODS}/{name}?gracePeriodSeconds=0", None, "application/json")
    return out


def _entries(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "time"} for e in pod["metadata"]["managedFields"]]


def test_admission_added_fields_are_nobodys(api_daemon: Daemon) -> None:
    pod = _created(daemon_raw(api_daemon), "mf-admitted")
    assert pod["spec"]["volumes"][0]["name"].startswith("kube-api-access-") and pod["spec"]["tolerations"]
    [entry] = _entries(pod)
    assert entry["manager"] == "kubectl-run"
    spec = entry["fieldsV1"]["f:spec"]
    assert {"f:volumes", "f:tolerations", "f:serviceAccountName", "f:priority"}.isdisjoint(spec)
    assert "f:volumeMounts" not in spec["f:containers"]['k:{"name":"c"}']
    assert {"f:dnsPolicy", "f:restartPolicy", "f:schedulerName", "f:nodeName"} <= set(spec)


@pytest.mark.kube_apiserver
def test_create_managed_fields_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = _entries(_created(daemon_raw(api_daemon), "mf-compare"))
    theirs = _entries(_created(kube_raw(kube_apiserver), "mf-compare"))
    assert ours == theirs, (json.dumps(ours), json.dumps(theirs))
