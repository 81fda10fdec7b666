"""Graceful pod deletion through the embedded API server, as kube-apiserver and the kubelet do it.

`kubectl delete pod --grace-period=N` (waiting for the deletion, as kubectl does by default) sets
deletionTimestamp and deletionGracePeriodSeconds (the pod strategy's CheckGracefulDelete); the
node kills the containers, writes the terminal status (containers terminated, phase Succeeded:
a stopped container exits 0), gives back what the pod held, and then deletes the pod with period
0 and its uid as precondition (the status manager's canBeDeleted). A watch sees Terminating, the
terminal status, then DELETED; the pod-resources API no longer lists it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

POD = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers:
    - name: main
      image: registry.k8s.io/pause:3.10
      resources:
        requests: {{cpu: 100m, memory: 16Mi}}
    - name: side
      image: registry.k8s.io/pause:3.10
"""


Watch = Callable[..., "subprocess.Popen[str]"]


@pytest.fixture
def watch(api_daemon: Daemon) -> Iterator[Watch]:
    """Starts `kubectl get --watch` processes; each is stopped at teardown even when an assertion
    failed before the test read its events (a watch left running fails a later test)."""
    started: list[subprocess.Popen[str]] = []

    def start(*what: str) -> subprocess.Popen[str]:
        args = ["pod", *what] if len(what) == 1 else list(what[1:])
        proc = subprocess.Popen(
            ["kubectl", "--kubeconfig", str(api_daemon.kubeconfig), "get", *args, "--watch",
             "--output-watch-events", "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def first_event(proc: subprocess.Popen[str]) -> str:
    """The watch's first event (its list; kubectl writes one JSON document a line when it
    watches): read before the test acts, so the watch is on."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the watch ended before its first event"
    return line


def _events(proc: subprocess.Popen[str], first: str = "") -> list[dict[str, Any]]:
    proc.terminate()
    out, _ = proc.communicate(timeout=10)
    decoder, docs, text = json.JSONDecoder(), [], (first + out).strip()
    while text:
        doc, end = decoder.raw_decode(text)
        docs.append(doc)
        text = text[end:].strip()
    return docs


@pytest.mark.parametrize("grace", [1, 5, 30])
def test_delete_with_grace_period_goes_through_terminating(api_daemon: Daemon, watch: Watch, grace: int) -> None:
    d, name = api_daemon, f"graceful-{grace}"
    d.kubectl("apply", "-f", "-", input=POD.format(name=name))
    wait_for(lambda: d.kubectl("get", "pod", name, "-o", "jsonpath={.status.phase}").stdout == "Running",
             what="pod Running")
    uid = d.kubectl_json("get", "pod", name)["metadata"]["uid"]
    pods = watch(name)
    event_watch = watch(name, "events", "--field-selector", f"involvedObject.uid={uid}")
    first = first_event(pods)
    time.sleep(0.5)  # the event watch (it may have nothing to list)
    started = time.monotonic()
    out = d.kubectl("delete", "pod", name, f"--grace-period={grace}", timeout=grace + 30)
    took = time.monotonic() - started
    assert out.stdout == f'pod "{name}" deleted\n'
    assert took < grace + 10, f"deletion took {took:.1f}s with --grace-period={grace}"
    assert d.kubectl("get", "pod", name, check=False).returncode == 1

    events = _events(pods, first)
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "DELETED", kinds
    marked = [e["object"] for e in events if e["object"]["metadata"].get("deletionTimestamp")]
    assert marked, kinds
    assert marked[0]["metadata"]["deletionGracePeriodSeconds"] == grace
    assert marked[0]["metadata"]["uid"] == uid
    terminal = [o for o in marked if o["status"].get("phase") == "Succeeded"]
    assert terminal, [o["status"].get("phase") for o in marked]
    states = {c["name"]: c["state"] for c in terminal[0]["status"]["containerStatuses"]}
    assert {n: s["terminated"]["exitCode"] for n, s in states.items()} == {"main": 0, "side": 0}
    assert {s["terminated"]["reason"] for s in states.values()} == {"Completed"}
    ready = {c["type"]: c for c in terminal[0]["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")
    # the final DELETE came from the node, once terminal: its last state is the marked one, period 0
    assert events[-1]["object"]["metadata"]["deletionGracePeriodSeconds"] == 0

    # (nodeagent's events go with their pod, so they are watched while it terminates)
    killing = sorted(e["object"]["message"] for e in _events(event_watch)
                     if e["object"]["reason"] == "Killing" and e["type"] != "DELETED")
    assert killing == ["Stopping container main", "Stopping container side"]
    listed = json.loads(d.grpcurl(d.pod_resources, "v1.PodResourcesLister/List").stdout).get("pod_resources", [])
    assert name not in {p["name"] for p in listed}


def test_shorter_grace_period_replaces_a_pending_one_and_force_deletes(api_daemon: Daemon) -> None:
    """rest.BeforeDelete: while a deletion is pending a shorter period moves deletionTimestamp back
    by the difference; a pod no node runs (unscheduled) goes at once."""
    d, name = api_daemon, "graceful-unscheduled"
    d.kubectl("apply", "-f", "-", input=POD.format(name=name).replace(
        "spec:\n", "spec:\n  schedulerName: nobody\n"))
    out = d.kubectl("delete", "pod", name, "--grace-period=30", timeout=30)
    assert out.stdout == f'pod "{name}" deleted\n'
    assert d.kubectl("get", "pod", name, check=False).returncode == 1
