"""A pod whose ResourceClaim does not exist says why, as the scheduler does (kubectl describe shows it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import running_daemon, wait_for

pytestmark = pytest.mark.integration

POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "orphan"},
    "spec": {"containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
             "resourceClaims": [{"name": "gpu", "resourceClaimName": "nope"}]},
}


def scheduled_condition(p: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in p.get("status", {}).get("conditions") or () if c["type"] == "PodScheduled"), None)


def test_missing_claim_reason_and_event(short_dir: Path) -> None:
    with running_daemon(short_dir) as d:
        d.kubectl("apply", "-f", "-", input=yaml.safe_dump(POD))
        cond = wait_for(lambda: scheduled_condition(d.kubectl_json("get", "pod", "orphan")),
                        what="PodScheduled on the pod")
        assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
        assert cond["message"] == ('0/1 nodes are available: resourceclaim "nope" not found. '
                                   'preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.')
        events = wait_for(lambda: [e for e in d.kubectl_json("get", "events")["items"]
                                   if e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == "orphan"],
                          what="FailedScheduling event")
        assert events[0]["message"] == cond["message"] and events[0]["type"] == "Warning"
        described = d.kubectl("describe", "pod", "orphan").stdout
        assert 'resourceclaim "nope" not found' in described


def test_bound_pod_is_explained_by_the_node(short_dir: Path) -> None:
    """A pod its author bound to the node: the scheduler gives no verdict, the kubelet side says why."""
    bound = {**POD, "metadata": {"name": "bound"}, "spec": {**POD["spec"], "nodeName": "test-node"}}
    with running_daemon(short_dir) as d:
        d.kubectl("apply", "-f", "-", input=yaml.safe_dump(bound))
        events = wait_for(lambda: [e for e in d.kubectl_json("get", "events")["items"]
                                   if e["involvedObject"]["name"] == "bound"
                                   and e["reason"] == "FailedPrepareDynamicResources"],
                          what="FailedPrepareDynamicResources event")
        assert "nope" in events[0]["message"] and "not found" in events[0]["message"]
        reasons = {e["reason"] for e in d.kubectl_json("get", "events")["items"]
                   if e["involvedObject"]["name"] == "bound"}
        assert "FailedScheduling" not in reasons
        # no verdict of a scheduler: PodScheduled is the node's own True (the kubelet's generateAPIPodStatus
        # writes it with the pod's first status, before it prepares the pod's claims)
        cond = wait_for(lambda: scheduled_condition(d.kubectl_json("get", "pod", "bound")), what="the node's status")
        assert cond["status"] == "True" and "reason" not in cond
