"""The sysfs view of a simulated machine: the kernel's layout and formats, for a 2-socket,
2-NUMA-node machine with hyperthreads and hugepages."""

from __future__ import annotations

import os
from pathlib import Path

from nodeagent.cm.sysfsview import NodeMemory, cpu_list, cpu_mask, render
from nodeagent.cm.topology.model import CPUInfo, CPUTopology
from nodeagent.wiring.sysfs_view import holds, write

GIB = 1 << 30
# socket s, core c (machine-wide id = its first thread), threads c and c + 4; NUMA node = socket
TOPOLOGY = CPUTopology([CPUInfo(cpu=t, core=t % 4, socket=(t % 4) // 2, numa_node=(t % 4) // 2,
                                uncore_cache=(t % 4) // 2) for t in range(8)])
MEMORY = {0: NodeMemory(16 * GIB, {2 << 20: 1 * GIB}), 1: NodeMemory(8 * GIB, {1 << 30: 2 * GIB})}


def test_formats() -> None:
    assert cpu_list([5, 0, 1, 2, 7]) == "0-2,5,7" and cpu_list([]) == ""
    assert cpu_mask([0, 1, 2, 3], 8) == "0000000f"
    assert cpu_mask([0, 33], 40) == "00000002,00000001"


def test_tree_of_the_machine() -> None:
    tree = render(TOPOLOGY, MEMORY)
    f = tree.files
    assert f["devices/system/cpu/online"] == "0-7"
    assert f["devices/system/node/online"] == "0-1"
    assert f["devices/system/node/node1/cpulist"] == "2-3,6-7"
    assert f["devices/system/node/node1/cpumap"] == "000000cc"
    assert f["devices/system/node/node0/distance"] == "10 21"
    assert f["devices/system/cpu/cpu6/topology/thread_siblings_list"] == "2,6"
    assert f["devices/system/cpu/cpu6/topology/core_id"] == "2"
    assert f["devices/system/cpu/cpu6/topology/physical_package_id"] == "1"
    assert f["devices/system/cpu/cpu6/topology/core_siblings_list"] == "2-3,6-7"
    assert f["devices/system/cpu/cpu6/cache/index3/shared_cpu_list"] == "2-3,6-7"
    assert f["devices/system/node/node0/meminfo"].splitlines()[0] == "Node 0 MemTotal:       16777216 kB"
    assert f["devices/system/node/node0/meminfo"].splitlines()[1] == "Node 0 MemFree:        15728640 kB"
    assert f["devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"] == "512"
    assert f["devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages"] == "0"
    assert f["devices/system/node/node1/hugepages/hugepages-1048576kB/nr_hugepages"] == "2"
    assert tree.links["devices/system/node/node1/cpu7"] == "../../cpu/cpu7"
    assert tree.links["bus/node/devices/node1"] == "../../../devices/system/node/node1"
    assert tree.links["devices/system/cpu/cpu7/node1"] == "../../node/node1"


def test_written_tree_resolves_and_replaces_the_previous_one(tmp_path: Path) -> None:
    root = tmp_path / "host" / "sys"
    write(root, render(CPUTopology([CPUInfo(cpu=c, core=c, socket=0, numa_node=0) for c in range(16)]),
                       {0: NodeMemory(GIB, {})}))
    assert (root / "devices/system/cpu/cpu15").is_dir()
    write(root, render(TOPOLOGY, MEMORY))  # a machine with fewer cpus: nothing of the first one lingers
    assert not (root / "devices/system/cpu/cpu15").exists()
    assert (root / "bus/node/devices/node1/cpulist").read_text() == "2-3,6-7\n"
    assert (root / "devices/system/node/node0/cpu4/topology/core_id").read_text() == "0\n"
    assert sorted(os.listdir(tmp_path / "host")) == ["sys"]


def test_a_restart_keeps_an_unchanged_tree_and_replaces_a_changed_one(tmp_path: Path) -> None:
    """The same machine at the next start: the tree on disk is kept (not rebuilt: issue 25's restart to
    ready), but a file changed, removed or added by hand, or a link moved, has it built again."""
    root = tmp_path / "host" / "sys"
    view = render(TOPOLOGY, MEMORY)
    assert write(root, view)
    assert holds(root, view)
    first = root.stat().st_ino
    assert not write(root, view)  # kept: the start logs "kept (unchanged)", not "written"
    assert root.stat().st_ino == first
    cpulist = root / "bus/node/devices/node1/cpulist"
    for change in (lambda: cpulist.write_text("0\n"), cpulist.unlink, lambda: (root / "stray").write_text("x"),
                   lambda: (root / "devices/system/cpu/cpu0/node0").unlink()):
        change()
        assert not holds(root, view)
        before = root.stat().st_ino
        assert write(root, view)
        assert root.stat().st_ino != before and holds(root, view)
        assert cpulist.read_text() == "2-3,6-7\n"
    assert sorted(os.listdir(tmp_path / "host")) == ["sys"]
