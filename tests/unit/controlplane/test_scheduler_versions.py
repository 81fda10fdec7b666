"""NodeAgentConfiguration.kubernetesVersion reaches the scheduler's allocator: 1.35 and 1.37 write
their own allocation config formats (the scheduler once allocated every release alike).

Up to 1.36 a claim config is copied once per request it names, and configs keep their request
lists; from 1.37 (kubernetes#139731, #139732, #139814) a claim config is copied once and a config
that covers every request of the claim lists none (the API's "empty means all")."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.config.file import parse_documents
from nodeagent.controlplane.loop import allocator_features
from nodeagent.controlplane.scheduler import SchedulerOptions
from tests.unit.controlplane.test_scheduler_support import (
    GPU,
    Cluster,
    claim,
    claim_spec,
    device,
    device_class,
    exact,
    node,
    pod,
    resource_slice,
)

OPAQUE = {"driver": GPU, "parameters": {"sharing": "time-sliced"}}


def allocated_config(version: str) -> list[tuple[str, list[str]]]:
    cfg = parse_documents([{"apiVersion": "nodeagent.dev/v1alpha1", "kind": "NodeAgentConfiguration",
                            "kubernetesVersion": version}])
    c = Cluster(options=SchedulerOptions(initial_backoff=0.0, max_backoff=0.0, allocator=allocator_features(cfg)))
    c.add(node("n1"), device_class("gpu", f'device.driver == "{GPU}"', config={"class": "setting"}),
          resource_slice("n1", GPU, [device("g0"), device("g1")]))
    c.add(claim("pair", claim_spec(exact("a", "gpu"), exact("b", "gpu"),
                                   config=[{"requests": ["a", "b"], "opaque": OPAQUE}])))
    c.add(pod("p", claims={"gpu": "pair"}))
    c.run()
    assert c.get("Pod", "p")["spec"].get("nodeName") == "n1"
    entries: list[dict[str, Any]] = c.get("ResourceClaim", "pair")["status"]["allocation"]["devices"]["config"]
    return [(e["source"], e.get("requests", [])) for e in entries]


@pytest.mark.parametrize(("version", "expected"), [
    ("1.35", [("FromClass", ["a", "b"]), ("FromClaim", ["a", "b"]), ("FromClaim", ["a", "b"])]),
    ("1.36", [("FromClass", ["a", "b"]), ("FromClaim", ["a", "b"]), ("FromClaim", ["a", "b"])]),
    ("1.37", [("FromClass", []), ("FromClaim", [])]),
])
async def test_each_release_writes_its_config_format(version: str, expected: list[tuple[str, list[str]]]) -> None:
    assert allocated_config(version) == expected


@pytest.mark.parametrize(("selector", "device_name"), [
    ("device.allowMultipleAllocations", "shared"),
    ("!device.allowMultipleAllocations", "whole"),
])
async def test_selectors_see_allow_multiple_allocations(selector: str, device_name: str) -> None:
    """DRAConsumableCapacity's CEL variable: the device's allowMultipleAllocations, false when unset."""
    c = Cluster(options=SchedulerOptions(initial_backoff=0.0, max_backoff=0.0))
    c.add(node("n1"), device_class("gpu", f'device.driver == "{GPU}"'),
          resource_slice("n1", GPU, [{**device("shared"), "allowMultipleAllocations": True}, device("whole")]))
    c.add(claim("one", claim_spec(exact("gpu", "gpu", selectors=[selector]))))
    c.add(pod("p", claims={"gpu": "one"}))
    c.run()
    [result] = c.get("ResourceClaim", "one")["status"]["allocation"]["devices"]["results"]
    assert result["device"] == device_name
