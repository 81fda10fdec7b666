"""Machine topology: the profile's shorthand and explicit forms, their errors, sysfs discovery, and the
container manager choosing one and refusing bad cpu manager options at start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodeagent.cm.topology.discover import from_host, machine_topology
from nodeagent.config import NodeProfile
from nodeagent.errors import ConfigError
from nodeagent.host.fake import FakeHost
from nodeagent.host.model import CpuInfo, NumaInfo
from nodeagent.host.probe import SystemProbe
from tests.unit.cm.test_manager import config, manager
from tests.unit.cm.test_probe import write

A = "NodeAgentConfiguration.nodeProfile.cpuTopology"


def profile(tmp: Path, topo: dict[str, Any], **extra: Any) -> NodeProfile:
    return config(tmp, agent={"nodeProfile": {"cpuTopology": topo, **extra}}).agent.node_profile


def test_shorthand_linear_and_interleaved(tmp_path: Path) -> None:
    p = profile(tmp_path, {"sockets": 2, "coresPerSocket": 4, "threadsPerCore": 2})
    assert p.cpu_topology is not None
    topo = machine_topology(p, FakeHost().facts(), (), ())
    assert topo.cpus == tuple(range(16)) and topo.cpus_in_core(1) == {1, 9}
    assert topo.cpus_in_socket(1) == {4, 5, 6, 7, 12, 13, 14, 15}
    assert [n.cpus for n in p.numa_nodes] == [(0, 1, 2, 3, 8, 9, 10, 11), (4, 5, 6, 7, 12, 13, 14, 15)]
    assert topo.distance(0, 1) == 21 and topo.distance(1, 1) == 10
    inter = machine_topology(
        profile(tmp_path, {"sockets": 2, "coresPerSocket": 3, "threadsPerCore": 2, "numbering": "interleaved"}),
        FakeHost().facts(), (), ())
    assert inter.cpus_in_socket(0) == {0, 2, 4, 6, 8, 10} and inter.cpus_in_core(1) == {1, 7}


def test_numa_nodes_per_socket_and_distances(tmp_path: Path) -> None:
    p = profile(tmp_path, {"sockets": 1, "coresPerSocket": 4, "threadsPerCore": 1, "numaNodesPerSocket": 2,
                           "numaDistances": [[10, 12], [12, 10]]}, numaNodes=[{"id": 1, "memory": "8Gi"}])
    topo = machine_topology(p, FakeHost().facts(), (), ())
    assert topo.cpus_in_numa(0) == {0, 1} and topo.cpus_in_numa(1) == {2, 3} and topo.distance(0, 1) == 12
    assert [(n.id, n.cpus, n.memory) for n in p.numa_nodes] == [(0, (0, 1), 0), (1, (2, 3), 8 << 30)]


def test_cores_per_uncore_cache(tmp_path: Path) -> None:
    # 1 socket, 8 cores x 2 threads, 2 NUMA nodes, L3 groups of 2 cores (AMD CCX-like)
    p = profile(tmp_path, {"sockets": 1, "coresPerSocket": 8, "threadsPerCore": 2, "numaNodesPerSocket": 2,
                           "coresPerUncoreCache": 2})
    topo = machine_topology(p, FakeHost().facts(), (), ())
    assert topo.num_uncore_caches == 4 and topo.cpus_per_uncore() == 4
    assert topo.cpus_in_uncore(0) == {0, 1, 8, 9} and topo.cpus_in_uncore(3) == {6, 7, 14, 15}
    assert {topo.index("uncore_cache")[c] for c in topo.cpus_in_numa(1)} == {2, 3}
    # the default: one L3 group per NUMA node
    flat = machine_topology(profile(tmp_path, {"sockets": 2, "coresPerSocket": 2, "threadsPerCore": 1}),
                            FakeHost().facts(), (), ())
    assert flat.num_uncore_caches == 2 and flat.cpus_in_uncore(1) == {2, 3}


def test_explicit_cores(tmp_path: Path) -> None:
    p = profile(tmp_path, {"cores": [{"threads": "0,2", "socket": 0}, {"threads": "1,3", "socket": 1}]})
    topo = machine_topology(p, FakeHost().facts(), (), ())
    assert topo.num_sockets == 2 and topo.cpus_in_core(1) == {1, 3} and topo.numa_of(3) == 1


@pytest.mark.parametrize(
    ("topo", "message"),
    [
        ({"sockets": 2, "coresPerSocket": 4}, f"{A}.threadsPerCore: Required value"),
        ({"sockets": 0, "coresPerSocket": 4, "threadsPerCore": 1}, f"{A}.sockets: must be at least 1, got 0"),
        ({"sockets": 1, "coresPerSocket": 3, "threadsPerCore": 1, "numaNodesPerSocket": 2},
         f"{A}.numaNodesPerSocket: Invalid value: 2: must divide coresPerSocket (3) evenly"),
        ({"sockets": 1, "coresPerSocket": 6, "threadsPerCore": 1, "numaNodesPerSocket": 2,
          "coresPerUncoreCache": 2},
         f"{A}.coresPerUncoreCache: Invalid value: 2: must divide the cores of a NUMA node (3) evenly"),
        ({"sockets": 1, "coresPerSocket": 2, "threadsPerCore": 1, "numbering": "random"},
         f'{A}.numbering: unsupported value "random" (one of interleaved, linear)'),
        ({"cores": [{"threads": "0,1"}, {"threads": "1"}]},
         f"{A}.cores[1].threads: Duplicate value: cpu 1 already belongs to {A}.cores[0]"),
        ({"cores": [{"threads": "0,1"}, {"threads": "2"}]},
         f"{A}.cores: Invalid value: every core needs the same number of threads (found 1, 2)"),
        ({"cores": [{"threads": "0"}], "sockets": 1}, f"{A}: Invalid value: give either cores or the shorthand "
                                                      "(sockets, coresPerSocket, ...), not both"),
        ({"sockets": 2, "coresPerSocket": 1, "threadsPerCore": 1, "numaDistances": [[10, 21]]},
         f"{A}.numaDistances: Invalid value: 1 rows for 2 NUMA nodes (0, 1)"),
        ({"sockets": 2, "coresPerSocket": 1, "threadsPerCore": 1, "numaDistances": [[11, 21], [21, 10]]},
         f"{A}.numaDistances[0][0]: Invalid value: 11: a node's distance to itself is 10"),
        ({"sockets": 1, "coresPerSocket": 1, "threadsPerCore": 1, "cpus": 4}, f"{A}.cpus: unknown field"),
    ],
)
def test_errors_name_the_field(tmp_path: Path, topo: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        profile(tmp_path, topo)
    assert str(err.value) == message


def test_numa_nodes_must_agree_with_the_topology(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"numaNodes\[0\].cpus: Invalid value: cpuTopology puts cpus 0,2 on"):
        profile(tmp_path, {"sockets": 2, "coresPerSocket": 1, "threadsPerCore": 2},
                numaNodes=[{"id": 0, "cpus": "0-1"}])
    with pytest.raises(ConfigError, match=r"numaNodes\[0\].id: Invalid value: 5: cpuTopology has no NUMA node 5"):
        profile(tmp_path, {"sockets": 1, "coresPerSocket": 1, "threadsPerCore": 1}, numaNodes=[{"id": 5}])


def test_sysfs_topology(tmp_path: Path) -> None:
    sys_root = tmp_path / "sys"
    write(sys_root / "devices/system/cpu/online", "0-3\n")
    for cpu, (pkg, sib) in enumerate([(0, "0,2"), (1, "1,3"), (0, "0,2"), (1, "1,3")]):
        write(sys_root / f"devices/system/cpu/cpu{cpu}/topology/physical_package_id", f"{pkg}\n")
        write(sys_root / f"devices/system/cpu/cpu{cpu}/topology/thread_siblings_list", f"{sib}\n")
        write(sys_root / f"devices/system/cpu/cpu{cpu}/cache/index3/shared_cpu_list", "0,2\n" if pkg == 0 else "1,3\n")
    write(sys_root / "devices/system/node/node0/cpulist", "0,2\n")
    write(sys_root / "devices/system/node/node0/distance", "10 20\n")
    write(sys_root / "devices/system/node/node1/cpulist", "1,3\n")
    write(sys_root / "devices/system/node/node1/distance", "20 10\n")
    # every hugepage size of a node, none pre-allocated included (cadvisor's Topology[].HugePages)
    write(sys_root / "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "4\n")
    write(sys_root / "devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages", "0\n")
    facts = SystemProbe(sys_root=sys_root, proc_root=tmp_path / "proc").facts()
    assert facts.cpu_info[1] == CpuInfo(id=1, package=1, siblings=(1, 3), l3=(1, 3))
    assert facts.numa_nodes[0].distances == (10, 20)
    assert facts.numa_nodes[0].hugepages == ((2 << 20, 4), (1 << 30, 0)) and facts.numa_nodes[1].hugepages == ()
    topo = from_host(facts)
    assert topo is not None
    assert topo.cpus_in_core(1) == {1, 3} and topo.cpus_in_socket(0) == {0, 2} and topo.distance(0, 1) == 20


def test_host_without_topology_is_flat() -> None:
    host = FakeHost(cpus=(0, 1), numa_nodes=(NumaInfo(0, (0, 1), 0),))
    topo = machine_topology(NodeProfile(), host.facts(), (0, 1), ())
    assert topo.cpus_per_core() == 1 and topo.num_sockets == 1


def test_container_manager_uses_the_profile_and_checks_cpu_options(tmp_path: Path) -> None:
    agent = {"nodeProfile": {"cpuTopology": {"sockets": 2, "coresPerSocket": 2, "threadsPerCore": 2}}}
    kubelet = {"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "2"},
               "cpuManagerPolicyOptions": {"full-pcpus-only": "true"}}
    cm = manager(config(tmp_path, kubelet, agent))
    assert cm.capacity["cpu"] == 8000 and cm.cpu_manager.reserved == (0, 4)
    assert cm.cpu_manager.options.full_pcpus_only
    with pytest.raises(ConfigError) as err:
        manager(config(tmp_path, {**kubelet, "cpuManagerPolicyOptions": {"bogus": "true"}}, agent))
    assert str(err.value) == 'KubeletConfiguration.cpuManagerPolicyOptions: unknown CPU Manager Policy option: "bogus"'
    with pytest.raises(ConfigError, match=r"None policy: received unsupported options=map\[full-pcpus-only:true\]"):
        manager(config(tmp_path, {"cpuManagerPolicyOptions": {"full-pcpus-only": "true"}}, agent))


def test_container_manager_uncore_and_spread_options(tmp_path: Path) -> None:
    agent = {"nodeProfile": {"cpuTopology": {"sockets": 1, "coresPerSocket": 8, "threadsPerCore": 2,
                                             "coresPerUncoreCache": 4}}}
    kubelet = {"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "1"},
               "cpuManagerPolicyOptions": {"prefer-align-cpus-by-uncorecache": "true"}}
    cm = manager(config(tmp_path, kubelet, agent))  # beta: on by default
    assert cm.cpu_manager.options.prefer_align_by_uncore_cache and cm.topology.num_uncore_caches == 2
    spread = {**kubelet, "cpuManagerPolicyOptions": {"distribute-cpus-across-cores": "true"}}
    with pytest.raises(ConfigError) as err:
        manager(config(tmp_path, spread, agent))
    assert str(err.value) == ("KubeletConfiguration.cpuManagerPolicyOptions: CPU Manager Policy Alpha-level "
                              'Options not enabled, but option "distribute-cpus-across-cores" provided')
    gated = {**spread, "featureGates": {"CPUManagerPolicyAlphaOptions": True}}
    assert manager(config(tmp_path, gated, agent)).cpu_manager.options.distribute_cpus_across_cores
