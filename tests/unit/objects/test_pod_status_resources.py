"""What generateAPIPodStatus adds to a pod's status beyond its own state: hostIP(s), the pod's and
its containers' resources and allocatedResources (kubelet_pods.go, InPlacePodVerticalScaling GA)."""

from __future__ import annotations

from typing import Any

from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.objects.pod.output import status_to_json
from nodeagent.objects.pod.status_resources import add_generated, host_ips
from nodeagent.pods import resources as pr
from nodeagent.pods import status as st
from nodeagent.util.clock import FakeClock


def _pod(spec: dict[str, Any]) -> Any:
    meta = {"name": "p", "namespace": "ns", "uid": "u"}
    return pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}, clock=FakeClock())


def _generated(pod: Any, status: Any, ips: tuple[str, ...] = ("10.0.0.5",)) -> dict[str, Any]:
    return add_generated(status_to_json(pod, status), pod, requests=pr.pod_requests(pod), limits=pr.pod_limits(pod),
                         node_ips=ips)


def test_running_pod_reports_spec_resources_and_the_node_ip() -> None:
    pod = _pod({"initContainers": [{"name": "init", "image": "i", "resources": {"requests": {"example.com/gpu": "1"},
                                                                                "limits": {"example.com/gpu": "1"}}}],
                "containers": [{"name": "main", "image": "m", "resources": {
                    "requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"},
                    "claims": [{"name": "a"}]}},
                    {"name": "plain", "image": "m"}],
                "resourceClaims": [{"name": "a", "resourceClaimName": "c"}]})
    doc = _generated(pod, st.running_status(pod, "Burstable", 1.0))
    assert (doc["hostIP"], doc["hostIPs"]) == ("10.0.0.5", [{"ip": "10.0.0.5"}])
    assert doc["resources"] == {"limits": {"cpu": "200m", "example.com/gpu": "1", "memory": "64Mi"},
                                "requests": {"cpu": "100m", "example.com/gpu": "1", "memory": "32Mi"}}
    assert doc["allocatedResources"] == {"cpu": "100m", "example.com/gpu": "1", "memory": "32Mi"}
    main, plain = doc["containerStatuses"]
    assert main["resources"] == {"limits": {"cpu": "200m", "memory": "64Mi"},
                                 "requests": {"cpu": "100m", "memory": "32Mi"}, "claims": [{"name": "a"}]}
    assert main["allocatedResources"] == {"cpu": "100m", "memory": "32Mi"}
    assert plain["resources"] == {} and "allocatedResources" not in plain
    (init,) = doc["initContainerStatuses"]
    assert init["resources"] == {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}
    # a completed init container is ready (prober_manager: terminated with exit code 0)
    assert (init["ready"], init["started"]) == (True, False)


def test_sums_keep_the_first_quantity_format() -> None:
    pod = _pod({"containers": [{"name": "a", "image": "m", "resources": {"requests": {"memory": "1Gi", "cpu": "1"}}},
                               {"name": "b", "image": "m", "resources": {"requests": {"memory": "512Mi",
                                                                                      "cpu": "500m"}}}]})
    doc = _generated(pod, st.running_status(pod, "Burstable", 1.0))
    assert doc["resources"] == {"requests": {"cpu": "1500m", "memory": "1536Mi"}}


def test_rejected_and_waiting_containers_get_none() -> None:
    """A rejected pod never went through generateAPIPodStatus; a container that was never created
    has no resources in its status."""
    pod = _pod({"containers": [{"name": "main", "image": "m", "resources": {"requests": {"cpu": "1"}}}]})
    rejected = _generated(pod, st.rejected_status("Burstable", "OutOfcpu", "no", 1.0))
    assert not {"hostIP", "hostIPs", "resources", "allocatedResources"} & rejected.keys()
    pending = _generated(pod, st.pending_status(pod, "Burstable", "", 1.0))
    assert pending["resources"] == {"requests": {"cpu": "1"}} and pending["hostIP"] == "10.0.0.5"
    assert "resources" not in pending["containerStatuses"][0]


def test_host_ips_as_get_node_host_ips() -> None:
    addresses = [{"type": "Hostname", "address": "n"}, {"type": "ExternalIP", "address": "2001:db8::1"},
                 {"type": "InternalIP", "address": "10.0.0.5"}, {"type": "InternalIP", "address": "10.0.0.6"}]
    assert host_ips(addresses) == ("10.0.0.5", "2001:db8::1")
    assert host_ips([{"type": "Hostname", "address": "n"}]) == ()


def test_the_fields_follow_the_node_release() -> None:
    """The kubelet of each release writes what its gates allow: containers' resources/allocatedResources
    under InPlacePodVerticalScaling (on from 1.33: every release nodeagent emulates), the pod's under
    InPlacePodLevelResourcesVerticalScaling (alpha in 1.35, on from 1.36; kubelet_pods.go
    generateAPIPodStatus, convertToAPIContainerStatuses)."""
    from nodeagent.objects.pod.status_resources import GATE_CONTAINER_RESOURCES, GATE_POD_RESOURCES
    from tests.unit.test_config_versions import load

    pod = _pod({"containers": [{"name": "main", "image": "m", "resources": {"requests": {"cpu": "100m"}}}]})
    status = st.running_status(pod, "Burstable", 1.0)
    seen = {}
    for version in ("1.34", "1.35", "1.36", "1.37"):  # the releases nodeagent emulates
        gate = load(version).kubelet.gate
        doc = add_generated(status_to_json(pod, status), pod, requests=pr.pod_requests(pod),
                            limits=pr.pod_limits(pod), node_ips=("10.0.0.5",),
                            container_resources=gate(GATE_CONTAINER_RESOURCES), pod_level=gate(GATE_POD_RESOURCES))
        seen[version] = ("resources" in doc, "allocatedResources" in doc["containerStatuses"][0], doc["hostIP"])
    assert seen == {"1.34": (False, True, "10.0.0.5"),
                    "1.35": (False, True, "10.0.0.5"), "1.36": (True, True, "10.0.0.5"),
                    "1.37": (True, True, "10.0.0.5")}
    off = add_generated(status_to_json(pod, status), pod, requests=pr.pod_requests(pod), limits=pr.pod_limits(pod),
                        node_ips=(), container_resources=False, pod_level=False)
    assert "resources" not in off and "resources" not in off["containerStatuses"][0]
