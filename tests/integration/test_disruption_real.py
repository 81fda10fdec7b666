"""PodDisruptionBudgets and the Eviction API as kube-apiserver and kube-controller-manager v1.37.2 have
them: the same daemon (its node and two virtual nodes) on the embedded control plane (always) and on the
real one (controlPlane.kubernetes, the kube-apiserver tier), the same objects on both, the same answers.

- a budget `minAvailable: 1` over a Deployment of 2: NoPods before the pods exist, then the status
  kube-controller-manager's disruption controller writes (currentHealthy 2, desiredHealthy 1,
  disruptionsAllowed 1, expectedPods 2, DisruptionAllowed True/SufficientPods);
- an eviction it allows: a Status Success (201), the pod marked DisruptionTarget
  (EvictionByEvictionAPI) and deleted (a finalizer holds it to be looked at), the budget's
  disruptionsAllowed used up in the same answer;
- a budget `minAvailable: 2` over 2: the 429 body (its DisruptionBudget cause), a dry-run eviction
  likewise; a second budget over the same pods: the 500 Status;
- `kubectl drain` of the virtual node holding those pods: kubectl's refusals and exit code.
Both runs are checked against the same literals, after the run-specific parts (names, times) are mapped.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import wait_for
from tests.integration.test_real_control_plane import NODE, RealCP, node_ready

pytestmark = [pytest.mark.integration]

PODS = "/api/v1/namespaces/default/pods"
HOLD = "example.com/hold"


def _deployment(name: str, node: str, finalizer: bool) -> dict[str, Any]:
    md: dict[str, Any] = {"labels": {"app": name}}
    if finalizer:
        md["finalizers"] = [HOLD]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": md, "spec": {
                         "nodeSelector": {"kubernetes.io/hostname": node},
                         "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "c", "image": "pause"}]}}}}


def _pdb(name: str, app: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}, **spec}}


def _eviction(pod: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": "default"}, **extra}


class Client:
    """(code, decoded body) of raw requests with the daemon's admin kubeconfig (token or client certificate)."""

    def __init__(self, kubeconfig: Path, folder: Path) -> None:
        cfg = yaml.safe_load(kubeconfig.read_text())
        cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
        self.url = cluster["server"]
        self.ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        self.headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if user.get("token"):
            self.headers["Authorization"] = f"Bearer {user['token']}"
        if user.get("client-certificate-data"):
            cert, key = folder / "admin.crt", folder / "admin.key"
            cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
            key.write_bytes(base64.b64decode(user["client-key-data"]))
            self.ctx.load_cert_chain(str(cert), str(key))

    def send(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=60) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            with err:
                return err.code, json.loads(err.read() or b"{}")


def _status(pdb: dict[str, Any]) -> dict[str, Any]:
    """The status without the times (lastTransitionTime, disruptedPods' stamps)."""
    out: dict[str, Any] = json.loads(json.dumps(pdb.get("status") or {}))
    for cond in out.get("conditions") or ():
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", cond.pop("lastTransitionTime")), cond
    if "disruptedPods" in out:
        out["disruptedPods"] = sorted(out["disruptedPods"])
    return out


def _pods(cp: RealCP, app: str) -> list[dict[str, Any]]:
    return sorted(cp.get("pods", "-l", f"app={app}")["items"], key=lambda p: p["metadata"]["name"])


def _ready(cp: RealCP, app: str) -> list[str] | None:
    pods = _pods(cp, app)
    ready = [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp") and any(
        c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or ())]
    return ready if len(ready) == 2 else None


def _events(cp: RealCP, name: str) -> list[tuple[str, str, str, str]]:
    return sorted({(e["type"], e["reason"], e["message"], e["source"].get("component", ""))
                   for e in cp.get("events", "--field-selector", f"involvedObject.name={name}")["items"]})


SUFFICIENT = {"conditions": [{"message": "", "observedGeneration": 1, "reason": "SufficientPods", "status": "True",
                              "type": "DisruptionAllowed"}],
              "currentHealthy": 2, "desiredHealthy": 1, "disruptionsAllowed": 1, "expectedPods": 2,
              "observedGeneration": 1}
BLOCKED = {"conditions": [{"message": "", "observedGeneration": 1, "reason": "InsufficientPods", "status": "False",
                           "type": "DisruptionAllowed"}],
           "currentHealthy": 2, "desiredHealthy": 2, "disruptionsAllowed": 0, "expectedPods": 2,
           "observedGeneration": 1}
TIMEOUT = "global timeout reached: 3s"
VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."
REFUSED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": VIOLATES,
           "reason": "TooManyRequests", "details": {"causes": [{"reason": "DisruptionBudget", "message":
                                                               "The disruption budget two needs 2 healthy pods and "
                                                               "has 2 currently"}]}, "code": 429}


