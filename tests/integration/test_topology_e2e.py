"""The machine topology end to end: a profile shorthand (2 sockets x 4 cores x 2 threads), the
static CPU manager with full-pcpus-only and the topology manager's single-numa-node policy,
observed over pod-resources (grpcurl on its real socket) and the pods' status.

Node: NUMA 0 = socket 0 = cpus 0-3 + siblings 8-11, NUMA 1 = socket 1 = cpus 4-7 + 12-15;
reserved cpus 0 and 8 (one whole core); the fake plugin's GPUs: gpu-0, gpu-1 on NUMA 0,
gpu-2, gpu-3 on NUMA 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import running_daemon
from tests.integration.test_devices_e2e import GPU, NUMA, agent, apply, call, registered, settled
from tests.integration.test_memory_e2e import container, nodes

pytestmark = [pytest.mark.integration]

KUBELET = {
    "cpuManagerPolicy": "static",
    "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
    "kubeReserved": {"cpu": "1", "memory": "1Gi"},
    "systemReserved": {"cpu": "1", "memory": "1Gi"},
    "topologyManagerPolicy": "single-numa-node",
}
PROFILE = {
    "capacity": {"memory": "32Gi", "ephemeral-storage": "100Gi"},
    "cpuTopology": {"sockets": 2, "coresPerSocket": 4, "threadsPerCore": 2},
    "numaNodes": [{"id": 0, "memory": "16Gi"}, {"id": 1, "memory": "16Gi"}],
}


def guaranteed(name: str, cpu: str, gpus: int) -> str:
    res = {"cpu": cpu, "memory": "1Gi", **({GPU: gpus} if gpus else {})}
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": "test-node",
                 "containers": [{"name": "main", "image": "pause", "resources": {"requests": res, "limits": res}}]},
    })


def listed(d: Any, name: str) -> Any:
    return container(call(d, d.pod_resources, "v1.PodResourcesLister/List"), name)


def test_profile_topology_cpu_and_topology_managers(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, {**agent(short_dir), "nodeProfile": PROFILE}) as d:
        registered(d)
        allocatable = call(d, d.pod_resources, "v1.PodResourcesLister/GetAllocatableResources")
        assert sorted(int(c) for c in allocatable["cpu_ids"]) == [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15]

        # Two GPUs: only NUMA 0 or NUMA 1 holds both; the narrowest lower mask wins (NUMA 0),
        # and the 2 cpus are one whole core there (the accumulator fills socket 0's used side).
        apply(d, guaranteed("first", "2", 2))
        assert settled(d, "first")["status"]["phase"] == "Running"
        first = listed(d, "first")
        assert sorted(NUMA[i] for dev in first["devices"] for i in dev["device_ids"]) == [0, 0]
        assert sorted(int(c) for c in first["cpu_ids"]) == [1, 9]

        # The next pod's GPU can only be on NUMA 1: its cpus follow it there.
        apply(d, guaranteed("second", "2", 1))
        assert settled(d, "second")["status"]["phase"] == "Running"
        second = listed(d, "second")
        (dev,) = second["devices"]
        assert nodes(dev) == [1]
        assert sorted(int(c) for c in second["cpu_ids"]) == [4, 12]

        # full-pcpus-only: an odd request is refused with the CPU manager's reason and message.
        apply(d, guaranteed("odd", "3", 0))
        status = settled(d, "odd")["status"]
        assert (status["phase"], status["reason"]) == ("Failed", "SMTAlignmentError")
        assert status["message"] == ("Pod was rejected: SMT Alignment Error: requested 3 cpus not multiple "
                                     "cpus per core = 2")

        # No GPU left on either node for two more: the topology manager refuses, nothing stays held.
        apply(d, guaranteed("greedy", "2", 2))
        status = settled(d, "greedy")["status"]
        assert (status["phase"], status["reason"]) == ("Failed", "TopologyAffinityError")
        assert status["message"] == "Pod was rejected: Resources cannot be allocated with Topology locality"
        after = call(d, d.pod_resources, "v1.PodResourcesLister/List")
        assert all(p["name"] != "greedy" or not p["containers"][0].get("cpu_ids") for p in after["pod_resources"])
