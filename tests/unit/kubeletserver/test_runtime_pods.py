"""/runningpods/: which pods and containers the simulated runtime reports, in the runtime manager's order."""

from __future__ import annotations

import dataclasses
from typing import Any

from nodeagent.kubeletserver.runtime_pods import running_pods
from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.objects.pod.model import Pod, PodStatus
from nodeagent.pods.status import finished_status, running_status
from nodeagent.util.clock import FakeClock


def _pod(name: str, *, init: bool = False) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "a", "image": "img"}, {"name": "b", "image": "img-b"}]}
    if init:
        spec["initContainers"] = [{"name": "side", "image": "img-s", "restartPolicy": "Always"},
                                  {"name": "once", "image": "img-o"}]
    return pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
                              "spec": spec}, uid=f"uid-{name}", clock=FakeClock())


def test_only_pods_with_a_ready_sandbox_and_their_running_containers() -> None:
    web = _pod("web", init=True)
    status = running_status(web, "BestEffort", 100.0)
    # the one-shot init container has terminated, the sidecar runs; container b has not started yet
    init = tuple(dataclasses.replace(cs, state="terminated" if cs.name == "once" else "running", started_at=100.0)
                 for cs in status.init_container_statuses)
    ctrs = tuple(dataclasses.replace(cs, state="waiting") if cs.name == "b" else cs for cs in status.container_statuses)
    status = dataclasses.replace(status, init_container_statuses=init, container_statuses=ctrs)
    done = _pod("done")
    pending = _pod("pending")
    out = running_pods([(web, status), (done, finished_status(running_status(done, "BestEffort", 90.0), 0, 95.0)),
                        (pending, PodStatus())])
    assert out == [{"metadata": {"name": "web", "namespace": "ns", "uid": "uid-web"},
                    "spec": {"containers": [{"name": "a", "image": "img", "resources": {}},
                                            {"name": "side", "image": "img-s", "resources": {}}]},
                    "status": {}}]


def test_newest_pod_first_and_no_running_container_is_null() -> None:
    old, new = _pod("old"), _pod("new")
    old_status = running_status(old, "BestEffort", 10.0)
    new_status = running_status(new, "BestEffort", 20.0)
    waiting = dataclasses.replace(new_status, container_statuses=tuple(
        dataclasses.replace(cs, state="waiting") for cs in new_status.container_statuses))
    assert [p["metadata"]["name"] for p in running_pods([(old, old_status), (new, new_status)])] == ["new", "old"]
    # a sandbox with nothing running: containers null (Go's nil slice)
    assert running_pods([(new, waiting)])[0]["spec"] == {"containers": None}
