"""Services as a cluster shows them, on the embedded control plane and on the real one (realcp_twin: the
same daemon with its node and two virtual nodes; kube-apiserver, kube-controller-manager v1.37.2 on the real
side): the `default/kubernetes` Service (the first address of each side's service range, port https 443 ->
the API server's secure port), no Endpoints or EndpointSlice `kubernetes` (the API server listens on loopback:
the real one runs with --endpoint-reconciler-type=none), and for a Deployment's pods (no pod IP on either side)
behind a Service with a selector, a headless one and one without a selector, the same Endpoints and
EndpointSlices once uids, times and the slices' random suffixes are mapped. The service range differs by
construction: 10.0.0.0/24 embedded (kube-apiserver's default), 10.96.0.0/12 for the real one (nodeagent's
controlPlane.kubernetes default, kubeadm's).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.integration.daemon_helpers import wait_for
from tests.integration.test_real_control_plane import RealCP

OBJECTS = [
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}},
                           "spec": {"containers": [{"name": "c", "image": "pause",
                                                    "ports": [{"containerPort": 8080, "name": "http"}]}],
                                    "tolerations": [{"operator": "Exists"}]}}}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
     "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hl", "namespace": "default"},
     "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "nosel", "namespace": "default"},
     "spec": {"ports": [{"port": 80, "targetPort": 8080}]}},
]
pytestmark = [pytest.mark.integration]

FIRST = {False: "10.0.0.1", True: "10.96.0.1"}


def _observe(cp: RealCP) -> dict[str, Any]:
    uids = {o["metadata"]["uid"]: f"<{o['metadata']['name']}>" for o in cp.get("services", "-n", "default")["items"]}
    out: dict[str, Any] = {}
    for kind in ("endpoints", "endpointslices"):
        for o in cp.get(kind, "-A")["items"]:
            md = o["metadata"]
            body = {k: v for k, v in o.items() if k not in ("metadata", "apiVersion", "kind")}
            text = json.dumps({"metadata": {k: md.get(k) for k in ("namespace", "generateName", "labels",
                                                                    "annotations", "ownerReferences")}, **body})
            for uid, name in uids.items():
                text = text.replace(uid, name)
            out[f"{kind}/{re.sub(r'-[a-z0-9]{5}$', '-<r>', md['name'])}"] = json.loads(
                re.sub(r'"\d{4}-\d\d-\d\dT[0-9:.]+Z"', '"<t>"', text))
    return out


def _slice_labels(service: str, **more: str) -> dict[str, str]:
    return {"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
            "kubernetes.io/service-name": service, **more}


@pytest.mark.timeout(300)
def test_the_kubernetes_service_and_the_endpoints_of_services(realcp_twin: tuple[RealCP, bool]) -> None:
    cp, real = realcp_twin
    cp.start()
    svc = wait_for(lambda: cp.get("service", "kubernetes", "-n", "default"), timeout=60, what="the kubernetes Service")
    port = urlsplit(yaml.safe_load(cp.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]).port
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert {k: v for k, v in svc["spec"].items() if k not in ("clusterIP", "clusterIPs")} == {
        "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
        "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
        "sessionAffinity": "None", "type": "ClusterIP"}
    assert (svc["spec"]["clusterIP"], svc["spec"]["clusterIPs"]) == (FIRST[real], [FIRST[real]])
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(OBJECTS))

    def settled() -> dict[str, Any] | None:
        found = _observe(cp)
        return found if len(found) == 4 else None

    seen = wait_for(settled, timeout=60, what="the Endpoints and EndpointSlices")
    trigger = {"endpoints.kubernetes.io/last-change-trigger-time": "<t>"}
    owner: list[dict[str, Any]] = [{"apiVersion": "v1", "blockOwnerDeletion": True, "controller": True,
                                    "kind": "Service"}]
    assert seen == {
        "endpoints/web": {"metadata": {"namespace": "default", "generateName": None, "annotations": trigger,
                                       "labels": {"endpoints.kubernetes.io/managed-by": "endpoint-controller"},
                                       "ownerReferences": None}},
        "endpoints/hl": {"metadata": {"namespace": "default", "generateName": None, "annotations": trigger,
                                      "labels": {"endpoints.kubernetes.io/managed-by": "endpoint-controller",
                                                 "service.kubernetes.io/headless": ""},
                                      "ownerReferences": None}},
        "endpointslices/web-<r>": {"metadata": {
            "namespace": "default", "generateName": "web-", "annotations": trigger,
            "labels": _slice_labels("web"),
            "ownerReferences": [{**owner[0], "name": "web", "uid": "<web>"}]},
            "addressType": "IPv4", "endpoints": None, "ports": None},
        "endpointslices/hl-<r>": {"metadata": {
            "namespace": "default", "generateName": "hl-", "annotations": trigger,
            "labels": _slice_labels("hl", **{"service.kubernetes.io/headless": ""}),
            "ownerReferences": [{**owner[0], "name": "hl", "uid": "<hl>"}]},
            "addressType": "IPv4", "endpoints": None, "ports": None},
    }
