"""The issue's end-to-end case: a Guaranteed pod with exclusive CPUs, memory and a device under
single-numa-node gets all three on one NUMA node, and pod-resources (over its real socket, with
grpcurl) shows the cpu ids, the memory block and the device topology of that node.

Node: NUMA 0 = cpus 0-3, NUMA 1 = cpus 4-7, 16Gi each (the suite's profile); cpu 0 reserved;
kubeReserved + systemReserved + memory.available = 2148Mi, all reserved on NUMA 0; the fake
plugin's GPUs: gpu-0, gpu-1 on NUMA 0, gpu-2, gpu-3 on NUMA 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import running_daemon, wait_for
from tests.integration.test_devices_e2e import GPU, NUMA, agent, apply, call, registered, settled

pytestmark = [pytest.mark.integration]

MI = 2**20
KUBELET = {
    "cpuManagerPolicy": "static",
    "reservedSystemCPUs": "0",
    "topologyManagerPolicy": "single-numa-node",
    "memoryManagerPolicy": "Static",
    "kubeReserved": {"cpu": "500m", "memory": "1Gi"},
    "systemReserved": {"cpu": "500m", "memory": "1Gi"},
    "evictionHard": {"memory.available": "100Mi"},
    "reservedMemory": [{"numaNode": 0, "limits": {"memory": "2148Mi"}}],
}


def guaranteed(name: str, cpu: str, memory: str, gpus: int) -> str:
    res = {"cpu": cpu, "memory": memory, GPU: gpus}
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": "test-node",
                 "containers": [{"name": "main", "image": "pause", "resources": {"requests": res, "limits": res}}]},
    })


def container(body: Any, name: str) -> Any:
    return next(p for p in body["pod_resources"] if p["name"] == name)["containers"][0]


def nodes(entry: Any) -> list[int]:
    return [int(n.get("ID", 0)) for n in entry.get("topology", {}).get("nodes", [])]


def test_cpus_memory_and_device_on_one_numa_node(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        registered(d)
        allocatable = call(d, d.pod_resources, "v1.PodResourcesLister/GetAllocatableResources")
        assert [(m["memory_type"], int(m["size"]), nodes(m)) for m in allocatable["memory"]] == [
            ("memory", 16 * 1024 * MI - 2148 * MI, [0]), ("memory", 16 * 1024 * MI, [1])]

        apply(d, guaranteed("aligned", "2", "1Gi", 1))
        assert settled(d, "aligned")["status"]["phase"] == "Running"
        c = wait_for(lambda: (b := call(d, d.pod_resources, "v1.PodResourcesLister/List"))
                     and container(b, "aligned").get("memory") and container(b, "aligned"), what="blocks listed")
        assert len(c["cpu_ids"]) == 2 and {int(i) for i in c["cpu_ids"]} <= {1, 2, 3}
        assert [(m["memory_type"], int(m["size"]), nodes(m)) for m in c["memory"]] == [("memory", 1024 * MI, [0])]
        (dev,) = c["devices"]
        assert NUMA[dev["device_ids"][0]] == 0 and nodes(dev) == [0]

        # A container no single NUMA node can hold the memory of is refused under single-numa-node.
        apply(d, guaranteed("too-wide", "1", "20Gi", 0))
        refused = settled(d, "too-wide")["status"]
        assert (refused["phase"], refused["reason"]) == ("Failed", "TopologyAffinityError")
