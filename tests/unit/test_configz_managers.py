"""/configz renders the resource managers' KubeletConfiguration fields (issue 13), omitempty as v1beta1."""

from __future__ import annotations

from nodeagent.config.kubelet import parse_kubelet, render_kubelet

DOC = {
    "kind": "KubeletConfiguration",
    "cpuManagerPolicy": "static",
    "kubeReserved": {"cpu": "1", "memory": "1Gi"},
    "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
    "topologyManagerPolicy": "restricted",
    "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"},
    "memoryManagerPolicy": "Static",
    "reservedMemory": [{"numaNode": 1, "limits": {"memory": "512Mi"}},
                       {"numaNode": 0, "limits": {"memory": "612Mi", "hugepages-2Mi": "4Mi"}}],
    "podsPerCore": 10,
    "evictionHard": {"memory.available": "100Mi"},
}


def test_manager_fields_rendered_and_parse_back() -> None:
    k = parse_kubelet(DOC)
    out = render_kubelet(k)
    assert out["memoryManagerPolicy"] == "Static"
    assert out["cpuManagerPolicyOptions"] == {"full-pcpus-only": "true"}
    assert out["topologyManagerPolicyOptions"] == {"prefer-closest-numa-nodes": "true"}
    assert out["reservedMemory"] == [
        {"numaNode": 0, "limits": {"hugepages-2Mi": "4Mi", "memory": "612Mi"}},
        {"numaNode": 1, "limits": {"memory": "512Mi"}},
    ]
    assert out["podsPerCore"] == 10
    again = parse_kubelet({"kind": "KubeletConfiguration", **out})
    assert (again.reserved_memory, again.pods_per_core, again.memory_manager_policy) == (
        k.reserved_memory, 10, "Static")
    assert again.cpu_manager_policy_options == k.cpu_manager_policy_options
    assert again.topology_manager_policy_options == k.topology_manager_policy_options


def test_empty_manager_fields_are_omitted() -> None:
    out = render_kubelet(parse_kubelet({"kind": "KubeletConfiguration"}))
    assert out["memoryManagerPolicy"] == "None"
    for name in ("cpuManagerPolicyOptions", "topologyManagerPolicyOptions", "reservedMemory", "podsPerCore"):
        assert name not in out
