"""A real client-go program against a running daemon's Kubernetes API, making the DRA kubelet-plugin helper's calls.

tests/fixtures/clientgo is a Go program on client-go (k8s.io/client-go v0.34) that does what
k8s.io/dynamic-resource-allocation's kubeletplugin helper and resourceslice controller do: GET
the Node, a ResourceSlice informer with the field selector spec.driver=D,spec.nodeName=N (plain
LIST+WATCH, or WatchList when KUBE_FEATURE_WatchListClient=true), create with generateName,
update, delete with {uid, resourceVersion} preconditions, and GET the ResourceClaim in v1,
v1beta2 and v1beta1. It prints one JSON line per step; these tests assert on them. The program
is built once per session (go's build cache keeps later sessions fast); without `go` or the Go
module proxy the tests are skipped. One daemon serves every run; each run uses its own driver
and claim names.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon, daemon_in_temp_dir

pytestmark = [pytest.mark.integration]

NODE = "test-node"
JSON = "application/json"

# The steps of a successful run, in order (slice-delete-stale twice: stale resourceVersion, wrong uid).
STEPS = [
    "config", "node-get", "informer-sync", "claim-create", "claim-status",
    "slice-create", "slice-added", "foreign-create", "slice-update", "slice-modified", "slice-update-stale",
    "slice-get", "slice-list", "slice-delete-stale", "slice-delete-stale", "slice-delete", "slice-deleted",
    "slice-gone", "field-selector", "claim-missing", "claim-get", "watch-errors", "done",
]


@dataclass
class Run:
    """One run of the program: its report lines and its stderr (every HTTP exchange, klog)."""

    name: str
    returncode: int
    steps: list[dict[str, Any]]
    stderr: str

    def step(self, name: str) -> dict[str, Any]:
        found = [s for s in self.steps if s["step"] == name]
        assert found, f"no step {name!r} in {self.describe()}"
        return found[0]

    def all(self, name: str) -> list[dict[str, Any]]:
        return [s for s in self.steps if s["step"] == name]

    def describe(self) -> str:
        lines = "\n".join(json.dumps(s) for s in self.steps)
        return f"run {self.name} exited {self.returncode}:\n{lines}\n--- stderr (tail) ---\n{self.stderr[-4000:]}"


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with daemon_in_temp_dir("na-cg-") as d:
        yield d


@pytest.fixture(scope="module")
def runs(clientgo: Path, daemon: Daemon) -> Callable[[str, str, bool], Run]:
    """Run the program once per (name, content type, WatchList) and remember the result."""
    done: dict[tuple[str, str, bool], Run] = {}

    def run(name: str, content_type: str, watch_list: bool) -> Run:
        key = (name, content_type, watch_list)
        if key not in done:
            env = {**os.environ, "KUBE_FEATURE_WatchListClient": "true" if watch_list else "false"}
            out = subprocess.run(
                [str(clientgo), "-kubeconfig", str(daemon.kubeconfig), "-node", NODE, "-create-claim",
                 "-driver", f"{name}.clientgo.nodeagent.test", "-claim", f"clientgo-{name}",
                 "-content-type", content_type, "-wait", "10s"],
                capture_output=True, text=True, errors="backslashreplace", timeout=60, env=env,
            )
            steps = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
            done[key] = Run(name, out.returncode, steps, out.stderr)
        return done[key]

    return run


def assert_daemon_clean(daemon: Daemon) -> None:
    log = (daemon.base / "daemon.log").read_text()
    assert "Traceback" not in log, log[-6000:]
    assert daemon.proc.poll() is None, "the daemon exited"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("watch_list", [False, True], ids=["list-then-watch", "watch-list"])
def test_kubelet_plugin_helper_calls(runs: Callable[[str, str, bool], Run], daemon: Daemon, watch_list: bool) -> None:
    name = "watchlist" if watch_list else "listwatch"
    run = runs(name, JSON, watch_list)
    assert run.returncode == 0, run.describe()
    assert [s["step"] for s in run.steps] == STEPS, run.describe()
    assert all(s["ok"] is True for s in run.steps), run.describe()

    assert run.step("config")["watchList"] is watch_list
    assert run.step("config")["contentType"] == JSON
    assert run.step("node-get")["name"] == NODE and run.step("node-get")["uid"]

    sync = run.step("informer-sync")
    driver = f"{name}.clientgo.nodeagent.test"
    assert sync["selector"] == f"spec.driver={driver},spec.nodeName={NODE}"
    assert sync["items"] == 0 and sync["watches"] == 1
    if watch_list:
        # the initial state came from the watch stream itself: no LIST at all
        assert sync["lists"] == 0, run.describe()
        assert sync["firstWatch"] == {"sendInitialEvents": True, "resourceVersionMatch": "NotOlderThan",
                                      "allowWatchBookmarks": True}
    else:
        assert sync["lists"] == 1
        assert sync["firstWatch"] == {"sendInitialEvents": False, "resourceVersionMatch": "",
                                      "allowWatchBookmarks": True}

    created = run.step("slice-create")
    assert created["name"].startswith(f"00000-{driver}-{NODE}-")
    assert run.step("slice-added")["resourceVersion"] == created["resourceVersion"]
    assert run.step("slice-update")["poolGeneration"] == 2
    assert run.step("slice-modified")["resourceVersion"] == run.step("slice-update")["resourceVersion"]
    assert int(run.step("slice-update")["resourceVersion"]) > int(created["resourceVersion"])
    assert run.step("slice-get")["resourceVersion"] == run.step("slice-update")["resourceVersion"]

    stale = run.step("slice-update-stale")
    assert stale["reason"] == "Conflict"
    assert stale["message"] == (
        f'Operation cannot be fulfilled on resourceslices.resource.k8s.io "{created["name"]}": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    assert [s["reason"] for s in run.all("slice-delete-stale")] == ["Conflict", "Conflict"]
    gone = run.step("slice-gone")
    assert gone == {"step": "slice-gone", "ok": True, "reason": "NotFound",
                    "message": f'resourceslices.resource.k8s.io "{created["name"]}" not found'}

    assert run.step("slice-list") == {
        "step": "slice-list", "ok": True,
        f"spec.driver={driver},spec.nodeName={NODE}": 1,
        f"spec.driver={driver},spec.nodeName=": 0,
        f"spec.driver=other-{driver}": 1,
        f"spec.nodeName={NODE}-other": 1,
    }
    # only our slice's ADDED, MODIFIED and DELETED reached the informer
    assert run.step("field-selector")["events"] == 3

    missing = run.step("claim-missing")
    for version in ("v1", "v1beta2", "v1beta1"):
        assert missing[version] == {"reason": "NotFound",
                                    "message": f'resourceclaims.resource.k8s.io "clientgo-{name}-missing" not found'}
    claim = run.step("claim-get")
    assert claim["uid"] == run.step("claim-create")["uid"]
    assert claim["resourceVersion"] == run.step("claim-status")["resourceVersion"]
    assert run.step("watch-errors")["watches"] == 1
    assert_daemon_clean(daemon)


@pytest.mark.timeout(600)
def test_delete_precondition_conflicts_follow_upstream(runs: Callable[[str, str, bool], Run]) -> None:
    run = runs("listwatch", JSON, False)
    assert run.returncode == 0, run.describe()
    name = run.step("slice-create")["name"]
    uid = run.step("slice-create")["uid"]
    stale_rv = run.step("slice-create")["resourceVersion"]
    current_rv = run.step("slice-update")["resourceVersion"]
    stale, wrong_uid = run.all("slice-delete-stale")
    assert stale["message"] == (
        f'Operation cannot be fulfilled on ResourceSlice.resource.k8s.io "{name}": the ResourceVersion in the '
        f"precondition ({stale_rv}) does not match the ResourceVersion in record ({current_rv}). "
        "The object might have been modified"
    )
    assert wrong_uid["message"] == (
        f'Operation cannot be fulfilled on ResourceSlice.resource.k8s.io "{name}": the UID in the precondition '
        f"(00000000-0000-0000-0000-000000000000) does not match the UID in record ({uid}). "
        "The object might have been deleted and then recreated"
    )


@pytest.mark.timeout(600)
def test_kubelet_plugin_helper_calls_with_client_defaults(runs: Callable[[str, str, bool], Run],
                                                          daemon: Daemon) -> None:
    run = runs("protobuf", "", False)
    assert run.returncode == 0, run.describe()
    assert [s["step"] for s in run.steps] == STEPS, run.describe()
    assert_daemon_clean(daemon)
