"""Extended resources backed by DRA: class mapping and the special claim's requests and mappings,
table cases from upstream's createRequestsAndMappings rules."""

from __future__ import annotations

import pytest

from nodeagent.controlplane.scheduler.extended import (
    ClassInfo,
    ContainerAsk,
    DeviceAsk,
    RequestMapping,
    class_mapping,
    is_extended_claim_of,
    plan_for,
)

GPU = "example.com/gpu"


def test_class_mapping_implicit_explicit_and_ties() -> None:
    mapping = class_mapping([
        ClassInfo("old", GPU, "2026-01-01T00:00:00Z"),
        ClassInfo("new", GPU, "2026-02-01T00:00:00Z"),
        ClassInfo("b-same", "example.com/fpga", "2026-01-01T00:00:00Z"),
        ClassInfo("a-same", "example.com/fpga", "2026-01-01T00:00:00Z"),
    ])
    assert mapping[GPU] == "new"  # created later wins
    assert mapping["example.com/fpga"] == "a-same"  # same time: the name sorted first
    assert mapping["deviceclass.resource.kubernetes.io/old"] == "old"


def ask(index: int, name: str, gpus: int, *, short: bool = False) -> ContainerAsk:
    return ContainerAsk(index, name, short, tuple(sorted({"cpu": 100, GPU: gpus}.items())))


@pytest.mark.parametrize(("asks", "requests", "mappings"), [
    # one container: request named by its index and the resource's index in its sorted requests
    ([ask(0, "main", 2)], [DeviceAsk("container-0-request-1", "gpus", 2)],
     [RequestMapping("main", GPU, "container-0-request-1")]),
    # an init container reuses what a later regular container asks for
    ([ask(0, "init", 1, short=True), ask(1, "main", 2)], [DeviceAsk("container-1-request-1", "gpus", 2)],
     [RequestMapping("main", GPU, "container-1-request-1"), RequestMapping("init", GPU, "container-1-request-1")]),
    # init containers asking more than the later ones: only the largest short-lived request is kept
    ([ask(0, "i1", 3, short=True), ask(1, "i2", 4, short=True), ask(2, "main", 1)],
     [DeviceAsk("container-1-request-1", "gpus", 3), DeviceAsk("container-2-request-1", "gpus", 1)],
     [RequestMapping("main", GPU, "container-2-request-1"),
      RequestMapping("i1", GPU, "container-2-request-1"), RequestMapping("i1", GPU, "container-1-request-1"),
      RequestMapping("i2", GPU, "container-2-request-1"), RequestMapping("i2", GPU, "container-1-request-1")]),
])
def test_requests_and_mappings(asks: list[ContainerAsk], requests: list[DeviceAsk],
                               mappings: list[RequestMapping]) -> None:
    plan = plan_for(asks, {GPU: "gpus"})
    assert plan is not None
    got_requests, got_mappings = plan.requests_and_mappings(plan.backed_on({}))
    assert list(got_requests) == requests
    assert list(got_mappings) == mappings


def test_only_resources_the_node_does_not_advertise_go_to_dra() -> None:
    plan = plan_for([ask(0, "main", 1)], {GPU: "gpus"})
    assert plan is not None
    assert plan.backed_on({GPU: 4}) == frozenset()  # a device plugin serves it there
    assert plan.backed_on({"cpu": 4000}) == {GPU}
    assert plan_for([ask(0, "main", 1)], {}) is None  # no class names it


def test_claim_of_pod() -> None:
    claim = {"metadata": {"annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                          "ownerReferences": [{"uid": "u1", "controller": True}]}}
    assert is_extended_claim_of(claim, "u1") and not is_extended_claim_of(claim, "u2")
