"""The control plane in process: SQLite store in a temp dir, ControlPlane tasks (claim controller,
scheduler, virtual node agent) started and stopped, virtual nodes from YAML config, metrics."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from nodeagent.config import parse_documents
from nodeagent.controlplane.loop import ControlPlane
from nodeagent.controlplane.scheduler import SchedulerOptions
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import RealClock
from tests.unit.controlplane.test_scheduler_support import GPU, claim_spec, device_class, exact, pod, template

pytestmark = pytest.mark.integration

CONFIG = f"""
kind: KubeletConfiguration
---
kind: NodeAgentConfiguration
nodeName: local
controlPlane: {{allocationTimeout: 5s, nodesToScore: 50}}
virtualNodes:
- name: vnode-{{index}}
  count: 3
  capacity: {{cpu: "2", memory: 8Gi, pods: "10"}}
  devices:
  - driver: {GPU}
    count: 2
    name: gpu-{{index}}
"""


async def test_control_plane_schedules_runs_and_cleans_up(tmp_path: Path) -> None:
    cfg = parse_documents(list(yaml.safe_load_all(CONFIG)))
    clock = RealClock()
    store = ObjectStore(tmp_path / "objects.db", builtin_kinds().with_hooks(resource.hooks()), clock)
    registry = CollectorRegistry()
    cp = ControlPlane(cfg, store, clock, registry,
                      options=SchedulerOptions(nodes_to_score=50, initial_backoff=0.05, max_backoff=0.2))
    await cp.start()
    try:
        assert [n["metadata"]["name"] for n in store.list("Node")] == ["vnode-0", "vnode-1", "vnode-2"]
        store.create(device_class("gpu", f'device.driver == "{GPU}"'))
        store.create(template("t", claim_spec(exact("gpu", "gpu"))))
        for i in range(7):  # six devices: one pod must wait
            store.create(pod(f"p{i}", templates={"gpu": "t"}, cpu="100m",
                             annotations={"nodeagent.dev/finish-after-seconds": "0.3"} if i == 0 else None))
        await cp.wait_idle(timeout=20)
        pods = {p["metadata"]["name"]: p for p in store.list("Pod")}
        bound = {n for n, p in pods.items() if p["spec"].get("nodeName")}
        assert len(bound) >= 6
        assert pods["p1"]["status"]["phase"] == "Running"
        # p0 finishes after 0.3 s: its claim is released and deleted, and the waiting pod gets its device
        for _ in range(200):
            await asyncio.sleep(0.02)
            if all(p["spec"].get("nodeName") for p in store.scan("Pod")):
                break
        await cp.wait_idle(timeout=20)
        assert store.get("Pod", "default", "p0")["status"]["phase"] == "Succeeded"
        assert all(p["spec"].get("nodeName") for p in store.scan("Pod"))
        assert len(store.list("ResourceClaim")) == 6
        assert registry.get_sample_value("resource_controller_create_total") == 7.0
        assert registry.get_sample_value("scheduler_schedule_attempts_total", {"result": "scheduled"}) == 7.0
        assert registry.get_sample_value("nodeagent_dra_resource_claims", {"state": "reserved"}) == 6.0
        assert registry.get_sample_value("scheduler_pending_pods", {"queue": "active"}) == 0.0
        assert (registry.get_sample_value("nodeagent_dra_allocator_duration_seconds_count") or 0) >= 7
    finally:
        await cp.stop()
        store.close()
    assert registry.get_sample_value("scheduler_pending_pods", {"queue": "active"}) is None  # unregistered


async def test_restart_keeps_state_and_relists(tmp_path: Path) -> None:
    cfg = parse_documents(list(yaml.safe_load_all(CONFIG)))
    clock = RealClock()
    kinds = builtin_kinds().with_hooks(resource.hooks())
    store = ObjectStore(tmp_path / "objects.db", kinds, clock)
    store.create(device_class("gpu", f'device.driver == "{GPU}"'))
    store.create(template("t", claim_spec(exact("gpu", "gpu"))))
    store.create(pod("p", templates={"gpu": "t"}))
    store.close()
    # the pod was created while no control plane ran
    store = ObjectStore(tmp_path / "objects.db", kinds, clock)
    cp = ControlPlane(cfg, store, clock, CollectorRegistry())
    await cp.start()
    try:
        await cp.wait_idle(timeout=20)
        assert store.get("Pod", "default", "p")["status"]["phase"] == "Running"
    finally:
        await cp.stop()
        store.close()
