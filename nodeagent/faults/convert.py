"""nodeagent.v1 Faults messages <-> the fault model: the only place their fields are spelt.

A rule on the wire becomes the dict the config uses and goes through model.parse_rule, so the
admin API, the CLI and the timeline validate alike (errors under `fault.<field>`).
"""

from __future__ import annotations

from typing import Any

from nodeagent.apis.admin.v1 import faults_pb2
from nodeagent.faults.model import FaultRule, parse_rule
from nodeagent.faults.record import CallEntry
from nodeagent.faults.rules import ActiveRule


def rule_from_pb(msg: faults_pb2.FaultRule, path: str = "fault") -> FaultRule:
    doc: dict[str, Any] = {}
    for key in ("action", "method", "plugin", "code", "message", "delay"):
        value = getattr(msg, key)
        if value:
            doc[key] = value
    if msg.HasField("count"):
        doc["count"] = msg.count
    if msg.HasField("probability"):
        doc["probability"] = msg.probability
    return parse_rule(doc, path)


def rule_to_pb(rule: FaultRule, hits: int = 0, remaining: int | None = None) -> faults_pb2.FaultRule:
    msg = faults_pb2.FaultRule(
        id=rule.id, action=rule.action, method=rule.method, plugin=rule.plugin, code=rule.code,
        message=rule.message, delay=f"{rule.delay:g}s" if rule.delay else "", hits=hits,
    )
    if rule.count is not None:
        msg.count = rule.count
    if rule.probability is not None:
        msg.probability = rule.probability
    if remaining is not None:
        msg.remaining = remaining
    return msg


def active_to_pb(active: ActiveRule) -> faults_pb2.FaultRule:
    return rule_to_pb(active.rule, active.hits, active.remaining)


def call_to_pb(e: CallEntry) -> faults_pb2.Call:
    return faults_pb2.Call(seq=e.seq, time=e.time, plugin=e.plugin, method=e.method, event=e.event,
                           summary=e.summary, code=e.code, duration_seconds=e.duration, fault=e.fault)


def call_from_pb(m: faults_pb2.Call) -> CallEntry:
    return CallEntry(seq=m.seq, time=m.time, plugin=m.plugin, method=m.method, event=m.event, summary=m.summary,
                     code=m.code, duration=m.duration_seconds, fault=m.fault)


def active_from_pb(m: faults_pb2.FaultRule) -> dict[str, Any]:
    """A listed rule as `nodeagent fault list -o json` prints it."""
    out: dict[str, Any] = {"id": m.id, "action": m.action}
    for key in ("method", "plugin", "code", "message", "delay"):
        if getattr(m, key):
            out[key] = getattr(m, key)
    if m.HasField("count"):
        out["count"] = m.count
    if m.HasField("probability"):
        out["probability"] = m.probability
    out["hits"] = m.hits
    if m.HasField("remaining"):
        out["remaining"] = m.remaining
    return out
