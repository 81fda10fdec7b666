"""The embedded endpoints and endpointslice controllers against kube-controller-manager v1.37.2's (the
fixture binary's role, `--controllers=endpoint,endpointslice`), both on nodeagent's API server: the same
Services (with a selector and named target ports, headless, without a selector) over the same pods (ready
with an IP, not ready with an IP, without an IP, as every nodeagent pod is) leave the same Endpoints and
EndpointSlices once uids, resourceVersions, times and the slices' random suffixes are mapped.

Opt-in with the kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1: the same cached fixture binary), skipped
with its reason otherwise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon, wait_for
from tests.integration.test_real_scheduler import embedded_and_kcm

pytestmark = [pytest.mark.integration, pytest.mark.kube_apiserver]

SERVICES = [
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "labels": {"tier": "front"}},
     "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"},
                                                     {"name": "m", "port": 81, "targetPort": 9090,
                                                      "protocol": "UDP"}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hl"},
     "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "nosel"}, "spec": {"ports": [{"port": 80}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "empty"},
     "spec": {"selector": {"app": "none"}, "ports": [{"port": 80}]}},
]
PODS = {"ready": ("10.244.0.5", True, "ghost"), "unready": ("10.244.0.4", False, "ghost"),
        "noip": (None, True, "ghost"), "lost": ("10.244.0.7", True, "gone")}
"""name: (IP, Ready, node): `ghost` is a Node object without an agent (its pods' status stays as patched), `gone`
no Node at all (the endpointslice controller leaves its pod out, the endpoints controller does not)."""


@pytest.fixture(scope="module")
def pair(kube_apiserver_binary: Path) -> Iterator[tuple[Daemon, Daemon]]:
    """(a daemon with the embedded controllers, one with kube-controller-manager"s instead)."""
    with embedded_and_kcm(kube_apiserver_binary, "na-rep-", ["endpoints-controller", "endpointslice-controller"],
                          "endpoint,endpointslice") as pair:
        yield pair


def _pods(d: Daemon) -> None:
    d.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "ghost", "labels": {"topology.kubernetes.io/zone": "z1"}}}))
    for name, (ip, ready, node) in PODS.items():
        d.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "image": "pause", "ports": [{"name": "http", "containerPort": 8080}]}]}}))
        status: dict[str, Any] = {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": "2026-11-30T10:00:00Z"}]}
        if ip:
            status |= {"podIP": ip, "podIPs": [{"ip": ip}]}
        d.kubectl("patch", "pod", name, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}))


def observe(d: Daemon) -> dict[str, Any]:
    """Endpoints by name and EndpointSlices by Service, uids, versions, times and suffixes mapped."""
    uids = {o["metadata"]["uid"]: f"<{o['kind']}/{o['metadata']['name']}>"
            for kind in ("pods", "services") for o in d.kubectl_json("get", kind)["items"]}
    out: dict[str, Any] = {}
    for kind in ("endpoints", "endpointslices"):
        for o in d.kubectl_json("get", kind)["items"]:
            md = o["metadata"]
            keep = {k: md.get(k) for k in ("name", "generateName", "labels", "annotations", "ownerReferences")}
            body = {k: v for k, v in o.items() if k not in ("metadata", "apiVersion", "kind")}
            if kind == "endpointslices":
                # kube-controller-manager sends `endpoints: []` for no endpoint; kube-apiserver's protobuf storage
                # gives it back as null, nodeagent's JSON storage as []: both read as "none" here
                body["endpoints"] = sorted(body.get("endpoints") or [], key=lambda e: e["targetRef"]["name"])
                body["ports"] = body.get("ports") or []
            text = json.dumps({"metadata": keep, **body}, sort_keys=True)
            for uid, name in uids.items():
                text = text.replace(uid, name)
            text = re.sub(r'"(\d{4}-\d\d-\d\dT[0-9:.]+Z)"', '"<t>"', text)
            obj = json.loads(text)
            if kind == "endpointslices":
                obj["metadata"]["name"] = re.sub(r"-[a-z0-9]{5}$", "-<r>", obj["metadata"]["name"])
            out[f"{kind}/{obj['metadata']['name']}"] = obj
    return out


@pytest.mark.timeout(180)
def test_the_same_endpoints_and_endpointslices_as_kube_controller_manager(pair: tuple[Daemon, Daemon]) -> None:
    for d in pair:
        _pods(d)
        d.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": SERVICES}))
    wanted = {"endpoints/web", "endpoints/hl", "endpoints/empty", "endpointslices/web-<r>", "endpointslices/hl-<r>",
              "endpointslices/empty-<r>"}

    def settled(d: Daemon) -> dict[str, Any] | None:
        seen = observe(d)
        web = seen.get("endpoints/web", {}).get("subsets") or [{}]
        slices = seen.get("endpointslices/web-<r>", {}).get("endpoints") or []
        return seen if wanted <= set(seen) and web[0].get("notReadyAddresses") and len(slices) == 2 else None

    mine = wait_for(lambda: settled(pair[0]), timeout=60, what="the embedded controllers' objects")
    theirs = wait_for(lambda: settled(pair[1]), timeout=60, what="kube-controller-manager's objects")
    assert "endpoints/nosel" not in theirs
    assert theirs["endpointslices/empty-<r>"]["endpoints"] == []
    assert [a["ip"] for a in theirs["endpoints/web"]["subsets"][0]["addresses"]] == ["10.244.0.5", "10.244.0.7"]
    assert [e["addresses"] for e in theirs["endpointslices/web-<r>"]["endpoints"]] == [["10.244.0.5"], ["10.244.0.4"]]
    assert mine == theirs
