"""Capacity from host facts and the node profile."""

from __future__ import annotations

from nodeagent.cm.capacity import hugepage_resource, node_capacity
from nodeagent.config import NodeProfile, NumaNode
from nodeagent.host.model import FsStats, HostFacts, HugePages, NumaInfo

Gi = 1 << 30
FS = FsStats(capacity=100 * Gi, available=50 * Gi, inodes=1000, inodes_free=900)
HOST = HostFacts(
    cpus=(0, 1, 2, 3),
    memory_total=16 * Gi,
    hugepages=(HugePages(size=2 << 20, total=512), HugePages(size=Gi, total=0)),
    numa_nodes=(NumaInfo(0, (0, 1), 8 * Gi), NumaInfo(1, (2, 3), 8 * Gi)),
)


def test_host_capacity() -> None:
    cap = node_capacity(HOST, FS, NodeProfile(), max_pods=110)
    assert cap.resources == {
        "cpu": 4000,
        "memory": 16 * Gi,
        "ephemeral-storage": 100 * Gi,
        "hugepages-2Mi": Gi,
        "hugepages-1Gi": 0,
        "pods": 110,
    }
    assert cap.cpus == (0, 1, 2, 3)
    assert [n.id for n in cap.numa_nodes] == [0, 1]
    assert cap.numa_nodes[1].cpus == (2, 3)


def test_profile_overrides_each_resource() -> None:
    profile = NodeProfile(capacity={"memory": 64 * Gi, "ephemeral-storage": 10 * Gi, "pods": 20})
    cap = node_capacity(HOST, FS, profile, max_pods=110)
    assert cap.resources["memory"] == 64 * Gi
    assert cap.resources["ephemeral-storage"] == 10 * Gi
    assert cap.resources["pods"] == 20
    assert cap.resources["cpu"] == 4000
    assert len(cap.numa_nodes) == 2  # cpu unchanged: host layout still describes the node


def test_profile_numa_nodes_give_cpu_and_memory() -> None:
    numa = (NumaNode(0, (0, 1, 2, 3), 4 * Gi), NumaNode(1, (4, 5, 6, 7), 4 * Gi))
    cap = node_capacity(HOST, FS, NodeProfile(numa_nodes=numa), max_pods=110)
    assert cap.resources["cpu"] == 8000
    assert cap.resources["memory"] == 8 * Gi
    assert cap.cpus == tuple(range(8))
    assert cap.numa_nodes == numa


def test_profile_numa_hugepages_sum_into_capacity() -> None:
    Mi2 = 2 << 20
    numa = (NumaNode(0, (0, 1), 4 * Gi, (("hugepages-2Mi", 256 * Mi2), ("hugepages-1Gi", 2 * Gi))),
            NumaNode(1, (2, 3), 4 * Gi, (("hugepages-2Mi", 128 * Mi2),)))
    cap = node_capacity(HOST, FS, NodeProfile(numa_nodes=numa), max_pods=110)
    # the kubelet's capacity is the sum over NUMA nodes (the host's 512 pages are not this node's)
    assert cap.resources["hugepages-2Mi"] == 384 * Mi2
    assert cap.resources["hugepages-1Gi"] == 2 * Gi
    # an explicit capacity still wins
    cap = node_capacity(HOST, FS, NodeProfile(capacity={"hugepages-1Gi": 0}, numa_nodes=numa), max_pods=110)
    assert cap.resources["hugepages-1Gi"] == 0 and cap.resources["hugepages-2Mi"] == 384 * Mi2
    # nodes without hugepages leave the host's pools as they are
    plain = (NumaNode(0, (0, 1), 4 * Gi),)
    assert node_capacity(HOST, FS, NodeProfile(numa_nodes=plain), max_pods=110).resources["hugepages-2Mi"] == Gi


def test_profile_numa_with_explicit_cpu_keeps_cpu() -> None:
    numa = (NumaNode(0, (0, 1), 0),)
    cap = node_capacity(HOST, FS, NodeProfile(capacity={"cpu": 1500}, numa_nodes=numa), max_pods=110)
    assert cap.resources["cpu"] == 1500
    assert cap.resources["memory"] == 16 * Gi  # a node without memory figures keeps the host's


def test_profile_cpu_disagreeing_with_host_drops_numa() -> None:
    cap = node_capacity(HOST, FS, NodeProfile(capacity={"cpu": 16000}), max_pods=110)
    assert cap.numa_nodes == ()
    assert cap.cpus == tuple(range(16))


def test_no_numa_information_is_unknown() -> None:
    host = HostFacts(cpus=(0, 1), memory_total=Gi)
    cap = node_capacity(host, FS, NodeProfile(), max_pods=5)
    assert cap.numa_nodes == ()
    assert cap.resources["pods"] == 5


def test_hugepage_resource_names() -> None:
    assert hugepage_resource(2 << 20) == "hugepages-2Mi"
    assert hugepage_resource(1 << 30) == "hugepages-1Gi"


def test_host_numa_nodes_keep_their_hugepage_pools_zero_sized_ones_too() -> None:
    """The memory manager's machine state has an entry per hugepage size of each node, as the
    kubelet's from cadvisor (memory_manager_state lists hugepages-1Gi of total 0)."""
    import dataclasses

    host = dataclasses.replace(HOST, numa_nodes=(NumaInfo(0, (0, 1, 2, 3), 16 * Gi,
                                                          hugepages=((2 << 20, 512), (Gi, 0))),))
    (node,) = node_capacity(host, FS, NodeProfile(), max_pods=110).numa_nodes
    assert node.hugepages == (("hugepages-2Mi", Gi), ("hugepages-1Gi", 0))
