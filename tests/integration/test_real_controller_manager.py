"""The real kube-controller-manager (v1.37.2, the fixture binary's role, upstream's command unchanged) with
its default controller set (`--controllers=*`) against nodeagent's embedded API server: every informer of
every controller it starts syncs (no list or watch fails: each kind it lists is served), its garbage
collector syncs its monitors over every deletable resource discovery lists, and a namespace deleted with
content goes away with its content. And its garbage collector alone, with nodeagent's switched off,
doing what nodeagent's does for foreground, orphan and background deletes.

Opt-in with the kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1: the same cached fixture binary),
skipped with its reason otherwise.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.integration.test_garbage_collection import EXPECTED, scenario
from tests.integration.test_pod_status_validation import daemon_sender
from tests.integration.test_real_scheduler import RealScheduler, real_component

pytestmark = [pytest.mark.integration, pytest.mark.kube_apiserver]

WANTED = ("deployment", "replicaset", "statefulset", "daemonset", "job", "cronjob", "garbage-collector", "namespace",
          "resourceclaim", "serviceaccount", "device-taint-eviction", "node-lifecycle", "resourcequota",
          "horizontal-pod-autoscaler", "certificatesigningrequest-approving", "service-cidr",
          "storage-version-migrator", "validatingadmissionpolicy-status")
"""Controllers issue 23 names (and those whose informers needed the kinds it added): each must start."""
CM, JSON = "/api/v1/namespaces/default/configmaps", "application/json"
FAILED = re.compile(r'"Failed to (watch|list)"|failed to list|the server could not find the requested resource')


@pytest.fixture(scope="module")
def kcm(kube_apiserver_binary: Path) -> Iterator[tuple[Daemon, RealScheduler]]:
    """nodeagent (embedded scheduler and every embedded controller off: controlPlane.controllers []) and
    kube-controller-manager with its default controllers on its kubeconfig, no leader election."""
    base = Path(tempfile.mkdtemp(prefix="na-kcm-", dir="/tmp"))
    try:
        with running_daemon(base, agent={"controlPlane": {"scheduler": {"enabled": False}, "controllers": []}}) as d, \
                real_component(kube_apiserver_binary, base, "kube-controller-manager",
                               [f"--kubeconfig={d.kubeconfig}", "--leader-elect=false", "--controllers=*"],
                               "/healthz") as proc:
            yield d, proc
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _log(proc: RealScheduler) -> str:
    return proc.tail(5_000_000)


def test_every_informer_of_the_default_controllers_syncs(kcm: tuple[Daemon, RealScheduler]) -> None:
    _, proc = kcm

    def synced() -> bool:
        log = _log(proc)
        waiting, done = log.count('"Waiting for caches to sync"'), log.count('"Caches are synced"')
        return waiting > 20 and waiting == done and '"synced garbage collector"' in log

    try:
        wait_for(synced, timeout=90, what="every controller's caches synced")
    except AssertionError:
        raise AssertionError(f"not every informer synced:\n{proc.tail(20_000)}") from None
    time.sleep(2.0)  # a watch that fails after its list would show by now
    log = _log(proc)
    failures = sorted({m.group(0) for line in log.splitlines() if (m := FAILED.search(line))})
    assert not failures, "\n".join(line for line in log.splitlines() if FAILED.search(line))[:5000]
    assert '"Garbage collector: all resource monitors have synced"' in log
    started = set(re.findall(r'"Controller starting..." controller="([^"]+)"', log))
    assert {f"{c}-controller" for c in WANTED} <= started, sorted(started)


def test_a_namespace_deleted_with_content_goes_with_it(kcm: tuple[Daemon, RealScheduler]) -> None:
    """Namespace deletion with content while the real namespace controller runs (beside nodeagent's own,
    which cannot be switched off yet): the namespace goes Terminating, then away with its ConfigMap,
    ServiceAccount and ReplicaSet, and the controller manager logs no failure on the way."""
    d, proc = kcm
    d.kubectl("create", "namespace", "kcm-gone")
    d.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "kcm-gone"},
         "data": {"a": "b"}},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "kcm-gone"},
         "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "x"}},
                  "template": {"metadata": {"labels": {"app": "x"}},
                               "spec": {"containers": [{"name": "c", "image": "pause"}]}}}},
    ]))
    # the real serviceaccount controller makes `default` in the new namespace
    wait_for(lambda: d.api_get("/api/v1/namespaces/kcm-gone/serviceaccounts/default"), timeout=30,
             what="the default ServiceAccount from the real serviceaccount controller")
    out = d.kubectl("delete", "namespace", "kcm-gone", "--wait=false")
    assert out.stdout.strip() == 'namespace "kcm-gone" deleted'

    def gone() -> bool:
        names = {n["metadata"]["name"] for n in d.api_get("/api/v1/namespaces")["items"]}
        return "kcm-gone" not in names

    wait_for(gone, timeout=60, what="the namespace removed")
    for path in ("/api/v1/namespaces/kcm-gone/configmaps", "/apis/apps/v1/namespaces/kcm-gone/replicasets",
                 "/api/v1/namespaces/kcm-gone/serviceaccounts"):
        assert d.api_get(path)["items"] == [], path
    failures = [line for line in _log(proc).splitlines() if FAILED.search(line)]
    assert not failures, "\n".join(failures)[:5000]


@pytest.fixture(scope="module")
def real_gc(kube_apiserver_binary: Path) -> Iterator[tuple[Daemon, RealScheduler]]:
    """nodeagent with its garbage collector off (`controlPlane.controllers: ["*", "-garbagecollector"]`) and
    kube-controller-manager running only its garbage collector."""
    base = Path(tempfile.mkdtemp(prefix="na-kgc-", dir="/tmp"))
    agent = {"controlPlane": {"scheduler": {"enabled": False}, "controllers": ["*", "-garbagecollector"]}}
    try:
        with running_daemon(base, agent=agent) as d:
            # nothing in nodeagent acts on the finalizer now: an orphaning owner stays
            send = daemon_sender(d)
            assert send("POST", CM, {"metadata": {"name": "waits"}}, JSON)[0] == 201
            code, out = send("DELETE", f"{CM}/waits", {"propagationPolicy": "Orphan"}, JSON)
            assert (code, out["metadata"].get("finalizers")) == (200, ["orphan"])
            time.sleep(2.0)
            assert send("GET", f"{CM}/waits", None, JSON)[0] == 200
            with real_component(kube_apiserver_binary, base, "kube-controller-manager",
                                [f"--kubeconfig={d.kubeconfig}", "--leader-elect=false",
                                 "--controllers=garbagecollector"], "/healthz") as proc:
                wait_for(lambda: send("GET", f"{CM}/waits", None, JSON)[0] == 404, timeout=60,
                         what="the real garbage collector finishing the orphaning delete")
                yield d, proc
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_real_garbage_collector_takes_over(real_gc: tuple[Daemon, RealScheduler]) -> None:
    """With the embedded collector off, kube-controller-manager's acts on the finalizers nodeagent's
    deletes leave: the same observations as nodeagent's own collector and kube-apiserver's pair give
    (tests/integration/test_garbage_collection.py's scenario and its EXPECTED)."""
    d, proc = real_gc
    try:
        assert scenario(daemon_sender(d), "rgc") == EXPECTED
    except AssertionError:
        raise AssertionError(f"--- kube-controller-manager:\n{proc.tail(20_000)}") from None
