"""classicControllers parsing (field paths in errors) and the CXL pools driver's decisions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from nodeagent.config.classic import parse_classic_controllers
from nodeagent.controlplane.classic.cxl import CxlController
from nodeagent.controlplane.classic.driver import AllocationError
from nodeagent.errors import ConfigError
from nodeagent.objects.common import node_selector_matches

ROOT = "NodeAgentConfiguration.classicControllers"


def ctrl(**pool: Any) -> dict[str, Any]:
    base = {"name": "p", "nodes": ["n1"], "devices": [{"name": "d0"}]}
    base.update(pool)
    return {"controllerName": "cxl.example.com", "pools": [base]}


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ([{"pools": [{"name": "p", "nodes": ["n1"]}]}], f"{ROOT}[0].controllerName: Required value"),
        ([{"controllerName": "Bad_Name", "pools": []}], f"{ROOT}[0].controllerName"),
        ([{"controllerName": "a.b", "pools": []}], f"{ROOT}[0].pools: Required value"),
        ([{"controllerName": "a.b", "type": "gpu", "pools": []}], f'{ROOT}[0].type: Unsupported value: "gpu"'),
        ([{**ctrl(), "extra": 1}], f'{ROOT}[0].extra: unknown field "extra"'),
        ([ctrl(nodes=[])], f"{ROOT}[0].pools[0].nodes: Required value"),
        ([ctrl(nodes=[1])], f"{ROOT}[0].pools[0].nodes[0]"),
        ([ctrl(nodes={"nodeSelectorTerms": []})], f"{ROOT}[0].pools[0].nodes.nodeSelectorTerms: Required value"),
        ([ctrl(devices=[{"name": "d0"}, {"name": "d0"}])], f"{ROOT}[0].pools[0].devices[1]: Duplicate value"),
        ([ctrl(devices=[{"name": "D 0"}])], f"{ROOT}[0].pools[0].devices[0].name"),
        ([ctrl(devices=[{"name": "d", "capacity": {"memory": "lots"}}])],
         f"{ROOT}[0].pools[0].devices[0].capacity[memory]"),
        ([ctrl(devices=[{"name": "d", "attributes": {"gen": {"int": 1, "string": "x"}}}])],
         f"{ROOT}[0].pools[0].devices[0].attributes[gen]"),
        ([ctrl(devices=[{"name": "d", "attributes": {"v": {"version": "1.x"}}}])],
         f"{ROOT}[0].pools[0].devices[0].attributes[v].version"),
        ([ctrl(), ctrl()], f'{ROOT}[1].controllerName: Duplicate value: "cxl.example.com"'),
    ],
)
def test_errors_name_the_field(raw: list[Any], path: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_classic_controllers(raw)
    assert str(err.value).startswith(path), str(err.value)


def test_parse_shapes() -> None:
    (cfg,) = parse_classic_controllers([ctrl(devices=[
        {"name": "d0", "attributes": {"model": "x", "gen": 2, "fast": True, "v": {"version": "1.2.3"}},
         "capacity": {"memory": "64Gi", "lanes": {"value": 8}}}])])
    dev = cfg.pools[0].devices[0]
    assert dict(dev.attributes) == {"model": {"string": "x"}, "gen": {"int": 2}, "fast": {"bool": True},
                                    "v": {"version": "1.2.3"}}
    assert dict(dev.capacity) == {"memory": "64Gi", "lanes": "8"}
    assert cfg.type == "cxl"


class Reader:
    def __init__(self, claims: Iterable[Mapping[str, Any]] = (), classes: Mapping[str, Any] | None = None) -> None:
        self._claims = list(claims)
        self._classes = classes or {"accel": {"spec": {}}}

    def claims(self) -> Iterable[Mapping[str, Any]]:
        return self._claims

    def node_labels(self, name: str) -> Mapping[str, str]:
        return {"zone": "z1" if name in ("n1", "n2") else "z2"}

    def device_class(self, name: str) -> Mapping[str, Any] | None:
        return self._classes.get(name)


def claim_obj(requests: list[dict[str, Any]], uid: str = "u1") -> dict[str, Any]:
    return {"kind": "ResourceClaim", "metadata": {"name": "c", "uid": uid},
            "spec": {"controllerName": "cxl.example.com", "devices": {"requests": requests}}}


def driver(reader: Reader) -> CxlController:
    (cfg,) = parse_classic_controllers([{
        "controllerName": "cxl.example.com",
        "pools": [
            {"name": "zone1", "nodes": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}]},
             "devices": [{"name": "big", "capacity": {"memory": "80Gi"}}, {"name": "small",
                                                                            "capacity": {"memory": "16Gi"}}]},
            {"name": "named", "nodes": ["n2", "n3"], "devices": [{"name": "mid", "capacity": {"memory": "40Gi"}}]},
        ],
    }])
    return CxlController(cfg, reader)


def test_selectors_first_available_and_node_selector_intersection() -> None:
    d = driver(Reader())
    big = 'device.capacity["cxl.example.com"].memory.compareTo(quantity("64Gi")) >= 0'
    claim = claim_obj([{"name": "r", "firstAvailable": [
        {"name": "huge", "deviceClassName": "accel", "selectors": [{"cel": {"expression": big}}], "count": 2},
        {"name": "two", "deviceClassName": "accel", "count": 2},
    ]}])
    assert d.unsuitable_nodes(claim, ["n1", "n2", "n3"]) == {"n3"}  # n3 reaches only "mid"
    alloc = d.allocate(claim, "n2")
    results = alloc["devices"]["results"]
    assert [(r["request"], r["pool"], r["device"]) for r in results] == [("r/two", "zone1", "big"),
                                                                         ("r/two", "zone1", "small")]
    sel = alloc["nodeSelector"]
    assert node_selector_matches(sel, "n1", {"zone": "z1"}) and not node_selector_matches(sel, "n3", {"zone": "z2"})
    # devices from both pools: usable only where both are reachable
    claim3 = claim_obj([{"name": "r", "exactly": {"deviceClassName": "accel", "count": 3}}])
    alloc3 = d.allocate(claim3, "n2")
    sel3 = alloc3["nodeSelector"]
    assert [n for n in ("n1", "n2", "n3") if node_selector_matches(sel3, n, Reader().node_labels(n))] == ["n2"]


def test_in_use_devices_come_from_claims_and_all_mode() -> None:
    taken = claim_obj([{"name": "r", "exactly": {"deviceClassName": "accel"}}], uid="other")
    taken["status"] = {"allocation": {"devices": {"results": [
        {"request": "r", "driver": "cxl.example.com", "pool": "zone1", "device": "big"}]}}}
    d = driver(Reader([taken]))
    one = claim_obj([{"name": "r", "exactly": {"deviceClassName": "accel"}}])
    assert d.allocate(one, "n1")["devices"]["results"][0]["device"] == "small"
    everything = claim_obj([{"name": "r", "exactly": {"deviceClassName": "accel", "allocationMode": "All"}}])
    with pytest.raises(AllocationError, match="1 of 2 matching devices are in use"):
        d.allocate(everything, "n1")
    missing = claim_obj([{"name": "r", "exactly": {"deviceClassName": "nope"}}])
    with pytest.raises(AllocationError, match='device class "nope" not found'):
        d.allocate(missing, "n1")
    assert d.unsuitable_nodes(one, ["n1", "n4"]) == {"n4"}  # n4 (zone z2, not named) reaches no pool
