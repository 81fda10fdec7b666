"""controlPlane.scheduler.enabled and node.selfBinding: the embedded scheduler can be turned off so
another scheduler (the real kube-scheduler) binds, and a node binds pods itself only in the explicit
no-scheduler setup (it cannot tell which schedulerName another scheduler serves)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.config import parse_documents
from nodeagent.config.agent import parse_agent, render_agent
from nodeagent.controlplane.loop import ControlPlane
from nodeagent.errors import ConfigError
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.waiting import eventually

BASE = {"apiVersion": "nodeagent.dev/v1alpha1", "kind": "NodeAgentConfiguration", "nodeName": "n1"}


def _parse(**doc: Any) -> Any:
    return parse_agent({**BASE, **doc}, Path("/etc/nodeagent"))


def test_defaults_schedule_in_process_and_never_self_bind() -> None:
    a = _parse()
    assert a.control_plane.scheduler.enabled and a.control_plane.schedules and not a.node.self_binding
    rendered = render_agent(a)
    assert rendered["controlPlane"]["scheduler"] == {"enabled": True}
    assert rendered["node"]["selfBinding"] is False
    # a control plane turned off no longer means the node takes every pod
    off = _parse(controlPlane={"enabled": False})
    assert not off.control_plane.schedules and not off.node.self_binding


def test_scheduler_off_and_the_explicit_no_scheduler_setup_round_trip() -> None:
    a = _parse(controlPlane={"scheduler": {"enabled": False}})
    assert a.control_plane.enabled and not a.control_plane.scheduler.enabled and not a.control_plane.schedules
    b = _parse(controlPlane={"scheduler": {"enabled": False}}, node={"selfBinding": True})
    assert b.node.self_binding
    rendered = render_agent(b)
    assert rendered["controlPlane"]["scheduler"] == {"enabled": False} and rendered["node"]["selfBinding"] is True
    again = parse_agent({**BASE, "controlPlane": rendered["controlPlane"], "node": rendered["node"]})
    assert again.control_plane == b.control_plane and again.node == b.node
    assert _parse(controlPlane={"enabled": False}, node={"selfBinding": True}).node.self_binding


@pytest.mark.parametrize(("doc", "message"), [
    ({"node": {"selfBinding": True}},
     "NodeAgentConfiguration.node.selfBinding: Invalid value: true: the embedded scheduler binds pods "
     "(self-binding needs NodeAgentConfiguration.controlPlane.scheduler.enabled: false)"),
    ({"cluster": {"kubeconfig": "k"}, "node": {"selfBinding": True}},
     "NodeAgentConfiguration.node.selfBinding: Invalid value: true: a node that joins a cluster "
     "(NodeAgentConfiguration.cluster.kubeconfig) leaves binding to the cluster's scheduler"),
    ({"node": {"selfBinding": "yes"}}, "NodeAgentConfiguration.node.selfBinding"),
    ({"controlPlane": {"scheduler": {"enabled": "no"}}}, "NodeAgentConfiguration.controlPlane.scheduler.enabled"),
    ({"controlPlane": {"scheduler": {"name": "x"}}}, "NodeAgentConfiguration.controlPlane.scheduler"),
    ({"controlPlane": {"scheduler": []}}, "NodeAgentConfiguration.controlPlane.scheduler"),
])
def test_bad_settings_name_the_field(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _parse(**doc)
    assert message in str(err.value)


async def test_a_control_plane_without_its_scheduler_leaves_pods_unbound() -> None:
    """The claim controller still creates a pod's claim from its template; nothing binds the pod."""
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
    cfg = parse_documents([
        {"kind": "KubeletConfiguration"},
        {"kind": "NodeAgentConfiguration", "nodeName": "local", "controlPlane": {"scheduler": {"enabled": False}},
         "virtualNodes": [{"name": "node-{index}", "count": 1,
                           "capacity": {"cpu": "2", "memory": "8Gi", "pods": "10"}}]},
    ])
    cp = ControlPlane(cfg, store, clock, CollectorRegistry())
    assert [name for name, _, _ in cp._components if name == "scheduler"] == []
    await cp.start()
    try:
        store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                      "metadata": {"name": "t", "namespace": "default"},
                      "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {
                          "deviceClassName": "gpu.example.com"}}]}}}})
        store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                      "spec": {"containers": [{"name": "c", "image": "pause"}],
                               "resourceClaims": [{"name": "g", "resourceClaimTemplateName": "t"}]}})
        await eventually(lambda: store.scan("ResourceClaim", "default"), what="the claim from the template")
        await cp.wait_idle()
        await asyncio.sleep(0.05)
        assert not store.get("Pod", "default", "p")["spec"].get("nodeName")
        assert store.peek("Node", "", "node-0") is not None  # the virtual nodes are still published
    finally:
        await cp.stop()
