"""DeviceTaintRules (KEP-5055) as the control plane applies them: the rule's taint on every device
its selector picks.

Why a module of its own: two consumers merge the rules the same way. The scheduler's cache
adds the taints to the slices' devices before the allocator sees them (upstream's ResourceSlice
tracker), so a NoSchedule or NoExecute rule keeps new claims off the device unless tolerated;
the eviction controller matches the rules against allocated devices directly (upstream's
controller keeps its own rule index since 1.35), so a rule evicts even when the device's slice
is gone. A selector matches by driver, pool and device name, every set field must match; an
empty selector matches every device, no selector none. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.controlplane import allocator as model
from nodeagent.controlplane.allocator.taints import Taint
from nodeagent.controlplane.convert.taints import taint

KIND = "DeviceTaintRule"


@dataclass(frozen=True)
class Rule:
    name: str
    taint: Taint
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    selects: bool = True
    """False without spec.deviceSelector: the rule matches no device."""

    def matches(self, driver: str, pool: str, device: str) -> bool:
        return self.selects and (self.driver is None or self.driver == driver) and (
            self.pool is None or self.pool == pool) and (self.device is None or self.device == device)


def rule(obj: Mapping[str, Any]) -> Rule:
    spec = obj.get("spec") or {}
    sel = spec.get("deviceSelector")
    name = str(obj["metadata"]["name"])
    found = taint(spec.get("taint") or {})
    if not isinstance(sel, Mapping):
        return Rule(name, found, selects=False)
    return Rule(name, found, sel.get("driver"), sel.get("pool"), sel.get("device"))


class RuleSet:
    """The current rules by name, and the taints they put on a device."""

    def __init__(self) -> None:
        self.rules: dict[str, Rule] = {}

    def __bool__(self) -> bool:
        return bool(self.rules)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> bool:
        """Apply a watch event; True when the set of rules changed."""
        name = str(obj["metadata"]["name"])
        old = self.rules.get(name)
        if event_type == "DELETED":
            self.rules.pop(name, None)
            return old is not None
        new = rule(obj)
        self.rules[name] = new
        return new != old

    def taints(self, driver: str, pool: str, device: str) -> tuple[Taint, ...]:
        """The rules' taints of one device, in rule-name order (a stable result)."""
        return tuple(self.rules[n].taint for n in sorted(self.rules)
                     if self.rules[n].matches(driver, pool, device))

    def apply(self, s: model.ResourceSlice) -> model.ResourceSlice:
        """`s` with the rules' taints added to its devices (after the driver's own); `s` itself
        when no rule selects any of them."""
        if not self.rules:
            return s
        changed = False
        devices: list[model.Device] = []
        for d in s.devices:
            extra = self.taints(d.driver, d.pool, d.name)
            if extra:
                changed = True
                d = dataclasses.replace(d, taints=d.taints + extra)
            devices.append(d)
        return dataclasses.replace(s, devices=tuple(devices)) if changed else s
