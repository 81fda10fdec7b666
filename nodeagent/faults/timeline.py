"""The fault timeline of the daemon config: faults added (and kubelet restarts run) at set times after start.

`NodeAgentConfiguration.faults` is a list of entries, each with `at` (a duration after the daemon
is ready) and either a fault rule in the spelling of model.parse_rule or
`action: kubelet-restart`:

    faults:
    - {at: "10s", method: Allocate, action: fail, code: UNAVAILABLE, count: 2}
    - {at: "30s", action: kubelet-restart}

`parse` validates with field paths (`NodeAgentConfiguration.faults[1].at: ...`); `run` plays
the entries in time order on the injected clock and never raises (a failed restart is logged).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeagent.clock import Clock
from nodeagent.errors import NodeAgentError, ValidationError
from nodeagent.faults.model import FaultRule, parse_rule, parse_seconds
from nodeagent.faults.rules import FaultSet

logger = logging.getLogger(__name__)

KUBELET_RESTART = "kubelet-restart"


@dataclass(frozen=True)
class TimelineEntry:
    at: float  # seconds after the daemon is ready
    rule: FaultRule | None = None  # None: a kubelet restart


def parse(items: Sequence[Any], path: str) -> tuple[TimelineEntry, ...]:
    """Validate the timeline; raises ValidationError naming the entry's field."""
    out: list[TimelineEntry] = []
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            raise ValidationError(p, f"expected object, got {type(item).__name__}")
        if item.get("at") is None:
            raise ValidationError(f"{p}.at", "Required value: when, after start (e.g. \"10s\")")
        at = parse_seconds(item["at"], f"{p}.at")
        if item.get("action") == KUBELET_RESTART:
            extra = sorted(set(item) - {"at", "action"})
            if extra:
                raise ValidationError(f"{p}.{extra[0]}", f"a {KUBELET_RESTART} entry takes only at and action")
            out.append(TimelineEntry(at))
            continue
        out.append(TimelineEntry(at, parse_rule(item, p, frozenset({"at"}))))
    return tuple(sorted(out, key=lambda e: e.at))


async def run(
    entries: Sequence[TimelineEntry], clock: Clock, faults: FaultSet, restart: Callable[[], Awaitable[float]]
) -> None:
    """Play the timeline from now: each entry at its offset from the start of this call."""
    start = clock.monotonic()
    for entry in entries:
        wait = start + entry.at - clock.monotonic()
        if wait > 0:
            await clock.sleep(wait)
        if entry.rule is None:
            logger.warning("fault timeline: kubelet restart at=%gs", entry.at)
            try:
                await restart()
            except NodeAgentError as err:
                logger.error("fault timeline: kubelet restart failed at=%gs err=%s", entry.at, err)
            continue
        rule = faults.add(entry.rule)
        logger.warning("fault timeline: fault added at=%gs id=%d %s", entry.at, rule.id, rule.to_dict())
