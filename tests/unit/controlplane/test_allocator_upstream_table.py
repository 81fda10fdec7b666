"""The upstream structured allocator's test table (k8s.io/dynamic-resource-allocation, structured/
internal/allocatortesting at 1.35 and later), expressed in nodeagent's allocator model.

Each case keeps upstream's name, inputs (claims, classes, slices, node, allocated devices, feature
gates) and expected answer: the devices per claim, "no allocation", or an error containing
upstream's text. Cases about features nodeagent's allocator does not model here (partitionable
devices, device taints, consumable capacity, binding conditions) are not expressed. The table is
written from the upstream cases; no upstream code is copied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from nodeagent.controlplane.allocator import (
    ALL,
    FROM_CLAIM,
    FROM_CLASS,
    AllocationConfig,
    Claim,
    Constraint,
    Device,
    DeviceClass,
    DeviceConfig,
    DeviceId,
    Features,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OpaqueConfig,
    Request,
    ResourceSlice,
    SubRequest,
    allocate,
)

DRIVER_A, DRIVER_B = "driver-a", "driver-b"
NODE1 = Node("node-1", {"region": "region-1", "planet": "earth"})
NODE2 = Node("node-2", {"region": "region-2", "planet": "earth"})


def cls(name: str, driver: str, *config: str) -> DeviceClass:
    return DeviceClass(
        name, (f'device.driver == "{driver}"',), tuple(OpaqueConfig(driver, {a: f"{a}Value"}) for a in config)
    )


CLASSES = {"class-a": cls("class-a", DRIVER_A), "class-b": cls("class-b", DRIVER_B)}


def dev(
    driver: str, pool: str, name: str, attrs: Mapping[str, Any] | None = None, capacity: Mapping[str, int] | None = None
) -> Device:
    return Device(driver, pool, name, dict(attrs or {}), dict(capacity or {}))


def sl(
    name: str,
    where: str | NodeSelector | None,
    pool: str,
    driver: str,
    *names: str | Device,
    generation: int = 1,
    count: int = 1,
) -> ResourceSlice:
    devices = tuple(d if isinstance(d, Device) else dev(driver, pool, d) for d in names)
    if isinstance(where, NodeSelector):
        return ResourceSlice(name, driver, pool, devices, generation, count, node_selector=where)
    if where is None:
        return ResourceSlice(name, driver, pool, devices, generation, count, all_nodes=True)
    return ResourceSlice(name, driver, pool, devices, generation, count, node_name=where)


def one(name: str, node: str | NodeSelector | None, pool: str, driver: str) -> ResourceSlice:
    return sl(name, node, pool, driver, "device-1")


def many(name: str, node: str, pool: str, driver: str, n: int) -> ResourceSlice:
    return sl(name, node, pool, driver, *[f"device-{i}" for i in range(n)])


def label(key: str, value: str) -> NodeSelector:
    return NodeSelector((NodeSelectorTerm((NodeSelectorRequirement(key, "In", (value,)),)),))


def claim(
    name: str, *requests: Request, constraints: Sequence[Constraint] = (), config: Sequence[DeviceConfig] = ()
) -> Claim:
    return Claim("", name, f"uid-{name}", tuple(requests), tuple(constraints), tuple(config))


def req(
    name: str,
    class_name: str = "class-a",
    count: int = 1,
    *selectors: str,
    mode: str = "ExactCount",
    admin: bool = False,
) -> Request:
    return Request(name, class_name, tuple(selectors), mode, count, admin)


def first(name: str, *subs: SubRequest) -> Request:
    return Request(name, first_available=subs)


def sub(name: str, class_name: str, count: int = 1, *selectors: str, mode: str = "ExactCount") -> SubRequest:
    return SubRequest(name, class_name, selectors, mode, count)


def mem_at_least(q: str) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{q}")) >= 0'


GI = 1 << 30


def mem(name: str, gib: int, pool: str = "pool-1", **attrs: Any) -> Device:
    return dev(DRIVER_A, pool, name, attrs, {"memory": gib * GI})


Got = tuple[tuple[str, str, str, str, bool], ...]


@dataclass
class Case:
    claims: Sequence[Claim]
    slices: Sequence[ResourceSlice] = ()
    expect: Sequence[Got] | None = None
    """Devices per claim as (request, driver, pool, device, adminAccess); None: no allocation."""
    error: str = ""
    node: Node = NODE1
    classes: Mapping[str, DeviceClass] = field(default_factory=lambda: CLASSES)
    allocated: Sequence[DeviceId] = ()
    features: Features = field(default_factory=Features)
    config: Sequence[Sequence[AllocationConfig]] | None = None


def r(request: str, driver: str, pool: str, device: str, admin: bool = False) -> tuple[str, str, str, str, bool]:
    return (request, driver, pool, device, admin)


def r32(request: str, n: int, offset: int = 0) -> Got:
    return tuple(r(request, DRIVER_A, "pool-1", f"device-{i}") for i in range(offset, offset + n))


VERSION_ATTRS = {"driverVersion": "1.0.0", "numa": 1, "stringAttribute": "stringAttributeValue", "boolAttribute": True}
NUMA, VERSION = f"{DRIVER_A}/numa", f"{DRIVER_A}/driverVersion"
STRING, BOOL = f"{DRIVER_A}/stringAttribute", f"{DRIVER_A}/boolAttribute"

CASES: dict[str, Case] = {
    "empty": Case([], expect=[]),
    "simple": Case(
        [claim("claim-0", req("req-0"))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"),)],
    ),
    "other-node": Case(
        [claim("claim-0", req("req-0"))],
        [one("slice-1", "node-1", "pool-1", DRIVER_B), one("slice-2", "node-2", "pool-2", DRIVER_A)],
        [(r("req-0", DRIVER_A, "pool-2", "device-1"),)],
        node=NODE2,
    ),
    "small-and-large": Case(
        [
            claim(
                "claim-0",
                req("req-0", "class-a", 1, mem_at_least("1Gi")),
                req("req-1", "class-a", 1, mem_at_least("2Gi")),
            )
        ],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, mem("device-1", 1), mem("device-2", 2))],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-1", DRIVER_A, "pool-1", "device-2"))],
    ),
    "small-and-large-backtrack-requests": Case(
        [
            claim(
                "claim-0",
                req("req-0", "class-a", 1, mem_at_least("1Gi")),
                req("req-1", "class-a", 1, mem_at_least("2Gi")),
            )
        ],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, mem("device-2", 2), mem("device-1", 1))],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-1", DRIVER_A, "pool-1", "device-2"))],
    ),
    "small-and-large-backtrack-claims": Case(
        [
            claim("claim-0", req("req-0", "class-a", 1, mem_at_least("1Gi"))),
            claim("claim-1", req("req-1", "class-a", 1, mem_at_least("2Gi"))),
        ],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, mem("device-2", 2), mem("device-1", 1))],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"),), (r("req-1", DRIVER_A, "pool-1", "device-2"),)],
    ),
    "devices-split-across-different-slices": Case(
        [claim("claim-0", req("req-0", "class-a", 2))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A), one("slice-2", "node-1", "pool-2", DRIVER_A)],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-2", "device-1"))],
    ),
    "obsolete-slice": Case(
        [claim("claim-0", req("req-0"))],
        [
            sl("slice-1-obsolete", "node-1", "pool-1", DRIVER_A, "device-1", count=2),
            sl("slice-1-obsolete", "node-1", "pool-1", DRIVER_A, "device-2", count=2, generation=2),
        ],
    ),
    "duplicate-slice": Case(
        [claim("claim-0", req("req-0"))],
        [
            sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", count=2),
            sl("slice-1-2", "node-1", "pool-1", DRIVER_A, "device-1", count=2),
        ],
        error="invalid resource pools were encountered",
    ),
    "no-slices": Case([claim("claim-0", req("req-0"))]),
    "not-enough-suitable-devices": Case(
        [claim("claim-0", req("req-0")), claim("claim-0", req("req-1"))], [one("slice-1", "node-1", "pool-1", DRIVER_A)]
    ),
    "no-claims-to-allocate": Case([], [one("slice-1", "node-1", "pool-1", DRIVER_A)], expect=[]),
    "all-devices-single": Case(
        [claim("claim-0", req("req-0", count=0, mode=ALL))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"),)],
    ),
    "all-devices-many": Case(
        [claim("claim-0", req("req-0", count=0, mode=ALL))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A), one("slice-1b", "node-1", "pool-2", DRIVER_A)],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-2", "device-1"))],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        [claim("claim-0", req("req-0", count=1, mode=ALL))],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", count=2)],
        error="claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently "
        "being updated",
    ),
    "all-devices-plus-another": Case(
        [claim("claim-0", req("req-0", count=0, mode=ALL)), claim("claim-1", req("req-0", "class-b"))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A), one("slice-1b", "node-1", "pool-1", DRIVER_B)],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"),), (r("req-0", DRIVER_B, "pool-1", "device-1"),)],
    ),
    "all-devices-many-plus-another-reversed": Case(
        [claim("claim-1", req("req-0", "class-b")), claim("claim-0", req("req-0", count=0, mode=ALL))],
        [
            sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2"),
            one("slice-1b", "node-1", "pool-1", DRIVER_B),
        ],
        [
            (r("req-0", DRIVER_B, "pool-1", "device-1"),),
            (r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-1", "device-2")),
        ],
    ),
    "all-devices-no-solution": Case(
        [claim("claim-1", req("req-0")), claim("claim-0", req("req-0", count=0, mode=ALL))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
    ),
    "all-devices-no-solution-reversed": Case(
        [claim("claim-0", req("req-0", count=0, mode=ALL)), claim("claim-1", req("req-0"))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
    ),
    "all-devices-slice-without-devices": Case(
        [claim("claim-0", req("req-0", count=0, mode=ALL))], [sl("slice-1", "node-1", "pool-1", DRIVER_A)]
    ),
    "all-devices-no-slices": Case([claim("claim-0", req("req-0", count=0, mode=ALL))]),
    "all-devices-some-allocated": Case(
        [claim("claim-0", req("req-0", count=0, mode=ALL))],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2")],
        allocated=[(DRIVER_A, "pool-1", "device-1")],
    ),
    "all-devices-some-allocated-admin-access": Case(
        [claim("claim-0", req("req-0", count=1, mode=ALL, admin=True))],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2")],
        [(r("req-0", DRIVER_A, "pool-1", "device-1", True), r("req-0", DRIVER_A, "pool-1", "device-2", True))],
        allocated=[(DRIVER_A, "pool-1", "device-1")],
    ),
    "all-devices-some-allocating-admin-access": Case(
        [claim("claim-0", req("req-0", admin=True), req("req-1", mode=ALL, admin=True))],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2")],
    ),
    "count-devices-some-allocated-admin-access": Case(
        [claim("claim-0", req("req-0", count=2, admin=True))],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2")],
        [(r("req-0", DRIVER_A, "pool-1", "device-1", True), r("req-0", DRIVER_A, "pool-1", "device-2", True))],
        allocated=[(DRIVER_A, "pool-1", "device-1")],
    ),
    "separate-claims-share-device-admin-access": Case(
        [claim("claim-0", req("req-0", admin=True)), claim("claim-1", req("req-0", admin=True))],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2")],
        [(r("req-0", DRIVER_A, "pool-1", "device-1", True),), (r("req-0", DRIVER_A, "pool-1", "device-1", True),)],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        [claim("claim-0", req("req-0")), claim("claim-1", req("req-0", admin=True))],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2")],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"),), (r("req-0", DRIVER_A, "pool-1", "device-1", True),)],
    ),
    "all-devices-slice-without-devices-prioritized-list": Case(
        [claim("claim-0", first("req-0", sub("subReq-0", "class-a", 0, mode=ALL), sub("subReq-1", "class-b")))],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A), one("slice-2", "node-1", "pool-2", DRIVER_B)],
        [(r("req-0/subReq-1", DRIVER_B, "pool-2", "device-1"),)],
    ),
    "all-devices-no-slices-prioritized-list": Case(
        [claim("claim-0", first("req-0", sub("subReq-0", "class-a", 0, mode=ALL), sub("subReq-1", "class-b")))],
        [one("slice-2", "node-1", "pool-2", DRIVER_B)],
        [(r("req-0/subReq-1", DRIVER_B, "pool-2", "device-1"),)],
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        [claim("claim-0", first("req-0", sub("subReq-0", "class-a", 0, mode=ALL), sub("subReq-1", "class-b")))],
        [
            sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2"),
            one("slice-2", "node-1", "pool-2", DRIVER_B),
        ],
        [(r("req-0/subReq-1", DRIVER_B, "pool-2", "device-1"),)],
        allocated=[(DRIVER_A, "pool-1", "device-1")],
    ),
    "network-attached-device": Case(
        [claim("claim-0", req("req-0"))],
        [one("slice-1", label("region", "region-1"), "pool-1", DRIVER_A)],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"),)],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        [claim("claim-0", req("req-0"))], [one("slice-1", label("region", "region-1"), "pool-1", DRIVER_A)], node=NODE2
    ),
    "many-network-attached-devices": Case(
        [claim("claim-0", req("req-0", count=4))],
        [
            one("slice-1", label("region", "region-1"), "pool-1", DRIVER_A),
            one("slice-1", None, "pool-2", DRIVER_A),
            one("slice-1", label("planet", "earth"), "pool-3", DRIVER_A),
            one("slice-1", NodeSelector.for_node("node-1"), "pool-4", DRIVER_A),
        ],
        [tuple(r("req-0", DRIVER_A, f"pool-{i}", "device-1") for i in range(1, 5))],
    ),
    "local-and-network-attached-devices": Case(
        [claim("claim-0", req("req-0", count=2))],
        [one("slice-1", label("region", "region-1"), "pool-1", DRIVER_A), one("slice-1", "node-1", "pool-2", DRIVER_A)],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-2", "device-1"))],
    ),
    "several-different-drivers": Case(
        [claim("claim-0", req("req-0")), claim("claim-0", req("req-0", "class-b"))],
        [
            sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2"),
            one("slice-1", "node-1", "pool-1", DRIVER_B),
        ],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"),), (r("req-0", DRIVER_B, "pool-1", "device-1"),)],
    ),
    "already-allocated-devices": Case(
        [claim("claim-0", req("req-0"))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        allocated=[(DRIVER_A, "pool-1", "device-1"), (DRIVER_A, "pool-1", "device-2")],
    ),
    "admin-access-disabled": Case(
        [claim("claim-0", req("req-0", admin=True))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        error="claim claim-0, request req-0: admin access is requested, but the feature is disabled",
        features=Features(admin_access=False),
    ),
    "admin-access-enabled": Case(
        [claim("claim-0", req("req-0", admin=True))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        [(r("req-0", DRIVER_A, "pool-1", "device-1", True),)],
        allocated=[(DRIVER_A, "pool-1", "device-1"), (DRIVER_A, "pool-1", "device-2")],
    ),
    "with-constraint": Case(
        [
            claim(
                "claim-0",
                req("req-0"),
                req("req-1"),
                constraints=[
                    Constraint(match_attribute=NUMA),
                    Constraint(match_attribute=VERSION),
                    Constraint(match_attribute=STRING),
                    Constraint(match_attribute=BOOL),
                ],
            )
        ],
        [
            sl(
                "slice-1",
                "node-1",
                "pool-1",
                DRIVER_A,
                dev(DRIVER_A, "pool-1", "device-1", VERSION_ATTRS),
                dev(DRIVER_A, "pool-1", "device-2", VERSION_ATTRS),
            )
        ],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-1", DRIVER_A, "pool-1", "device-2"))],
    ),
    "with-constraint-non-existent-attribute": Case(
        [claim("claim-0", req("req-0"), constraints=[Constraint(match_attribute=f"{DRIVER_A}/nonExistentAttribute")])],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
    ),
    **{
        f"with-constraint-not-matching-{kind}-attribute": Case(
            [claim("claim-0", req("req-0", count=2), constraints=[Constraint(match_attribute=f"{DRIVER_A}/{attr}")])],
            [
                sl(
                    "slice-1",
                    "node-1",
                    "pool-1",
                    DRIVER_A,
                    dev(DRIVER_A, "pool-1", "device-1", {attr: a}),
                    dev(DRIVER_A, "pool-1", "device-2", {attr: b}),
                )
            ],
        )
        for kind, attr, a, b in [
            ("int", "numa", 1, 2),
            ("string", "stringAttribute", "x", "x2"),
            ("bool", "boolAttribute", True, False),
            ("version", "driverVersion", "1.0.0", "2.0.0"),
        ]
    },
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        [claim("claim-0", req("req-0", count=0, mode=ALL), constraints=[Constraint(match_attribute=NUMA)])],
        [
            sl(
                "slice-1",
                "node-1",
                "pool-1",
                DRIVER_A,
                dev(DRIVER_A, "pool-1", "device-1", {"numa": 1}),
                dev(DRIVER_A, "pool-1", "device-2", {"numa": 2}),
            )
        ],
        error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint "
        "would not be satisfied",
    ),
    "with-constraint-for-request": Case(
        [claim("claim-0", req("req-0"), req("req-1"), constraints=[Constraint(("req-0",), match_attribute=VERSION)])],
        [
            sl(
                "slice-1",
                "node-1",
                "pool-1",
                DRIVER_A,
                dev(DRIVER_A, "pool-1", "device-1", {"driverVersion": "1.0.0"}),
                dev(DRIVER_A, "pool-1", "device-2", {"driverVersion": "2.0.0"}),
            )
        ],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-1", DRIVER_A, "pool-1", "device-2"))],
    ),
    "with-constraint-for-request-retry": Case(
        [
            claim(
                "claim-0",
                req("req-0"),
                req("req-1"),
                constraints=[Constraint(("req-0",), match_attribute=VERSION), Constraint(match_attribute=STRING)],
            )
        ],
        [
            sl(
                "slice-1",
                "node-1",
                "pool-1",
                DRIVER_A,
                dev(DRIVER_A, "pool-1", "device-1", {"driverVersion": "1.0.0", "stringAttribute": "a"}),
                dev(DRIVER_A, "pool-1", "device-2", {"driverVersion": "2.0.0", "stringAttribute": "b"}),
                dev(DRIVER_A, "pool-1", "device-3", {"driverVersion": "3.0.0", "stringAttribute": "b"}),
            )
        ],
        [(r("req-0", DRIVER_A, "pool-1", "device-2"), r("req-1", DRIVER_A, "pool-1", "device-3"))],
    ),
    "with-class-device-config": Case(
        [claim("claim-0", req("req-0"))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"),)],
        classes={"class-a": cls("class-a", DRIVER_A, "classAttribute")},
        features=Features(config_covering_all_is_empty=False),
        config=[
            [
                AllocationConfig(
                    FROM_CLASS, ("req-0",), OpaqueConfig(DRIVER_A, {"classAttribute": "classAttributeValue"})
                )
            ]
        ],
    ),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        [claim("claim-0", req("req-0"), req("req-1"), req("req-2", "class-b"))],
        [many("slice-1", "node-1", "pool-1", DRIVER_A, 2), one("slice-2", "node-1", "pool-1", DRIVER_B)],
        [
            (
                r("req-0", DRIVER_A, "pool-1", "device-0"),
                r("req-1", DRIVER_A, "pool-1", "device-1"),
                r("req-2", DRIVER_B, "pool-1", "device-1"),
            )
        ],
        classes={
            "class-a": cls("class-a", DRIVER_A, "classAttribute-A"),
            "class-b": cls("class-b", DRIVER_B, "classAttribute-B"),
        },
        config=[
            [
                AllocationConfig(
                    FROM_CLASS,
                    ("req-0", "req-1"),
                    OpaqueConfig(DRIVER_A, {"classAttribute-A": "classAttribute-AValue"}),
                ),
                AllocationConfig(
                    FROM_CLASS, ("req-2",), OpaqueConfig(DRIVER_B, {"classAttribute-B": "classAttribute-BValue"})
                ),
            ]
        ],
    ),
    "claim-with-device-config": Case(
        [
            claim(
                "claim-0",
                req("req-0"),
                config=[DeviceConfig(OpaqueConfig(DRIVER_A, {"deviceAttribute": "deviceAttributeValue"}))],
            )
        ],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"),)],
        config=[
            [AllocationConfig(FROM_CLAIM, (), OpaqueConfig(DRIVER_A, {"deviceAttribute": "deviceAttributeValue"}))]
        ],
    ),
    "unknown-allocation-mode": Case(
        [claim("claim-0", req("req-0", mode="future-mode"))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        error="unsupported count mode future-mode",
    ),
    "invalid-CEL-one-device": Case(
        [claim("claim-0", req("req-0", "class-a", 1, "noSuchVar"))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        error="undeclared reference",
    ),
    "invalid-CEL-one-device-class": Case(
        [claim("claim-0", req("req-0"))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        error="undeclared reference",
        classes={"class-a": DeviceClass("class-a", ("noSuchVar",))},
    ),
    "invalid-CEL-all-devices": Case(
        [claim("claim-0", req("req-0", "class-a", 1, "noSuchVar", mode=ALL))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        error="undeclared reference",
    ),
    "too-many-devices-single-request": Case(
        [claim("claim-0", req("req-0", count=500))],
        error="claim claim-0: number of requested devices 500 exceeds the claim limit of 32",
    ),
    "many-devices-okay": Case(
        [claim("claim-0", req("req-0", count=32))],
        [many("slice-1", "node-1", "pool-1", DRIVER_A, 32)],
        [r32("req-0", 32)],
    ),
    "too-many-devices-total": Case(
        [claim("claim-0", req("req-0", count=32), req("req-1"))],
        [many("slice-1", "node-1", "pool-1", DRIVER_A, 33)],
        error="exceeds the claim limit of 32",
    ),
    "prioritized-list-first-unavailable": Case(
        [claim("claim-0", first("req-0", sub("subReq-0", "class-b"), sub("subReq-1", "class-a")))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        [(r("req-0/subReq-1", DRIVER_A, "pool-1", "device-1"),)],
    ),
    "prioritized-list-non-available": Case(
        [claim("claim-0", first("req-0", sub("subReq-0", "class-b", 2), sub("subReq-1", "class-a", 2)))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A), one("slice-2", "node-1", "pool-2", DRIVER_B)],
    ),
    "prioritized-list-device-config": Case(
        [
            claim(
                "claim-0",
                first("req-0", sub("subReq-0", "class-a"), sub("subReq-1", "class-b", 2)),
                config=[
                    DeviceConfig(OpaqueConfig(DRIVER_A, {"foo": "fooValue"}), ("req-0/subReq-0",)),
                    DeviceConfig(OpaqueConfig(DRIVER_B, {"bar": "barValue"}), ("req-0/subReq-1",)),
                ],
            )
        ],
        [sl("slice-1", "node-1", "pool-1", DRIVER_B, "device-1", "device-2")],
        [(r("req-0/subReq-1", DRIVER_B, "pool-1", "device-1"), r("req-0/subReq-1", DRIVER_B, "pool-1", "device-2"))],
        features=Features(config_covering_all_is_empty=False),
        config=[[AllocationConfig(FROM_CLAIM, ("req-0/subReq-1",), OpaqueConfig(DRIVER_B, {"bar": "barValue"}))]],
    ),
    "prioritized-list-class-config": Case(
        [claim("claim-0", first("req-0", sub("subReq-0", "class-a", 2), sub("subReq-1", "class-b", 2)))],
        [
            sl("slice-1", "node-1", "pool-1", DRIVER_B, "device-1", "device-2"),
            sl("slice-2", "node-1", "pool-2", DRIVER_A, "device-3"),
        ],
        [(r("req-0/subReq-1", DRIVER_B, "pool-1", "device-1"), r("req-0/subReq-1", DRIVER_B, "pool-1", "device-2"))],
        classes={"class-a": cls("class-a", DRIVER_A, "foo"), "class-b": cls("class-b", DRIVER_B, "bar")},
        features=Features(config_covering_all_is_empty=False),
        config=[[AllocationConfig(FROM_CLASS, ("req-0/subReq-1",), OpaqueConfig(DRIVER_B, {"bar": "barValue"}))]],
    ),
    "prioritized-list-subrequests-with-expressions": Case(
        [
            claim(
                "claim-0",
                req("req-0", "class-a", 1, mem_at_least("1Gi")),
                first(
                    "req-1",
                    sub("subReq-0", "class-a", 1, mem_at_least("4Gi")),
                    sub("subReq-1", "class-a", 2, mem_at_least("2Gi")),
                ),
            )
        ],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, mem("device-1", 2), mem("device-2", 2), mem("device-3", 1))],
        [
            (
                r("req-0", DRIVER_A, "pool-1", "device-3"),
                r("req-1/subReq-1", DRIVER_A, "pool-1", "device-1"),
                r("req-1/subReq-1", DRIVER_A, "pool-1", "device-2"),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": Case(
        [
            claim(
                "claim-0",
                req("req-0", "class-a", 1, mem_at_least("8Gi")),
                first(
                    "req-1",
                    sub("subReq-0", "class-a", 1, mem_at_least("2Gi")),
                    sub("subReq-1", "class-a", 1, mem_at_least("1Gi")),
                ),
                constraints=[Constraint(("req-0", "req-1"), match_attribute=VERSION)],
            )
        ],
        [
            sl("slice-1", "node-1", "pool-1", DRIVER_A, mem("device-1", 8, driverVersion="1.0.0")),
            sl(
                "slice-2",
                "node-1",
                "pool-2",
                DRIVER_A,
                mem("device-2", 2, "pool-2", driverVersion="2.0.0"),
                mem("device-3", 1, "pool-2", driverVersion="1.0.0"),
            ),
        ],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-1/subReq-1", DRIVER_A, "pool-2", "device-3"))],
    ),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": Case(
        [
            claim(
                "claim-0",
                req("req-0", "class-a", 1, mem_at_least("8Gi")),
                first(
                    "req-1",
                    sub("subReq-0", "class-a", 1, mem_at_least("2Gi")),
                    sub("subReq-1", "class-a", 1, mem_at_least("1Gi")),
                ),
                constraints=[Constraint(("req-0", "req-1/subReq-0"), match_attribute=VERSION)],
            )
        ],
        [
            sl("slice-1", "node-1", "pool-1", DRIVER_A, mem("device-1", 8, driverVersion="1.0.0")),
            sl("slice-2", "node-1", "pool-2", DRIVER_A, mem("device-2", 2, "pool-2", driverVersion="2.0.0")),
        ],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-1/subReq-1", DRIVER_A, "pool-2", "device-2"))],
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        [claim("claim-0", first("req-0", sub("subReq-0", "class-a", 0, mode=ALL), sub("subReq-1", "class-a")))],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2")],
        [(r("req-0/subReq-1", DRIVER_A, "pool-1", "device-2"),)],
        allocated=[(DRIVER_A, "pool-1", "device-1")],
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        [
            claim(
                "claim-0",
                req("req-0"),
                first("req-1", sub("subReq-0", "class-a", 0, mode=ALL), sub("subReq-1", "class-a")),
            )
        ],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2")],
        [(r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-1/subReq-1", DRIVER_A, "pool-1", "device-2"))],
    ),
    "prioritized-list-disabled": Case(
        [claim("claim-0", first("req-0", sub("subReq-0", "class-a")))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        error="claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled",
        features=Features(prioritized_list=False),
    ),
    "prioritized-list-multi-request": Case(
        [
            claim(
                "claim-0",
                req("req-1", "class-a", 1, mem_at_least("8Gi")),
                first(
                    "req-0",
                    sub("subReq-0", "class-a", 1, mem_at_least("8Gi")),
                    sub("subReq-1", "class-a", 1, mem_at_least("4Gi")),
                ),
            )
        ],
        [
            sl("slice-1", "node-1", "pool-1", DRIVER_A, mem("device-1", 8)),
            sl("slice-2", "node-1", "pool-2", DRIVER_A, mem("device-2", 4, "pool-2")),
        ],
        [(r("req-1", DRIVER_A, "pool-1", "device-1"), r("req-0/subReq-1", DRIVER_A, "pool-2", "device-2"))],
    ),
    "prioritized-list-with-backtracking": Case(
        [
            claim(
                "claim-0",
                first(
                    "req-0",
                    sub("subReq-0", "class-a", 1, mem_at_least("8Gi")),
                    sub("subReq-1", "class-a", 1, mem_at_least("4Gi")),
                ),
                req("req-1", "class-a", 1, mem_at_least("8Gi")),
            )
        ],
        [
            sl("slice-1", "node-1", "pool-1", DRIVER_A, mem("device-1", 8)),
            sl("slice-2", "node-1", "pool-2", DRIVER_A, mem("device-2", 4, "pool-2")),
        ],
        [(r("req-0/subReq-1", DRIVER_A, "pool-2", "device-2"), r("req-1", DRIVER_A, "pool-1", "device-1"))],
    ),
    "prioritized-list-too-many-in-first-subrequest": Case(
        [claim("claim-0", first("req-0", sub("subReq-0", "class-b", 500), sub("subReq-1", "class-a")))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        [(r("req-0/subReq-1", DRIVER_A, "pool-1", "device-1"),)],
    ),
    "prioritized-list-allocation-mode-all": Case(
        [claim("claim-0", first("req-0", sub("subReq-0", "class-a", 0, mode=ALL), sub("subReq-1", "class-a")))],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", "device-2")],
        [(r("req-0/subReq-1", DRIVER_A, "pool-1", "device-1"),)],
        allocated=[(DRIVER_A, "pool-1", "device-2")],
    ),
    "prioritized-list-allocation-mode-all-with-selectors": Case(
        [
            claim(
                "claim-0",
                first(
                    "req-0",
                    sub("subReq-0", "class-a", 0, f'device.attributes["{DRIVER_A}"].generation == "v6"', mode=ALL),
                    sub("subReq-1", "class-a", 0, f'device.attributes["{DRIVER_A}"].generation == "v5"', mode=ALL),
                ),
            )
        ],
        [sl("slice-1", "node-1", "pool-1", DRIVER_A, dev(DRIVER_A, "pool-1", "device-1", {"generation": "v5"}))],
        [(r("req-0/subReq-1", DRIVER_A, "pool-1", "device-1"),)],
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes": Case(
        [
            claim(
                "claim-0",
                first(
                    "req-0",
                    sub("subReq-0", "class-a", 0, f'device.attributes["{DRIVER_A}"].generation == "v6"', mode=ALL),
                    sub("subReq-1", "class-a", 0, f'device.attributes["{DRIVER_A}"].generation == "v5"', mode=ALL),
                ),
            )
        ],
        [
            sl("slice-1", "node-1", "pool-1", DRIVER_A, dev(DRIVER_A, "pool-1", "device-1", {"generation": "v5"})),
            sl(
                "slice-2",
                "node-2",
                "pool-2",
                DRIVER_A,
                dev(DRIVER_A, "pool-2", "device-1", {"generation": "v5"}),
                dev(DRIVER_A, "pool-2", "device-2", {"generation": "v6"}),
            ),
        ],
        [(r("req-0/subReq-1", DRIVER_A, "pool-1", "device-1"),)],
    ),
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset": Case(
        [
            claim(
                "claim-0",
                first(
                    "req-0",
                    sub("subReq-0", "class-a", 0, f'device.attributes["{DRIVER_A}"].generation == "v6"', mode=ALL),
                    sub("subReq-1", "class-a", 0, f'device.attributes["{DRIVER_A}"].generation == "v5"', mode=ALL),
                ),
            )
        ],
        [
            sl(
                "slice-1",
                "node-1",
                "pool-1",
                DRIVER_A,
                dev(DRIVER_A, "pool-1", "device-1", {"generation": "v6", "selected": False}),
                dev(DRIVER_A, "pool-1", "device-2", {"generation": "v5", "selected": False}),
                dev(DRIVER_A, "pool-1", "device-3", {"generation": "v5", "selected": True}),
            )
        ],
        [(r("req-0/subReq-1", DRIVER_A, "pool-1", "device-3"),)],
        classes={
            "class-a": DeviceClass(
                "class-a", (f'device.driver == "{DRIVER_A}" && device.attributes["{DRIVER_A}"].selected',)
            )
        },
    ),
    "max-number-devices": Case(
        [claim("claim-0", req("req-0", count=32))],
        [many("slice-1", "node-1", "pool-1", DRIVER_A, 32)],
        [r32("req-0", 32)],
    ),
    "prioritized-list-max-allocation-limit-request": Case(
        [
            claim(
                "claim-0",
                first("req-0", sub("subReq-0", "class-a", 32), sub("subReq-1", "class-a", 16)),
                first("req-1", sub("subReq-0", "class-a", 32), sub("subReq-1", "class-a", 16)),
            )
        ],
        [many("slice-1", "node-1", "pool-1", DRIVER_A, 64)],
        [(*r32("req-0/subReq-1", 16), *r32("req-1/subReq-1", 16, 16))],
    ),
    "prioritized-list-max-allocation-allocation-mode-all": Case(
        [
            claim(
                "claim-0",
                first("req-0", sub("subReq-0", "class-a", 0, mode=ALL), sub("subReq-1", "class-a", 2)),
                req("req-1", "class-b", 2),
            )
        ],
        [many("slice-1", "node-1", "pool-1", DRIVER_A, 31), many("slice-2", "node-1", "pool-2", DRIVER_B, 2)],
        [
            (
                r("req-0/subReq-1", DRIVER_A, "pool-1", "device-0"),
                r("req-0/subReq-1", DRIVER_A, "pool-1", "device-1"),
                r("req-1", DRIVER_B, "pool-2", "device-0"),
                r("req-1", DRIVER_B, "pool-2", "device-1"),
            )
        ],
    ),
    # The scheduler plugin's table: a CEL runtime error stops the attempt with upstream's text.
    "CEL-runtime-error": Case(
        [claim("claim-0", req("req-0", "class-a", 1, f'device.attributes["{DRIVER_A}"].exists'))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        error="claim claim-0: selector #0 on device driver-a/pool-1/device-1: CEL runtime error: no such key: exists",
    ),
    "class-parameters-CEL-runtime-error": Case(
        [claim("claim-0", req("req-0"))],
        [one("slice-1", "node-1", "pool-1", DRIVER_A)],
        classes={"class-a": DeviceClass("class-a", (f'device.attributes["{DRIVER_A}"].exists',))},
        error="class class-a: selector #0 on device driver-a/pool-1/device-1: CEL runtime error: no such key: exists",
    ),
}


def _run(case: Case) -> Any:
    return allocate(
        case.claims, case.node, case.slices, case.classes, frozenset(case.allocated), features=case.features
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_upstream_case(name: str) -> None:
    case = CASES[name]
    out = _run(case)
    if case.error:
        assert not out.ok
        assert case.error in out.message, out.message
        return
    if case.expect is None:
        assert not out.ok and not out.error, out
        return
    assert out.results is not None, out.message
    got = [tuple((d.request, d.driver, d.pool, d.device, d.admin_access) for d in res.devices) for res in out.results]
    assert got == [tuple(e) for e in case.expect]
    if case.config is not None:
        assert [list(res.config) for res in out.results] == [list(c) for c in case.config]


def test_node_selectors_of_network_attached_devices() -> None:
    out = _run(CASES["many-network-attached-devices"])
    assert out.results is not None
    sel = out.results[0].node_selector
    assert sel is not None and len(sel.terms) == 1
    term = sel.terms[0]
    assert [(e.key, e.values) for e in term.match_expressions] == [("region", ("region-1",)), ("planet", ("earth",))]
    assert [(f.key, f.values) for f in term.match_fields] == [("metadata.name", ("node-1",))]


def test_a_pool_spanning_nodes_is_complete_and_all_mode_works_there() -> None:
    """Two slices of one pool, one per node (resourceSliceCount 2): each node sees its half."""
    slices = [
        sl("slice-1", "node-1", "pool-1", DRIVER_A, "device-1", count=2),
        sl("slice-2", "node-2", "pool-1", DRIVER_A, "device-2", count=2),
    ]
    c = [claim("claim-0", req("req-0", count=0, mode=ALL))]
    out = allocate(c, NODE1, slices, CLASSES, frozenset())
    assert out.results is not None
    assert [d.device for d in out.results[0].devices] == ["device-1"]


@pytest.mark.parametrize(
    ("requests", "covering", "expected"),
    [
        # 1.37: a config naming every request lists none; a narrower one keeps its list
        (
            (req("req-0"), req("req-1")),
            True,
            [
                ("class", ()),
            ],
        ),
        (
            (req("req-0"), req("req-1", "class-b")),
            True,
            [
                ("class", ("req-0",)),
            ],
        ),
        # 1.35 / 1.36: the full list
        (
            (req("req-0"), req("req-1")),
            False,
            [
                ("class", ("req-0", "req-1")),
            ],
        ),
    ],
)
def test_config_format_follows_the_version(
    requests: tuple[Request, ...], covering: bool, expected: list[tuple[str, tuple[str, ...]]]
) -> None:
    classes = {"class-a": cls("class-a", DRIVER_A, "x"), "class-b": cls("class-b", DRIVER_B)}
    slices = [many("slice-1", "node-1", "pool-1", DRIVER_A, 2), one("slice-2", "node-1", "pool-2", DRIVER_B)]
    out = allocate(
        [claim("claim-0", *requests)],
        NODE1,
        slices,
        classes,
        frozenset(),
        features=Features(config_covering_all_is_empty=covering),
    )
    assert out.results is not None
    assert [("class" if c.source == FROM_CLASS else "claim", c.requests) for c in out.results[0].config] == expected


def test_upstream_cases_expressed() -> None:
    """The count the report quotes: upstream cases expressed here (all of them must pass above)."""
    assert len(CASES) >= 70
