"""Pod scheduling gates (KEP-3521) as kube-apiserver v1.37.2 and kube-scheduler handle them: the
SchedulingGated condition a create adds, the gates' validation (qualified names, no duplicates, no
nodeName while gated), updates that may only delete gates (and may add to a gated pod's
nodeSelector), and a gated pod left alone by the scheduler until its last gate goes. The API answers
are compared with the real kube-apiserver's in the kube-apiserver tier; the scheduling half runs on
the daemon (its node and embedded scheduler).
"""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_object_size import Send, _daemon_send, _sender

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PODS = "/api/v1/namespaces/default/pods"


def _pod(name: str, gates: list[str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulingGates": [{"name": g} for g in gates],
                     "containers": [{"name": "c", "image": "pause"}], **spec}}


def _conditions(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
            for c in (doc.get("status") or {}).get("conditions") or ()]


def _outcome(code: int, doc: Any) -> tuple[Any, ...]:
    if code >= 300:
        causes = [(c.get("reason"), c.get("field"), c.get("message"))
                  for c in (doc.get("details") or {}).get("causes") or ()]
        return code, doc.get("reason"), doc.get("message"), causes
    return code, [g["name"] for g in doc["spec"].get("schedulingGates") or ()], doc["spec"].get("nodeSelector"), \
        _conditions(doc)


def scenarios(send: Send, prefix: str) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}
    name = f"{prefix}-gated"

    def create(what: str, pod: dict[str, Any]) -> None:
        send("DELETE", f"{PODS}/{pod['metadata']['name']}?gracePeriodSeconds=0")
        out[what] = _outcome(*send("POST", PODS, pod))

    def update(what: str, change: Any) -> None:
        for _attempt in range(5):
            code, cur = send("GET", f"{PODS}/{name}")
            new = copy.deepcopy(cur)
            change(new["spec"])
            code, doc = send("PUT", f"{PODS}/{name}", new)
            if code != 409:
                break
        out[what] = _outcome(code, doc)

    create("gated", _pod(name, ["example.com/a", "example.com/b"], nodeSelector={"k": "v"}))
    create("bound and gated", _pod(f"{prefix}-bound", ["example.com/a"], nodeName="somewhere"))
    create("duplicate and invalid gates", _pod(f"{prefix}-bad", ["example.com/a", "example.com/a", "-no-"]))
    create("condition already given", {**_pod(f"{prefix}-cond", ["example.com/a"]), "status": {
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Mine"}]}})
    update("add a gate", lambda s: s["schedulingGates"].append({"name": "example.com/c"}))
    update("replace a gate", lambda s: s["schedulingGates"].__setitem__(0, {"name": "example.com/z"}))
    update("add to the nodeSelector", lambda s: s["nodeSelector"].update({"k2": "v2"}))
    update("change the nodeSelector", lambda s: s["nodeSelector"].update({"k": "other"}))
    update("remove one gate", lambda s: s["schedulingGates"].pop(0))
    update("add to the nodeSelector while bound-to-be", lambda s: s.pop("nodeSelector"))
    for suffix in ("bound", "bad", "cond"):
        send("DELETE", f"{PODS}/{prefix}-{suffix}?gracePeriodSeconds=0")
    return out


def test_gated_pod_waits_for_its_gates(api_daemon: Daemon) -> None:
    send = _daemon_send(api_daemon)
    got = scenarios(send, "sg")
    assert got["gated"][3] == [("PodScheduled", "False", "SchedulingGated",
                                "Scheduling is blocked due to non-empty scheduling gates")], got["gated"]
    assert got["bound and gated"][0] == 422 and got["add a gate"][0] == 422, got
    send("DELETE", f"{PODS}/sg-gated?gracePeriodSeconds=0")
    code, doc = send("POST", PODS, _pod("sg-held", ["example.com/a", "example.com/b"]))
    assert code == 201, doc
    time.sleep(2)  # the embedded scheduler has seen it by now: still unbound, no event
    code, pod = send("GET", f"{PODS}/sg-held")
    assert not pod["spec"].get("nodeName"), pod["spec"]
    code, events = send("GET", "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dsg-held")
    assert not events["items"], events["items"]
    for gates in (["example.com/b"], []):  # one gate left: still held; none: scheduled
        for _attempt in range(5):
            code, pod = send("GET", f"{PODS}/sg-held")
            pod["spec"]["schedulingGates"] = [{"name": g} for g in gates]
            code, doc = send("PUT", f"{PODS}/sg-held", pod)
            if code != 409:
                break
        assert code == 200, doc
        if gates:
            time.sleep(1)
            assert not send("GET", f"{PODS}/sg-held")[1]["spec"].get("nodeName")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        code, pod = send("GET", f"{PODS}/sg-held")
        if pod["spec"].get("nodeName"):
            break
        time.sleep(0.2)
    assert pod["spec"].get("nodeName") == "test-node", pod
    assert ("PodScheduled", "True") in [c[:2] for c in _conditions(pod)], pod["status"]
    send("DELETE", f"{PODS}/sg-held?gracePeriodSeconds=0")


@pytest.mark.kube_apiserver
def test_the_same_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = scenarios(_daemon_send(api_daemon), "sgo")
    theirs = scenarios(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}), "sgo")
    differ = [(k, ours[k], theirs.get(k)) for k in ours if ours[k] != theirs.get(k)]
    assert not differ, "\n".join(f"{k}:\n ours   {a}\n theirs {b}" for k, a, b in differ)