@pytest.mark.timeout(600)
def test_disruption_budgets_and_evictions_as_upstream(realcp_twin: tuple[RealCP, bool]) -> None:
    cp, _real = realcp_twin
    cp.start()
    wait_for(lambda: all(node_ready(cp, n) for n in (NODE, "rcv-0", "rcv-1")), timeout=120, what="three nodes Ready")
    with tempfile.TemporaryDirectory(prefix="na-ev-") as folder:
        api = Client(cp.kubeconfig, Path(folder))
        _check(cp, api)


def _check(cp: RealCP, api: Client) -> None:
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump(_pdb("one", "one", minAvailable=1)))
    wait_for(lambda: _events(cp, "one") or None, timeout=60, what="the NoPods event")
    assert _events(cp, "one") == [("Normal", "NoPods", "No matching pods found", "controllermanager")]
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
        _deployment("one", "rcv-0", True), _deployment("two", "rcv-1", False), _pdb("two", "two", minAvailable=2)]))
    first, _second = wait_for(lambda: _ready(cp, "one"), timeout=120, what="two Ready pods of one")
    wait_for(lambda: _ready(cp, "two"), timeout=120, what="two Ready pods of two")
    wait_for(lambda: _status(cp.get("pdb", "one")) == SUFFICIENT or None, timeout=60,
             what=f"budget one's status {SUFFICIENT}")
    wait_for(lambda: _status(cp.get("pdb", "two")) == BLOCKED or None, timeout=60,
             what=f"budget two's status {BLOCKED}")

    # allowed: Success, DisruptionTarget, deleted (the finalizer holds it); the budget's decrement is not
    # looked at here (the replacement pod is Ready at once on a virtual node: the controller restores it)
    code, doc = api.send("POST", f"{PODS}/{first}/eviction", _eviction(first))
    assert (code, doc) == (201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                 "code": 201})
    pod = cp.get("pod", first)
    assert pod["metadata"].get("deletionTimestamp")
    (target,) = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert {k: v for k, v in target.items() if k != "lastTransitionTime"} == {
        "type": "DisruptionTarget", "status": "True", "lastProbeTime": None, "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting"}
    cp.kubectl("patch", "pod", first, "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    wait_for(lambda: cp.kubectl("get", "pod", first, "--ignore-not-found") == "" or None, timeout=60,
             what=f"{first} gone")
    wait_for(lambda: _ready(cp, "one"), timeout=120, what="one's replacement Ready")
    wait_for(lambda: _status(cp.get("pdb", "one")) == SUFFICIENT or None, timeout=60,
             what=f"budget one's status {SUFFICIENT} again")

    # refused: the 429 body, a dry run likewise; the pod untouched
    victim = _pods(cp, "two")[0]["metadata"]["name"]
    assert api.send("POST", f"{PODS}/{victim}/eviction", _eviction(victim)) == (429, REFUSED)
    assert api.send("POST", f"{PODS}/{victim}/eviction?dryRun=All", _eviction(victim)) == (429, REFUSED)
    assert api.send("POST", f"{PODS}/{victim}/eviction", _eviction("other"))[0] == 400
    pod = cp.get("pod", victim)
    assert not pod["metadata"].get("deletionTimestamp")
    assert "DisruptionTarget" not in [c["type"] for c in pod["status"]["conditions"]]

    # kubectl drain: the node cordoned, every eviction refused until the timeout (kubectl 1.32's lines)
    gave_up = f'error when evicting pods/"<pod>" -n "default": {TIMEOUT}'
    assert _drain(cp) == (1, sorted({
        " rcv-1",
        "There are pending nodes to be drained:",
        f'There are pending pods in node "rcv-1" when an error occurred: [{gave_up}, {gave_up}]',
        'error when evicting pods/"<pod>" -n "default" (will retry after 5s): ' + VIOLATES,
        gave_up,
        f'error: unable to drain node "rcv-1" due to error: [{gave_up}, {gave_up}], continuing command...',
        "evicting pod default/<pod>",
        "node/rcv-1 cordoned",
        "pod/<pod>"}))
    assert not cp.get("pod", victim)["metadata"].get("deletionTimestamp")

    # two budgets over one pod: the 500 Status, nothing deleted
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump(_pdb("three", "two", maxUnavailable=1)))
    assert api.send("POST", f"{PODS}/{victim}/eviction", _eviction(victim)) == (500, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        "code": 500})
    assert not cp.get("pod", victim)["metadata"].get("deletionTimestamp")


def _drain(cp: RealCP) -> tuple[int, list[str]]:
    tool = shutil.which("kubectl")
    assert tool is not None
    out = subprocess.run([tool, "--kubeconfig", str(cp.kubeconfig), "drain", "rcv-1", "--ignore-daemonsets",
                          "--timeout=3s"], capture_output=True, text=True, timeout=60)
    names = {p["metadata"]["name"] for p in _pods(cp, "two")}
    text = out.stdout + out.stderr
    for name in names:
        text = text.replace(name, "<pod>")
    return out.returncode, sorted({line for line in text.splitlines() if line.strip()})
