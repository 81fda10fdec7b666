"""DRANodeAllocatableResources through the whole daemon (`nodeagent run`, embedded API server and
scheduler, a virtual node): with the gate on, a ResourceSlice written with kubectl keeps its
devices' nodeAllocatableResources, the scheduler writes pod.status.nodeAllocatableResourceClaimStatuses
with the binding and counts them against the node; with the gate off (the default) the field is
dropped on write, as upstream's strategy drops a disabled gate's field, and nothing is counted.
The same scenario is compared with the real kube-scheduler in test_real_scheduler_node_allocatable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.integration.test_real_scheduler_node_allocatable import KUBELET, NODE, PODS, SETUP, _agent, _decided

pytestmark = [pytest.mark.integration]


def _start(d: Daemon) -> None:
    wait_for(lambda: any(n["metadata"]["name"] == NODE for n in d.api_get("/api/v1/nodes")["items"]),
             what="the virtual node")
    d.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(SETUP))


def _slice_devices(d: Daemon) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = d.kubectl_json("get", "resourceslice", f"{NODE}-gpu")["spec"]["devices"]
    return out


def test_gate_on_serves_schedules_and_counts(short_dir: Path) -> None:
    with running_daemon(short_dir, kubelet=KUBELET, agent=_agent(True)) as d:
        _start(d)
        assert _slice_devices(d)[0]["nodeAllocatableResources"] == {
            "cpu": {"overhead": {"perPod": "500m", "perContainer": "500m"}},
            "memory": {"mapping": {"deviceMultiplier": "4Gi"}}}
        for p in PODS[2:4]:  # t0 fits (2 of 4 cpu), t1 too (4 of 4)
            d.kubectl("apply", "-f", "-", input=yaml.safe_dump(p))
            wait_for(_decided(d, p["metadata"]["name"]), timeout=30, what=p["metadata"]["name"])
        t0 = d.kubectl_json("get", "pod", "t0")
        claim = t0["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        assert t0["spec"]["nodeName"] == NODE
        assert t0["status"]["nodeAllocatableResourceClaimStatuses"] == [{
            "resourceClaimName": claim, "containers": ["c"], "mapping": [{"name": "memory", "quantity": "4Gi"}],
            "overhead": [{"name": "cpu", "perPod": "500m", "perContainer": "500m"}]}]
        assert d.kubectl_json("get", "pod", "t1")["spec"].get("nodeName") == NODE
        # the node is full now: a third pod with a device is not, and says why
        third = {**PODS[3], "metadata": {"name": "t2", "namespace": "default"}}
        d.kubectl("apply", "-f", "-", input=yaml.safe_dump(third))
        out = wait_for(_decided(d, "t2"), timeout=30, what="t2")
        assert not out["spec"].get("nodeName")
        cond = next(c for c in out["status"]["conditions"] if c["type"] == "PodScheduled")
        assert "Insufficient cpu" in cond["message"]


def test_gate_off_drops_the_field_and_counts_nothing(short_dir: Path) -> None:
    with running_daemon(short_dir, agent=_agent(True)) as d:
        _start(d)
        assert all("nodeAllocatableResources" not in dev for dev in _slice_devices(d))
        for name in ("t0", "t1", "t2"):
            p = {**PODS[2], "metadata": {"name": name, "namespace": "default"}}
            d.kubectl("apply", "-f", "-", input=yaml.safe_dump(p))
            out = wait_for(_decided(d, name), timeout=30, what=name)
            assert out["spec"].get("nodeName") == NODE
            assert "nodeAllocatableResourceClaimStatuses" not in out["status"]
