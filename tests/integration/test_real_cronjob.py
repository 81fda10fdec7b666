"""The embedded CronJob controller against kube-controller-manager v1.37.2's (the fixture binary's role,
`--controllers=cronjob`), both on nodeagent's API server: the same CronJob on two daemons (the embedded
cronjob controller on one, switched off with the real one running on the other) fires at the same minute
and leaves the same objects once names, uids, resourceVersions and the scheduled minute are mapped: the
Job (name `<cronjob>-<minutes>`, labels, annotations with the scheduled timestamp, owner reference,
spec as the Job strategy stores it), the CronJob's status (active reference, lastScheduleTime) and the
events on the CronJob.

Opt-in with the kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1: the same cached fixture binary), skipped
with its reason otherwise. Waits for the next minute boundary (up to 70 s).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from nodeagent.controlplane.workloads.cronjob import SCHEDULED_ANNOTATION
from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.integration.test_real_scheduler import real_component

pytestmark = [pytest.mark.integration, pytest.mark.kube_apiserver]

CRONJOB = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick", "labels": {"app": "tick"}},
           "spec": {"schedule": "*/1 * * * *", "successfulJobsHistoryLimit": 2,
                    "jobTemplate": {"metadata": {"labels": {"team": "t"}, "annotations": {"note": "n"}},
                                    "spec": {"backoffLimit": 2, "template": {"spec": {
                                        "restartPolicy": "Never",
                                        "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}}}


@pytest.fixture(scope="module")
def pair(kube_apiserver_binary: Path) -> Iterator[tuple[Daemon, Daemon]]:
    """(a daemon with the embedded cronjob controller, one with kube-controller-manager's instead)."""
    base = Path(tempfile.mkdtemp(prefix="na-rcj-", dir="/tmp"))
    (base / "e").mkdir()
    (base / "r").mkdir()
    try:
        with ExitStack() as stack:
            embedded = stack.enter_context(running_daemon(base / "e", agent={}))
            real = stack.enter_context(running_daemon(base / "r", agent={
                "controlPlane": {"controllers": ["*", "-cronjob"]}}))
            stack.enter_context(real_component(
                kube_apiserver_binary, base, "kube-controller-manager",
                [f"--kubeconfig={real.kubeconfig}", "--leader-elect=false", "--controllers=cronjob"], "/healthz"))
            yield embedded, real
    finally:
        shutil.rmtree(base, ignore_errors=True)


def observe(d: Daemon) -> dict[str, Any]:
    """The first Job, the CronJob's status and its events, with the run-specific parts mapped."""
    cj = d.kubectl_json("get", "cronjob", "tick")
    jobs = d.kubectl_json("get", "jobs", "-l", "team=t")["items"]
    (job,) = [j for j in jobs if j["metadata"]["name"] == cj["status"]["active"][0]["name"]]
    minute = job["metadata"]["name"].rsplit("-", 1)[1]
    uids = {cj["metadata"]["uid"]: "<cronjob>", job["metadata"]["uid"]: "<job>"}
    text = json.dumps({"job": {"metadata": {k: job["metadata"].get(k) for k in (
        "name", "labels", "annotations", "ownerReferences")}, "spec": job["spec"]},
        "status": cj["status"],
        "events": sorted((e["type"], e["reason"], e["message"], e["source"].get("component"))
                         for e in d.kubectl_json("get", "events", "--field-selector",
                                                 "involvedObject.kind=CronJob")["items"])})
    for uid, name in uids.items():
        text = text.replace(uid, name)
    text = text.replace(minute, "<minute>")
    out: dict[str, Any] = json.loads(text)
    out["status"]["active"][0].pop("resourceVersion")
    stamp = out["job"]["metadata"]["annotations"][SCHEDULED_ANNOTATION]
    assert int(minute) * 60 == int(_epoch(stamp)) and out["status"]["lastScheduleTime"] == stamp
    out["status"]["lastScheduleTime"] = out["job"]["metadata"]["annotations"][SCHEDULED_ANNOTATION] = "<scheduled>"
    return out


def _epoch(stamp: str) -> float:
    from datetime import datetime
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@pytest.mark.timeout(240)  # two daemons and kube-controller-manager start, then up to a minute for the schedule
def test_the_same_job_status_and_events_as_the_real_cronjob_controller(pair: tuple[Daemon, Daemon]) -> None:
    embedded, real = pair
    for d in pair:
        d.kubectl("apply", "-f", "-", input=json.dumps(CRONJOB))
    for d in pair:
        wait_for(lambda d=d: (d.kubectl_json("get", "cronjob", "tick").get("status") or {}).get("active"),
                 timeout=90, what="the first run")
    mine, theirs = observe(embedded), observe(real)
    assert re.fullmatch(r"tick-<minute>", mine["job"]["metadata"]["name"])
    assert ["Normal", "SuccessfulCreate", "Created job tick-<minute>", "cronjob-controller"] in theirs["events"]
    assert theirs["job"]["metadata"]["ownerReferences"][0]["uid"] == "<cronjob>"
    assert theirs["job"]["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "<job>"}}
    assert mine == theirs
