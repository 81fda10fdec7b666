"""The NodePorts filter (placement.host_ports_of, ports_conflict): upstream's util.GetHostPorts and
HostPortInfo.CheckConflict, and the scheduler cache's count of the ports its pods hold."""

from __future__ import annotations

from typing import Any

from nodeagent.controlplane.scheduler import placement
from nodeagent.controlplane.scheduler.placement import NO_FREE_PORTS, HostPort, ports_conflict

P = HostPort


def _spec(*ports: dict[str, Any], sidecar: list[dict[str, Any]] | None = None,
          init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "ports": list(ports)}]}
    inits = []
    if sidecar is not None:
        inits.append({"name": "s", "restartPolicy": "Always", "ports": sidecar})
    if init is not None:
        inits.append({"name": "i", "ports": init})
    if inits:
        spec["initContainers"] = inits
    return spec


def test_host_ports_of_sanitises_and_skips_plain_init_containers() -> None:
    spec = _spec({"containerPort": 80, "hostPort": 8080}, {"containerPort": 81},
                 {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"},
                 sidecar=[{"containerPort": 90, "hostPort": 9090}], init=[{"containerPort": 70, "hostPort": 7070}])
    assert placement.host_ports_of(spec) == (P("0.0.0.0", "TCP", 9090), P("0.0.0.0", "TCP", 8080),
                                             P("10.0.0.1", "UDP", 53))


def test_conflicts_as_check_conflict() -> None:
    used = {P("10.0.0.1", "TCP", 80): 1, P("0.0.0.0", "UDP", 53): 1}
    assert ports_conflict([P("0.0.0.0", "TCP", 80)], used)  # any address holding it
    assert ports_conflict([P("10.0.0.1", "TCP", 80)], used)  # the same address
    assert not ports_conflict([P("10.0.0.2", "TCP", 80)], used)  # another address
    assert ports_conflict([P("10.0.0.2", "UDP", 53)], used)  # 0.0.0.0 holds it for every address
    assert not ports_conflict([P("0.0.0.0", "TCP", 53)], used)  # another protocol
    assert not ports_conflict([P("0.0.0.0", "SCTP", 80)], used)


def test_reason_follows_affinity_and_uses_the_nodes_ports() -> None:
    pod = {"spec": {**_spec({"containerPort": 80, "hostPort": 8080}), "nodeSelector": {"a": "b"}}}
    place = placement.placement_of(pod)
    used = {P("0.0.0.0", "TCP", 8080): 1}
    assert place.reason("n", {}, (), False, used) == placement.AFFINITY_MISMATCH
    assert place.reason("n", {"a": "b"}, (), False, used) == NO_FREE_PORTS
    assert place.reason("n", {"a": "b"}, (), False, {}) is None
    assert placement.placement_of({"spec": _spec({"containerPort": 80})}) is placement.NONE
    # the ports are part of the equivalence key
    other = placement.placement_of({"spec": {**_spec({"containerPort": 80, "hostPort": 8081}),
                                             "nodeSelector": {"a": "b"}}})
    assert other.key != place.key
