"""Playing the fault timeline of the daemon config: faults added (and kubelet restarts run) at set times after start.

The entries are parsed, with field paths, by nodeagent.config.faults.parse_timeline when the config
is loaded (the spelling is described there); `run` plays them in time order on the injected clock
and never raises (a failed restart is logged).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from nodeagent.errors import NodeAgentError
from nodeagent.faults.model import TimelineEntry
from nodeagent.faults.rules import FaultSet
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)


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
