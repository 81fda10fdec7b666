"""The kubelet's cpumanager test topologies (policy_test.go), built through the profile shorthand."""

from __future__ import annotations

from nodeagent.cm.topology.discover import from_spec
from nodeagent.cm.topology.model import CPUTopology
from nodeagent.config.cputopology import INTERLEAVED, expand
from nodeagent.config.model import CpuTopologySpec


def shorthand(sockets: int, cores: int, threads: int, numa_per_socket: int = 1,
              numbering: str = "linear") -> CPUTopology:
    return from_spec(CpuTopologySpec(cores=expand(sockets, cores, threads, numa_per_socket, numbering)))


# 1 socket, 4 cores, 2 threads: cpu i and i+4 are siblings
TOPO_SINGLE_SOCKET_HT = shorthand(1, 4, 2)
# 2 sockets, 3 cores each, 2 threads, sockets interleaved: even cpus on socket 0, siblings 6 apart
TOPO_DUAL_SOCKET_HT = shorthand(2, 3, 2, numbering=INTERLEAVED)
# 2 sockets, 4 cores each, no HT: cpus 0-3 on socket 0, 4-7 on socket 1
TOPO_DUAL_SOCKET_NO_HT = shorthand(2, 4, 1)
# 2 sockets x 2 NUMA nodes x 10 cores, 2 threads (topoDualSocketMultiNumaPerSocketHT)
TOPO_DUAL_SOCKET_MULTI_NUMA_HT = shorthand(2, 20, 2, numa_per_socket=2)
