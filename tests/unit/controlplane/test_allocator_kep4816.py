"""KEP-4816 prioritized alternatives: the nic + gpu example on nodes of different shapes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from nodeagent.controlplane.allocator import (
    FROM_CLAIM,
    FROM_CLASS,
    AllocationOutcome,
    Claim,
    Constraint,
    Device,
    DeviceClass,
    DeviceConfig,
    DeviceId,
    Node,
    NodeSelector,
    OpaqueConfig,
    Request,
    ResourceSlice,
    SubRequest,
    allocate,
)

GiB = 2**30
GPU, NIC = "gpu.example.com", "nic.example.com"
PCIE = "dra.k8s.io/pcieRoot"
MEM = 'device.capacity["gpu.example.com"].memory'

CLASSES = {
    "rdma-nic": DeviceClass("rdma-nic", (f'device.driver == "{NIC}"',)),
    "big-gpu": DeviceClass("big-gpu", (f'device.driver == "{GPU}"', f'{MEM}.compareTo(quantity("80Gi")) >= 0'),
                           (OpaqueConfig(GPU, {"class": "big"}),)),
    "mid-gpu": DeviceClass("mid-gpu", (f'device.driver == "{GPU}"', f'{MEM}.compareTo(quantity("40Gi")) >= 0',
                                       f'{MEM}.isLessThan(quantity("80Gi"))')),
    "small-gpu": DeviceClass("small-gpu", (f'device.driver == "{GPU}"', f'{MEM}.isLessThan(quantity("40Gi"))'),
                             (OpaqueConfig(GPU, {"class": "small"}),)),
}

SMALL_CONFIG = OpaqueConfig(GPU, {"sharing": "time-slicing"})
ANY_GPU_CONFIG = OpaqueConfig(GPU, {"log": "debug"})
ALL_CONFIG = OpaqueConfig(NIC, {"mtu": 9000})

GPU_REQUEST = Request("gpu", first_available=(
    SubRequest("big-gpu", "big-gpu"),
    SubRequest("mid-gpu", "mid-gpu"),
    SubRequest("small-gpu", "small-gpu", count=2),
))

CLAIM = Claim(
    "default", "net-gpu", "uid-1",
    requests=(Request("nic", "rdma-nic"), GPU_REQUEST),
    constraints=(Constraint(("nic", "gpu"), match_attribute=PCIE),),
    config=(DeviceConfig(SMALL_CONFIG, ("gpu/small-gpu",)), DeviceConfig(ANY_GPU_CONFIG, ("gpu",)),
            DeviceConfig(ALL_CONFIG)),
)


def gpu(name: str, gib: int, root: str) -> Device:
    return Device(GPU, "pool", name, {"model": f"g{gib}", PCIE: root}, {"memory": gib * GiB})


def nic(name: str, root: str) -> Device:
    return Device(NIC, "pool", name, {PCIE: root})


def node_slices(node: str, gpus: Sequence[Device], nics: Sequence[Device]) -> list[ResourceSlice]:
    def fix(d: Device) -> Device:
        return Device(d.driver, node, d.name, d.attributes, d.capacity)

    return [
        ResourceSlice(f"{node}-gpu", GPU, node, tuple(fix(d) for d in gpus), node_name=node),
        ResourceSlice(f"{node}-nic", NIC, node, tuple(fix(d) for d in nics), node_name=node),
    ]


SHAPES: dict[str, list[ResourceSlice]] = {
    # big GPU on the nic's PCIe root
    "node-big": node_slices("node-big", [gpu("g0", 80, "a"), gpu("g1", 40, "a")], [nic("n0", "a")]),
    # the big GPU hangs off another root: the constraint rules it out, mid fits
    "node-mid": node_slices("node-mid", [gpu("g0", 80, "b"), gpu("g1", 48, "a")], [nic("n0", "a")]),
    # only small GPUs, two of them on the nic's root
    "node-small": node_slices("node-small", [gpu("g0", 16, "b"), gpu("g1", 16, "a"), gpu("g2", 24, "a")],
                              [nic("n0", "a")]),
    # one small on the nic's root, a mid on another root: nothing fits
    "node-none": node_slices("node-none", [gpu("g0", 16, "a"), gpu("g1", 48, "b")], [nic("n0", "a")]),
}


def run(node: str, claims: Sequence[Claim] = (CLAIM,),
        allocated: frozenset[DeviceId] = frozenset()) -> AllocationOutcome:
    return allocate(claims, Node(node), [s for ss in SHAPES.values() for s in ss], CLASSES, allocated)


@pytest.mark.parametrize(
    ("node", "gpu_request", "gpu_devices", "score"),
    [
        ("node-big", "gpu/big-gpu", ["g0"], 0),
        ("node-mid", "gpu/mid-gpu", ["g1"], 1),
        ("node-small", "gpu/small-gpu", ["g1", "g2"], 2),
    ],
)
def test_each_node_gets_the_best_alternative_it_can_hold(
    node: str, gpu_request: str, gpu_devices: list[str], score: int
) -> None:
    outcome = run(node)
    assert outcome.ok, outcome.message
    assert outcome.results is not None
    (result,) = outcome.results
    assert [(d.request, d.driver, d.pool, d.device) for d in result.devices] == [
        ("nic", NIC, node, "n0"),
        *[(gpu_request, GPU, node, g) for g in gpu_devices],
    ]
    assert outcome.score == score
    assert result.node_selector == NodeSelector.for_node(node)


def test_scores_order_nodes_by_the_alternative_that_fits() -> None:
    scores = {n: run(n).score for n in ("node-small", "node-big", "node-mid")}
    assert sorted(scores, key=scores.__getitem__) == ["node-big", "node-mid", "node-small"]


def test_small_gpu_config_only_when_small_gpu_is_chosen() -> None:
    def configs(node: str) -> list[tuple[str, tuple[str, ...], OpaqueConfig]]:
        outcome = run(node)
        assert outcome.results is not None
        return [(c.source, c.requests, c.opaque) for c in outcome.results[0].config]

    assert configs("node-small") == [
        (FROM_CLASS, ("gpu/small-gpu",), CLASSES["small-gpu"].config[0]),
        (FROM_CLAIM, ("gpu/small-gpu",), SMALL_CONFIG),
        (FROM_CLAIM, ("gpu",), ANY_GPU_CONFIG),
        (FROM_CLAIM, (), ALL_CONFIG),
    ]
    assert configs("node-mid") == [
        (FROM_CLAIM, ("gpu",), ANY_GPU_CONFIG),
        (FROM_CLAIM, (), ALL_CONFIG),
    ]
    assert configs("node-big") == [
        (FROM_CLASS, ("gpu/big-gpu",), CLASSES["big-gpu"].config[0]),
        (FROM_CLAIM, ("gpu",), ANY_GPU_CONFIG),
        (FROM_CLAIM, (), ALL_CONFIG),
    ]


def test_unsatisfiable_claim_explains_each_alternative() -> None:
    outcome = run("node-none")
    assert not outcome.ok and not outcome.timed_out
    assert outcome.message == (
        "claim net-gpu: nic: constraint matchAttribute dra.k8s.io/pcieRoot not satisfiable; "
        "gpu/big-gpu: no device in class; "
        "gpu/mid-gpu: constraint matchAttribute dra.k8s.io/pcieRoot not satisfiable; "
        "gpu/small-gpu: 1 of 1 free, need 2"
    )


def test_message_for_a_single_request_claim_uses_subrequest_names() -> None:
    claim = Claim("default", "gpu", "uid-2", requests=(GPU_REQUEST,))
    taken = frozenset({(GPU, "node-mid", "g1"), (GPU, "node-mid", "g9")})
    slices = node_slices("node-mid", [gpu("g1", 48, "a"), gpu("g9", 64, "a")], [])
    outcome = allocate([claim], Node("node-mid"), slices, CLASSES, taken)
    assert outcome.message == (
        "claim gpu: big-gpu: no device in class; mid-gpu: 0 of 2 free; small-gpu: no device in class"
    )


def test_a_lower_alternative_is_used_when_the_better_one_is_taken() -> None:
    outcome = run("node-big", allocated=frozenset({(GPU, "node-big", "g0")}))
    assert outcome.results is not None
    assert [d.request for d in outcome.results[0].devices] == ["nic", "gpu/mid-gpu"]
    assert outcome.score == 1


def test_eight_alternatives_the_eighth_fits() -> None:
    classes = {f"c{i}": DeviceClass(f"c{i}", (f'device.attributes["{GPU}"].model == "m{i}"',)) for i in range(8)}
    request = Request("gpu", first_available=tuple(SubRequest(f"s{i}", f"c{i}") for i in range(8)))
    claim = Claim("default", "eight", "uid-8", requests=(request,))
    slices = [ResourceSlice("s", GPU, "p", (Device(GPU, "p", "d7", {"model": "m7"}),), all_nodes=True)]
    outcome = allocate([claim], Node("n"), slices, classes, frozenset())
    assert outcome.results is not None
    assert [d.request for d in outcome.results[0].devices] == ["gpu/s7"]
    assert outcome.score == 7
    assert outcome.results[0].node_selector is None  # allNodes devices are usable anywhere


def test_constraint_naming_a_subrequest_applies_only_when_it_is_chosen() -> None:
    # matchAttribute names only gpu/small-gpu: mid-gpu on another root is fine.
    claim = Claim("default", "c", "u", requests=(Request("nic", "rdma-nic"), GPU_REQUEST),
                  constraints=(Constraint(("nic", "gpu/small-gpu"), match_attribute=PCIE),))
    slices = node_slices("n", [gpu("g0", 48, "b")], [nic("n0", "a")])
    outcome = allocate([claim], Node("n"), slices, CLASSES, frozenset())
    assert outcome.results is not None
    assert [d.request for d in outcome.results[0].devices] == ["nic", "gpu/mid-gpu"]
    # and when small-gpu is chosen, it binds
    slices = node_slices("n", [gpu("g0", 16, "b"), gpu("g1", 16, "b"), gpu("g2", 16, "a"), gpu("g3", 16, "a")],
                         [nic("n0", "a")])
    outcome = allocate([claim], Node("n"), slices, CLASSES, frozenset())
    assert outcome.results is not None
    assert [d.device for d in outcome.results[0].devices] == ["n0", "g2", "g3"]
