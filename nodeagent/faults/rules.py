"""The active faults and the decision for each call: which rule (if any) applies, consuming its count.

Rules are matched in the order they were added; the first one whose method and plugin match,
and whose probability draw (from the injected random source) says yes, takes the call. A rule
with a count leaves the set when the count is spent. Drop rules are also announced to the
listeners (the open streams of the interceptors), which drop what is open at once. Pure: the
random source is passed in, and nothing here waits or does I/O.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from nodeagent.errors import NotFound
from nodeagent.faults.model import DELAY, DROP, FAIL, REFUSE, FaultRule, with_id

CALL_ACTIONS = frozenset({DELAY, FAIL})

DropListener = Callable[[FaultRule], None]


@dataclass
class _Active:
    rule: FaultRule
    remaining: int | None
    hits: int = 0


@dataclass(frozen=True)
class ActiveRule:
    """A rule as listed: how many calls it took so far and how many it still will (None: no bound)."""

    rule: FaultRule
    hits: int
    remaining: int | None


class FaultSet:
    """The node's active fault rules."""

    def __init__(self, rng: random.Random | None = None) -> None:
        # Made on the first probability rule: a Mersenne Twister is 2.5 KiB, and each of a
        # thousand full virtual nodes has a FaultSet that is usually never used.
        self._rng = rng
        self._rules: list[_Active] = []
        self._next_id = 1
        self._drop_listeners: list[DropListener] = []

    def _random(self) -> float:
        if self._rng is None:
            self._rng = random.Random()
        return self._rng.random()

    def add(self, rule: FaultRule) -> FaultRule:
        """Keep `rule` (with a fresh id); a drop rule is first offered to the streams open now."""
        rule = with_id(rule, self._next_id)
        self._next_id += 1
        active = _Active(rule, rule.count)
        self._rules.append(active)
        if rule.action == DROP:
            for listener in list(self._drop_listeners):
                listener(rule)
        return rule

    def on_drop(self, listener: DropListener) -> None:
        self._drop_listeners.append(listener)

    def list(self) -> list[ActiveRule]:
        return [ActiveRule(a.rule, a.hits, a.remaining) for a in self._rules]

    def clear(self, rule_id: int = 0) -> int:
        """Remove one rule by id (NotFound if absent) or every rule (id 0); returns how many went."""
        if not rule_id:
            gone = len(self._rules)
            self._rules.clear()
            return gone
        before = len(self._rules)
        self._rules = [a for a in self._rules if a.rule.id != rule_id]
        if len(self._rules) == before:
            raise NotFound(f"no fault with id {rule_id}")
        return 1

    def match(self, method: str, plugin: str, actions: frozenset[str] = CALL_ACTIONS) -> FaultRule | None:
        """The rule that takes this call, its count consumed; None: the call goes through untouched.

        `actions` are the kinds considered: delay and fail for a call; a stream asks for drop
        separately, a registration for refuse.
        """
        for active in self._rules:
            rule = active.rule
            if rule.action not in actions:
                continue
            if rule.action != REFUSE and rule.method != method:
                continue
            if rule.plugin and rule.plugin != plugin:
                continue
            if rule.probability is not None and self._random() >= rule.probability:
                continue
            self._take(active)
            return rule
        return None

    def take(self, rule_id: int) -> bool:
        """Spend one call of rule `rule_id` (a drop applied to an open stream); False if it is gone."""
        for active in self._rules:
            if active.rule.id == rule_id:
                self._take(active)
                return True
        return False

    def _take(self, active: _Active) -> None:
        active.hits += 1
        if active.remaining is not None:
            active.remaining -= 1
            if active.remaining <= 0:
                self._rules.remove(active)

    def refuses(self, plugin: str) -> FaultRule | None:
        """The refuse rule that takes this registration of `plugin`, if any."""
        return self.match("", plugin, frozenset({REFUSE}))


_POD_UID_SUFFIX = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def plugin_from_socket(path: str) -> str:
    """The plugin named by a registration socket: `DRIVER-reg.sock` (kubeletplugin's naming),
    `DRIVER-<pod UID>-reg.sock` (its rolling-update naming) or `NAME.sock`. The hashed
    rolling-update names say nothing of the driver: GetInfo's answer names those (interceptors.py)."""
    name = path.rsplit("/", 1)[-1]
    for suffix in ("-reg.sock", ".sock"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            return _POD_UID_SUFFIX.sub("", name) if suffix == "-reg.sock" else name
    return name


__all__ = ["CALL_ACTIONS", "DROP", "ActiveRule", "FaultSet", "plugin_from_socket"]
