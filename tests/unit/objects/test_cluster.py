"""PodDisruptionBudget, PriorityClass and EndpointSlice admission (store hooks): upstream's defaults,
field paths and texts; the system PriorityClasses as kube-apiserver creates them."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects import cluster
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock


@pytest.fixture
def store() -> Any:
    s = ObjectStore.memory(builtin_kinds().with_hooks(cluster.hooks()), FakeClock())
    yield s
    s.close()


def pdb(name: str = "budget", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": spec}


def pc(name: str = "high", value: int = 1000, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **fields}


def slice_(name: str = "svc-abc", address_type: str = "IPv4", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": name},
            "addressType": address_type, **fields}


def ep(*addresses: str, **fields: Any) -> dict[str, Any]:
    return {"addresses": list(addresses), **fields}


@pytest.mark.parametrize(
    ("obj", "text"),
    [
        (pdb(minAvailable=1, maxUnavailable=1),
         'spec: Invalid value: {"MinAvailable":1,"Selector":null,"MaxUnavailable":1,"UnhealthyPodEvictionPolicy":null}'
         ": minAvailable and maxUnavailable cannot be both set"),
        (pdb(minAvailable="50"), 'spec.minAvailable: Invalid value: "50": a valid percent string must be'),
        (pdb(maxUnavailable="150%"), 'spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%'),
        (pdb(minAvailable=-1), "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"),
        (pdb(selector={"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["a"]}]}),
         "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists'"),
        (pdb(unhealthyPodEvictionPolicy="Sometimes"),
         'spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": supported values: "AlwaysAllow", '
         '"IfHealthyBudget"'),
        (pc(value=1_000_000_001), "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"),
        (pc("system-mine"), "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for "
                            "system use only. error: system-mine is not a known system priority class"),
        (pc("system-node-critical", 5), "error: value of system-node-critical PriorityClass must be 2000001000"),
        (pc(preemptionPolicy="Always"), 'preemptionPolicy: Unsupported value: "Always": supported values: '
                                        '"PreemptLowerPriority", "Never"'),
        (slice_(address_type="IPX"), 'addressType: Unsupported value: "IPX": supported values: "FQDN", "IPv4", "IPv6"'),
        (slice_(endpoints=[ep()]), "endpoints[0].addresses: Required value: must contain at least 1 address"),
        (slice_(endpoints=[ep("10.0.0.300")]), 'endpoints[0].addresses[0]: Invalid value: "10.0.0.300": must be a '
                                               "valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
        (slice_(endpoints=[ep("fd00::1")]),
         'endpoints[0].addresses: Invalid value: "fd00::1": must be an IPv4 address'),
        (slice_(endpoints=[ep("127.0.0.1")]), 'endpoints[0].addresses[0]: Invalid value: "127.0.0.1": may not be in '
                                              "the loopback range (127.0.0.0/8, ::1/128)"),
        (slice_(ports=[{"port": 80, "protocol": "HTTP"}]),
         'ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"'),
        (slice_(ports=[{"port": 80}, {"port": 81}]), 'ports[1].name: Duplicate value: ""'),
        (slice_(endpoints=[ep("10.0.0.1", hostname="Web_1")]), 'endpoints[0].hostname: Invalid value: "Web_1"'),
    ],
)
def test_refused_with_upstreams_path_and_text(store: ObjectStore, obj: dict[str, Any], text: str) -> None:
    with pytest.raises(ValidationError) as err:
        store.create(obj)
    assert text in str(err.value)
    assert store.list(obj["kind"]) == []


def test_defaults_and_status_zeroes(store: ObjectStore) -> None:
    budget = store.create(pdb(minAvailable="50%", selector={"matchLabels": {"app": "web"}}))
    assert budget["status"] == {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    assert store.create(pc())["preemptionPolicy"] == "PreemptLowerPriority"
    es = store.create(slice_(endpoints=[ep("10.0.0.1")], ports=[{"port": 80}]))
    assert es["ports"] == [{"port": 80, "name": "", "protocol": "TCP"}]


def test_immutable_fields(store: ObjectStore) -> None:
    klass = store.create(pc())
    klass["value"] = 5
    with pytest.raises(ValidationError, match=r"value: Forbidden: may not be changed in an update\."):
        store.update(klass)
    es = store.create(slice_(endpoints=[ep("10.0.0.1")]))
    es["addressType"] = "IPv6"
    es["endpoints"] = [ep("fd00::1")]
    with pytest.raises(ValidationError, match='addressType: Invalid value: "IPv6": field is immutable'):
        store.update(es)


def test_system_priority_classes_pass_validation(store: ObjectStore) -> None:
    for klass in cluster.system_priority_classes():
        store.create(klass)
    values = {c["metadata"]["name"]: c["value"] for c in store.list("PriorityClass")}
    assert values == {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
