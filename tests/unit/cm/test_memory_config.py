"""KubeletConfiguration fields of the memory and topology managers and podsPerCore: parsed and
refused as the kubelet does (reservedMemory duplicates, topologyManagerPolicyOptions names
and values, memoryManagerPolicy spelling)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.config.kubelet import parse_kubelet
from nodeagent.errors import ConfigError

BASE = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}


def parse(**fields: Any) -> Any:
    return parse_kubelet({**BASE, **fields})


def test_parsed() -> None:
    k = parse(memoryManagerPolicy="Static", podsPerCore=10,
              reservedMemory=[{"numaNode": 0, "limits": {"memory": "1Gi", "hugepages-2Mi": "4Mi"}},
                              {"numaNode": 1, "limits": {"memory": "100Mi"}}],
              topologyManagerPolicyOptions={"prefer-closest-numa-nodes": "true", "max-allowable-numa-nodes": "16"})
    assert k.memory_manager_policy == "Static" and k.pods_per_core == 10
    assert k.reserved_memory == {0: {"memory": 2**30, "hugepages-2Mi": 4 * 2**20}, 1: {"memory": 100 * 2**20}}
    assert k.topology_manager_policy_options == {"prefer-closest-numa-nodes": "true",
                                                 "max-allowable-numa-nodes": "16"}
    assert parse().memory_manager_policy == "None"


@pytest.mark.parametrize(("fields", "message"), [
    ({"memoryManagerPolicy": "static"}, "memoryManagerPolicy"),
    ({"podsPerCore": -1}, "podsPerCore"),
    ({"reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}, {"numaNode": 0, "limits": {"memory": "1Gi"}}]},
     'invalid configuration: the reserved memory has a duplicate value for NUMA node 0 and resource "memory"'),
    ({"reservedMemory": [{"numaNode": 0, "limits": {"cpu": "1"}}]}, "memory type must be memory or hugepages"),
    ({"reservedMemory": [{"numaNode": 0, "limits": {"memory": "lots"}}]}, r"reservedMemory\[0\]\.limits"),
    ({"topologyManagerPolicyOptions": {"made-up": "true"}},
     'bad option "made-up": unknown Topology Manager Policy option: "made-up"'),
    ({"topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "yes"}},
     'strconv.ParseBool: parsing "yes": invalid syntax'),
    ({"topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "4"}},
     'the minimum value of "max-allowable-numa-nodes" should not be less than 8'),
])
def test_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(**fields)
