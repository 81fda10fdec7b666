"""Services through the registry: upstream's defaults, cluster-IP and node-port allocation from
the default ranges, allocated values kept on update, the status subresource, and
ValidateService's messages (pkg/apis/core/validation)."""

from __future__ import annotations

import ipaddress
import random
from typing import Any

import pytest

from nodeagent.apiserver.options import WriteOptions
from nodeagent.apiserver.registry import MERGE_PATCH, Registry
from nodeagent.errors import ValidationError
from nodeagent.objects import service as svcmod
from nodeagent.store import ObjectStore
from nodeagent.store.kinds import builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.unit.corekinds.conftest import failure, res

SVC = res("services")
W = WriteOptions()


def svc(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def test_cluster_ip_service_defaults_and_allocation(reg: Registry) -> None:
    made = reg.create(SVC, "default", svc("web", selector={"app": "web"}), W).object
    spec = made["spec"]
    ip = ipaddress.ip_address(spec["clusterIP"])
    assert ip in svcmod.SERVICE_CIDR and spec["clusterIPs"] == [spec["clusterIP"]]
    assert int(ip) - int(svcmod.SERVICE_CIDR.network_address) > 16  # dynamic picks: the upper band first
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert (spec["type"], spec["sessionAffinity"], spec["internalTrafficPolicy"]) == ("ClusterIP", "None", "Cluster")
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    assert "externalTrafficPolicy" not in spec and made["status"] == {"loadBalancer": {}}


def test_node_port_and_load_balancer(reg: Registry) -> None:
    spec = reg.create(SVC, "default", svc("np", type="NodePort"), W).object["spec"]
    assert spec["ports"][0]["nodePort"] in svcmod.NODE_PORTS and spec["externalTrafficPolicy"] == "Cluster"
    lb = reg.create(SVC, "default", svc("lb", type="LoadBalancer", externalTrafficPolicy="Local"), W).object["spec"]
    assert lb["allocateLoadBalancerNodePorts"] is True and lb["healthCheckNodePort"] in svcmod.NODE_PORTS
    taken = spec["ports"][0]["nodePort"]
    err = failure(lambda: reg.create(SVC, "default", svc("np2", type="NodePort", ports=[
        {"port": 80, "nodePort": taken}]), W))
    assert err.code == 422 and err.message == (
        f'Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: {taken}: provided port is already allocated')


def test_headless_and_external_name(reg: Registry) -> None:
    headless = reg.create(SVC, "default", svc("hl", clusterIP="None"), W).object["spec"]
    assert headless["clusterIPs"] == ["None"]
    assert (headless["ipFamilyPolicy"], headless["ipFamilies"]) == ("RequireDualStack", ["IPv4", "IPv6"])
    selected = reg.create(SVC, "default", svc("hl2", clusterIP="None", selector={"a": "b"}), W).object["spec"]
    assert (selected["ipFamilyPolicy"], selected["ipFamilies"]) == ("SingleStack", ["IPv4"])
    ext = reg.create(SVC, "default", svc("ext", type="ExternalName", externalName="example.com", ports=[]),
                     W).object["spec"]
    assert "clusterIP" not in ext and "ipFamilies" not in ext


def test_a_requested_ip_is_taken_once(reg: Registry) -> None:
    reg.create(SVC, "default", svc("a", clusterIP="10.0.0.10"), W)
    err = failure(lambda: reg.create(SVC, "default", svc("b", clusterIP="10.0.0.10"), W))
    assert err.message == ('Service "b" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.10"]: failed to '
                           "allocate IP 10.0.0.10: provided IP is already allocated")
    err = failure(lambda: reg.create(SVC, "default", svc("c", clusterIP="10.1.0.10"), W))
    assert err.message.endswith("failed to allocate IP 10.1.0.10: the provided network does not match the current "
                                "range")


def test_update_keeps_what_was_allocated_and_refuses_a_changed_ip(reg: Registry) -> None:
    made = reg.create(SVC, "default", svc("keep", type="NodePort"), W).object
    body = svc("keep", type="NodePort")
    body["metadata"]["resourceVersion"] = made["metadata"]["resourceVersion"]
    again = reg.update(SVC, "default", "keep", "", body, W).object["spec"]
    assert again["clusterIP"] == made["spec"]["clusterIP"]
    assert again["ports"][0]["nodePort"] == made["spec"]["ports"][0]["nodePort"]
    other = "10.0.0.98" if made["spec"]["clusterIP"] == "10.0.0.99" else "10.0.0.99"  # allocated at random
    err = failure(lambda: reg.patch(SVC, "default", "keep", "", MERGE_PATCH,
                                    {"spec": {"clusterIP": other, "clusterIPs": [other]}}, W))
    assert err.message == (f'Service "keep" is invalid: spec.clusterIPs[0]: Invalid value: ["{other}"]: may not '
                           "change once set")


def test_status_subresource(reg: Registry) -> None:
    reg.create(SVC, "default", svc("st", type="LoadBalancer"), W)
    status = {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}
    written = reg.patch(SVC, "default", "st", "status", MERGE_PATCH, {"status": status, "spec": {"type": "ClusterIP"}},
                        W).object
    assert written["status"]["loadBalancer"]["ingress"][0]["ip"] == "192.0.2.1"
    assert written["spec"]["type"] == "LoadBalancer"
    kept = reg.patch(SVC, "default", "st", "", MERGE_PATCH, {"status": {"loadBalancer": {}}}, W).object
    assert kept["status"]["loadBalancer"]["ingress"][0]["ip"] == "192.0.2.1"


def test_validation_messages(reg: Registry) -> None:
    cases = [
        (svc("noports", ports=[]), "spec.ports: Required value"),
        (svc("two", ports=[{"port": 80}, {"port": 81}]),
         "[spec.ports[0].name: Required value, spec.ports[1].name: Required value]"),
        (svc("range", ports=[{"port": 70000}]),
         "[spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive, "
         "spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive]"),
        (svc("proto", ports=[{"port": 80, "protocol": "ICMP"}]),
         'spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'),
        (svc("kind", type="Magic"), 'spec.type: Unsupported value: "Magic": supported values: "ClusterIP", '
         '"ExternalName", "LoadBalancer", "NodePort"'),
        (svc("tp", ports=[{"port": 80, "targetPort": "x--y"}]),
         'spec.ports[0].targetPort: Invalid value: "x--y": must not contain consecutive hyphens'),
        (svc("npc", ports=[{"port": 80, "nodePort": 30001}]),
         "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"),
        (svc("ext", type="ExternalName", ports=[]), "spec.externalName: Required value"),
        (svc("Bad_Name"), 'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of '
         "lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
         "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
        (svc("etp", externalTrafficPolicy="Local"),
         'spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services'),
    ]
    for body, message in cases:
        err = failure(lambda body=body: reg.create(SVC, "default", body, W))  # type: ignore[misc]
        name = body["metadata"]["name"]
        assert (err.code, err.message) == (422, f'Service "{name}" is invalid: {message}'), name


def test_allocation_fills_the_lower_band_last_and_then_refuses() -> None:
    """A /28 has 14 hosts and no lower band (size <= 16): all 14 are handed out, then the range is full."""
    alloc = svcmod.Allocator(ipaddress.IPv4Network("10.9.0.0/28"), rng=random.Random(7))
    kinds = builtin_kinds().with_hooks(svcmod.hooks(alloc))
    store = ObjectStore.memory(kinds, FakeClock())
    ips = {store.create(svc(f"s{i}"))["spec"]["clusterIP"] for i in range(14)}
    assert len(ips) == 14
    with pytest.raises(ValidationError, match="range is full"):
        store.create(svc("full"))


EP = res("endpoints")


def test_endpoints(reg: Registry) -> None:
    body = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
            "subsets": [{"addresses": [{"ip": "10.1.0.5"}, {"ip": "10.1.0.6"}], "ports": [{"port": 8080}]}]}
    made = reg.create(EP, "default", body, W).object
    assert made["subsets"][0]["ports"] == [{"port": 8080, "protocol": "TCP"}]
    bad = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "bad"},
           "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": 80}, {"port": 81, "name": "b"}]},
                       {"ports": [{"port": 80}]}]}
    err = failure(lambda: reg.create(EP, "default", bad, W))
    assert err.message == (
        'Endpoints "bad" is invalid: [subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the '
        "loopback range (127.0.0.0/8, ::1/128), subsets[0].ports[0].name: Required value, subsets[1]: Required "
        "value: must specify `addresses` or `notReadyAddresses`]")
