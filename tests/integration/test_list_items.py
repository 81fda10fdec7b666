"""A LIST answer's items as kube-apiserver v1.37.2 writes them in JSON: a typed list's items carry no
apiVersion/kind (its encoder writes the list's TypeMeta only; kubectl and client-go set them again on
decoding), a custom resource's keep theirs. Compared with the real kube-apiserver in its tier.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.crd_served import wait_served
from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_object_size import CRD, Send, _daemon_send, _sender

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
BLOBS = "/apis/size.nodeagent.test/v1/namespaces/default/blobs"


def scenarios(send: Send) -> dict[str, Any]:
    send("POST", "/api/v1/namespaces/default/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                                            "metadata": {"name": "li-cm"}})
    send("POST", "/api/v1/namespaces/default/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "li-ev"}, "type": "Normal", "reason": "R",
        "message": "m", "involvedObject": {"kind": "ConfigMap", "name": "li-cm", "namespace": "default"}})
    send("POST", CRDS, CRD)
    wait_served(lambda: send("GET", BLOBS)[0])
    send("POST", BLOBS, {"apiVersion": "size.nodeagent.test/v1", "kind": "Blob", "metadata": {"name": "li-b"}})
    out: dict[str, Any] = {}
    for path in ("/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/events",
                 "/apis/events.k8s.io/v1/namespaces/default/events", "/api/v1/namespaces", BLOBS):
        code, doc = send("GET", path)
        out[path] = (code, doc.get("apiVersion"), doc.get("kind"),
                     sorted({(i.get("apiVersion"), i.get("kind")) for i in doc["items"]}, key=str))
    send("DELETE", f"{BLOBS}/li-b")
    send("DELETE", "/api/v1/namespaces/default/configmaps/li-cm")
    return out


def test_typed_list_items_carry_no_type_meta(api_daemon: Daemon) -> None:
    got = scenarios(_daemon_send(api_daemon))
    assert got["/api/v1/namespaces/default/configmaps"] == (200, "v1", "ConfigMapList", [(None, None)])
    assert got["/apis/events.k8s.io/v1/namespaces/default/events"][3] == [(None, None)]
    assert got[BLOBS] == (200, "size.nodeagent.test/v1", "BlobList", [("size.nodeagent.test/v1", "Blob")])


@pytest.mark.kube_apiserver
def test_the_same_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    assert scenarios(_daemon_send(api_daemon)) == scenarios(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}))
