"""The scheduler's Events as kube-scheduler v1.37.2 posts them (client-go tools/events, events.k8s.io/v1),
and its retry pacing: one scenario checked against the embedded scheduler (always) and the real kube-scheduler
(controlPlane.kubernetes, the kube-apiserver tier), on the same daemon with its node and two virtual nodes.

A pod that fits (Scheduled) and one whose nodeSelector matches no node (FailedScheduling), watched for about
20 s, while the node's DRA driver publishes its ResourceSlice and the nodes renew their heartbeats: the events
read through core/v1 and events.k8s.io/v1 must be equal once names, times, uids and resourceVersions are
normalised (their shapes checked on the way): `<pod>.<hex nanoseconds>` names, an eventTime and no
source/count/first/lastTimestamp, reportingController/Instance, the action, the pod's resourceVersion in the
reference, and one FailedScheduling attempt in the window (no slice, heartbeat or own PodScheduled=False write
moves a pod NodeAffinity rejected; upstream would retry it after 5 minutes).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import wait_for
from tests.integration.test_real_control_plane import NODE, RealCP, node_ready

pytestmark = [pytest.mark.integration]

WINDOW = 20.0
NAME = re.compile(r"^(ev|nope)\.[0-9a-f]+$")
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def _pod(name: str, selector: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "pause"}], "nodeSelector": selector}}


NOTE_FAILED = ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
               "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
REGARDING = {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "resourceVersion": "<rv>", "uid": "<uid>"}
COMMON = {"eventTime": "<micro>", "reportingInstance": "default-scheduler-<host>"}
CORE: dict[str, Any] = {**COMMON, "apiVersion": "v1", "kind": "Event", "firstTimestamp": None,
                        "lastTimestamp": None, "source": {}, "reportingComponent": "default-scheduler"}
EXPECTED_CORE = [
    {**CORE, "metadata": {"name": "ev.<hex>"}, "action": "Binding", "reason": "Scheduled", "type": "Normal",
     "message": "Successfully assigned default/ev to rcv-0", "involvedObject": {**REGARDING, "name": "ev"}},
    {**CORE, "metadata": {"name": "nope.<hex>"}, "action": "Scheduling", "reason": "FailedScheduling",
     "type": "Warning", "message": NOTE_FAILED, "involvedObject": {**REGARDING, "name": "nope"}},
]
V1: dict[str, Any] = {**COMMON, "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None,
                      "deprecatedSource": {}, "reportingController": "default-scheduler"}
EXPECTED_V1 = [
    {**V1, "metadata": {"name": "ev.<hex>"}, "action": "Binding", "reason": "Scheduled", "type": "Normal",
     "note": "Successfully assigned default/ev to rcv-0", "regarding": {**REGARDING, "name": "ev"}},
    {**V1, "metadata": {"name": "nope.<hex>"}, "action": "Scheduling", "reason": "FailedScheduling",
     "type": "Warning", "note": NOTE_FAILED, "regarding": {**REGARDING, "name": "nope"}},
]


def _normal(event: dict[str, Any], uids: dict[str, str], host: str, ref: str) -> dict[str, Any]:
    """The event with its run-specific values checked and replaced by placeholders."""
    out = {k: v for k, v in event.items() if k != "metadata"}
    name = event["metadata"]["name"]
    assert NAME.match(name), name
    out["metadata"] = {"name": name.split(".")[0] + ".<hex>"}
    assert MICRO.match(out["eventTime"]), out["eventTime"]
    out["eventTime"] = "<micro>"
    assert out["reportingInstance"] == f"default-scheduler-{host}", out["reportingInstance"]
    out["reportingInstance"] = "default-scheduler-<host>"
    regarding = dict(out[ref])
    assert regarding["uid"] == uids[regarding["name"]] and regarding["resourceVersion"].isdigit(), regarding
    regarding.update(uid="<uid>", resourceVersion="<rv>")
    out[ref] = regarding
    if "series" in out:
        assert MICRO.match(out["series"]["lastObservedTime"])
        out["series"] = {**out["series"], "lastObservedTime": "<micro>"}
    return out


@pytest.mark.timeout(600)
def test_scheduler_events_and_pacing_are_kube_schedulers(realcp_twin: tuple[RealCP, bool]) -> None:
    cp, _ = realcp_twin
    cp.start()
    wait_for(lambda: all(node_ready(cp, n) for n in (NODE, "rcv-0", "rcv-1")), timeout=120, what="three nodes Ready")
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump(_pod("ev", {"kubernetes.io/hostname": "rcv-0"})))
    wait_for(lambda: cp.get("pod", "ev")["spec"].get("nodeName"), timeout=60, what="ev bound")
    cp.kubectl("apply", "-f", "-", input=yaml.safe_dump(_pod("nope", {"nodeselector": "none"})))
    time.sleep(WINDOW)
    uids = {name: cp.get("pod", name)["metadata"]["uid"] for name in ("ev", "nope")}
    mine = [e for e in cp.get("events")["items"] if e["reason"] in ("Scheduled", "FailedScheduling")]
    raw = json.loads(cp.kubectl("get", "--raw", "/apis/events.k8s.io/v1/namespaces/default/events"))["items"]
    v1 = [{k: v for k, v in e.items() if k not in ("apiVersion", "kind")}  # list items: kubectl adds them
          for e in raw if e["reason"] in ("Scheduled", "FailedScheduling")]
    host = next(e["reportingInstance"] for e in mine).removeprefix("default-scheduler-")

    def order(e: dict[str, Any]) -> str:
        return str(e["metadata"]["name"])

    assert sorted((_normal(e, uids, host, "involvedObject") for e in mine), key=order) == EXPECTED_CORE
    assert sorted((_normal(e, uids, host, "regarding") for e in v1), key=order) == EXPECTED_V1
