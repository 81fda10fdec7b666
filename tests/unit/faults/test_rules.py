"""The fault model and decisions: parsing with field paths, matching, counts, probabilities, the record."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from nodeagent.config.faults import parse_timeline
from nodeagent.errors import NotFound, ValidationError
from nodeagent.faults import timeline
from nodeagent.faults.model import FaultRule, parse_rule
from nodeagent.faults.record import CallLog, format_table
from nodeagent.faults.registration import RefusingHandler
from nodeagent.faults.rules import FaultSet, plugin_from_socket
from nodeagent.pluginwatcher.model import PluginInfo
from nodeagent.util.clock import FakeClock


@pytest.mark.parametrize(("doc", "path", "text"), [
    ({"action": "explode", "method": "Allocate"}, "f.action", 'unsupported value "explode"'),
    ({"action": "fail"}, "f.method", "Required value"),
    ({"action": "fail", "method": "Alocate"}, "f.method", 'unsupported value "Alocate"'),
    ({"action": "fail", "method": "Allocate", "code": "NOPE"}, "f.code", 'unsupported value "NOPE"'),
    ({"action": "fail", "method": "Allocate", "code": "OK"}, "f.code", 'unsupported value "OK"'),
    ({"action": "delay", "method": "Allocate"}, "f.delay", "Required value"),
    ({"action": "delay", "method": "Allocate", "delay": "2 parsecs"}, "f.delay", "invalid duration"),
    ({"action": "delay", "method": "Allocate", "delay": 0}, "f.delay", "must be positive"),
    ({"action": "fail", "method": "Allocate", "delay": "1s"}, "f.delay", "only a delay rule"),
    ({"action": "delay", "method": "Allocate", "delay": "1s", "code": "INTERNAL"}, "f.code", "only a fail rule"),
    ({"action": "drop", "method": "Allocate"}, "f.method", "only a stream can be dropped"),
    ({"action": "drop", "method": "WatchPods"}, "f.method", "served by the node"),
    ({"action": "refuse", "method": "Register"}, "f.method", "leave method empty"),
    ({"action": "fail", "method": "List", "plugin": "x"}, "f.plugin", "leave plugin empty"),
    ({"action": "fail", "method": "Allocate", "count": 0}, "f.count", "at least 1"),
    ({"action": "fail", "method": "Allocate", "count": "2"}, "f.count", "expected integer"),
    ({"action": "fail", "method": "Allocate", "probability": 1.5}, "f.probability", "(0, 1]"),
    ({"action": "fail", "method": "Allocate", "colour": "red"}, "f.colour", "unknown field"),
])
def test_parse_rule_rejects_with_field_path(doc: dict[str, Any], path: str, text: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_rule(doc, "f")
    assert err.value.path == path
    assert text in str(err.value)


def test_parse_rule_defaults_and_spelling() -> None:
    rule = parse_rule({"action": "fail", "method": "Allocate", "code": "unavailable"}, "f")
    assert (rule.code, rule.message, rule.count, rule.probability) == (
        "UNAVAILABLE", "fault injected by nodeagent", None, None)
    assert rule.describe() == "fail UNAVAILABLE"
    delay = parse_rule({"action": "delay", "method": "NodePrepareResources", "delay": "1m30s"}, "f")
    assert delay.delay == 90.0 and delay.describe() == "delay 90s"
    assert parse_rule({"action": "delay", "method": "Get", "delay": "250ms"}, "f").delay == 0.25


def rule(**kw: Any) -> FaultRule:
    return parse_rule(kw, "f")


def test_count_is_spent_then_rule_leaves() -> None:
    faults = FaultSet()
    added = faults.add(rule(action="fail", method="Allocate", count=2))
    assert added.id == 1
    assert faults.match("Allocate", "example.com/gpu") == added
    assert faults.match("GetPreferredAllocation", "example.com/gpu") is None
    assert faults.list()[0].remaining == 1 and faults.list()[0].hits == 1
    assert faults.match("Allocate", "other") == added
    assert faults.match("Allocate", "example.com/gpu") is None
    assert faults.list() == []


def test_plugin_scope_and_first_match_order() -> None:
    faults = FaultSet()
    scoped = faults.add(rule(action="fail", method="NodePrepareResources", plugin="gpu.example.com", count=1))
    everyone = faults.add(rule(action="delay", method="NodePrepareResources", delay="1s"))
    assert faults.match("NodePrepareResources", "net.example.com") == everyone
    assert faults.match("NodePrepareResources", "gpu.example.com") == scoped
    assert faults.match("NodePrepareResources", "gpu.example.com") == everyone  # scoped one spent
    assert [a.rule.id for a in faults.list()] == [everyone.id]


def test_probability_uses_the_injected_random_source() -> None:
    faults = FaultSet(random.Random(7))
    faults.add(rule(action="fail", method="Allocate", probability=0.3))
    draws = random.Random(7)
    expected = [draws.random() < 0.3 for _ in range(200)]
    got = [faults.match("Allocate", "r") is not None for _ in range(200)]
    assert got == expected
    assert 30 < sum(got) < 90


def test_probability_with_count_bounds_the_picked_calls() -> None:
    faults = FaultSet(random.Random(1))
    faults.add(rule(action="fail", method="Allocate", probability=0.5, count=3))
    assert sum(faults.match("Allocate", "r") is not None for _ in range(100)) == 3


def test_refuse_and_drop_are_asked_for_separately() -> None:
    faults = FaultSet()
    dropped: list[FaultRule] = []
    faults.on_drop(dropped.append)
    refuse = faults.add(rule(action="refuse", plugin="gpu.example.com", count=1))
    drop = faults.add(rule(action="drop", method="ListAndWatch"))
    assert dropped == [drop]
    assert faults.match("ListAndWatch", "r") is None  # a drop is not a call fault
    assert faults.match("Register", "gpu.example.com") is None
    assert faults.refuses("other.example.com") is None
    assert faults.refuses("gpu.example.com") == refuse
    assert faults.refuses("gpu.example.com") is None
    assert faults.take(drop.id) and faults.take(drop.id)  # no count: never spent


def test_clear_one_or_all() -> None:
    faults = FaultSet()
    a = faults.add(rule(action="fail", method="Allocate"))
    faults.add(rule(action="fail", method="Get"))
    assert faults.clear(a.id) == 1
    with pytest.raises(NotFound, match="no fault with id 1"):
        faults.clear(a.id)
    assert faults.clear() == 1 and faults.list() == []


def test_plugin_from_socket() -> None:
    assert plugin_from_socket("/r/plugins_registry/gpu.example.com-reg.sock") == "gpu.example.com"
    assert plugin_from_socket("/r/plugins_registry/other.sock") == "other"


def test_call_log_is_bounded_and_filtered() -> None:
    log = CallLog(size=3)
    for i in range(5):
        log.add(float(i), "a" if i % 2 else "b", "Allocate", "call", duration=0.001)
    entries = log.entries()
    assert [e.seq for e in entries] == [3, 4, 5]
    assert [e.seq for e in log.entries(plugin="a")] == [4]
    assert [e.seq for e in log.entries(since=4)] == [5]
    assert [e.seq for e in log.entries(limit=1)] == [5]
    table = format_table(entries)
    assert table.splitlines()[0].split()[:4] == ["SEQ", "TIME", "PLUGIN", "METHOD"]
    assert len(table.splitlines()) == 4


class _Handler:
    def __init__(self) -> None:
        self.registered: list[str] = []

    def validate(self, info: PluginInfo) -> str | None:
        return None

    async def register(self, info: PluginInfo) -> None:
        self.registered.append(info.name)

    async def deregister(self, name: str, endpoint: str) -> None:
        pass


def test_refusing_handler_refuses_then_delegates() -> None:
    faults = FaultSet()
    faults.add(rule(action="refuse", plugin="gpu.example.com", count=1, message="not today"))
    handler = RefusingHandler(_Handler(), faults)
    info = PluginInfo(type="DRAPlugin", name="gpu.example.com", endpoint="/x", supported_versions=(),
                      socket_path="/y")
    assert handler.validate(info) == "not today: gpu.example.com"
    assert handler.validate(info) is None


@pytest.mark.parametrize(("items", "path", "text"), [
    ([{"method": "Allocate", "action": "fail"}], "faults[0].at", "Required value"),
    ([{"at": "soon", "action": "kubelet-restart"}], "faults[0].at", "invalid duration"),
    ([{"at": "1s", "action": "kubelet-restart", "count": 2}], "faults[0].count", "takes only at and action"),
    ([{"at": "1s", "action": "fail", "method": "Allocate", "code": "NOPE"}], "faults[0].code", "NOPE"),
    (["x"], "faults[0]", "expected object"),
])
def test_timeline_rejects_with_field_path(items: list[Any], path: str, text: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_timeline(items, "faults")
    assert err.value.path == path
    assert text in str(err.value)


async def test_timeline_runs_on_the_fake_clock() -> None:
    clock = FakeClock()
    faults = FaultSet()
    restarts: list[float] = []

    async def restart() -> float:
        restarts.append(clock.monotonic())
        return 0.0

    entries = parse_timeline([
        {"at": "30s", "action": "kubelet-restart"},
        {"at": "10s", "method": "Allocate", "action": "fail", "code": "UNAVAILABLE", "count": 2},
    ], "faults")
    task = asyncio.ensure_future(timeline.run(entries, clock, faults, restart))
    await asyncio.sleep(0)
    assert faults.list() == []
    await clock.wait_for_sleepers()
    clock.advance(9.9)
    await asyncio.sleep(0)
    assert faults.list() == []
    await clock.wait_for_sleepers()
    clock.advance(0.1)
    for _ in range(3):
        await asyncio.sleep(0)
    assert [(a.rule.method, a.remaining) for a in faults.list()] == [("Allocate", 2)]
    assert restarts == []
    await clock.wait_for_sleepers()
    clock.advance(20)
    await asyncio.wait_for(task, 1)
    assert restarts == [30.0]


def test_call_table_shows_human_times() -> None:
    """`nodeagent calls` prints the wall time as an RFC 3339 UTC timestamp with milliseconds,
    not the raw epoch seconds the record keeps (-o json keeps those)."""
    log = CallLog()
    log.add(1_800_000_000.25, "gpu.example.com", "NodePrepareResources", "call")
    row = format_table(log.entries()).splitlines()[1].split()
    assert row[1] == "2027-01-15T08:00:00.250Z"
    assert log.entries()[0].to_dict()["time"] == 1_800_000_000.25
