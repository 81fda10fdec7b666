"""How long the event loop was held: a probe coroutine's view, for tests that bound a stall (issue 25).

Why not wall time alone: on a loaded machine (2 cores shared by several test runs) much of a wall-clock
lag is time the loop's thread was ready to run but not scheduled, which no code of the daemon can
shorten, and a wall bound flakes (0.661 s against 0.654 s). The probe asks for a turn every 5 ms and
takes the gap between two of its turns less the time the loop's thread waited in the kernel's run queue
meanwhile (/proc/thread-self/schedstat, second field): what is left is the thread running callbacks, or
blocked (on the GIL a worker thread holds through a long C call, on a lock), the time any other
socket's answer waited for the loop. Where schedstat is missing the whole wall gap counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nodeagent.util import gcsettings, gilsettings

TICK = 0.005
_SCHEDSTAT = Path("/proc/thread-self/schedstat")


def _run_queue_wait() -> float:
    """Seconds this thread has waited in the run queue (0.0 without schedstat)."""
    try:
        return int(_SCHEDSTAT.read_bytes().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


@dataclass
class LoopStall:
    """The worst gaps between the probe's turns, per phase (set `phase` as the test goes on)."""

    phase: str = "start"
    stall: dict[str, float] = field(default_factory=dict)  # phase -> worst gap less run-queue wait
    wall: dict[str, float] = field(default_factory=dict)  # phase -> worst wall gap (oversleep)
    answers: dict[str, float] = field(default_factory=dict)  # worst latency of each probed answer
    answer_phases: dict[str, str] = field(default_factory=dict)  # the phase of that worst answer

    @property
    def worst(self) -> float:
        return max(self.stall.values(), default=0.0)

    async def run(self) -> None:
        while True:
            wall, queued = time.monotonic(), _run_queue_wait()
            await asyncio.sleep(TICK)
            wall = max(0.0, time.monotonic() - wall - TICK)
            stall = max(0.0, wall - (_run_queue_wait() - queued))
            self.stall[self.phase] = max(self.stall.get(self.phase, 0.0), stall)
            self.wall[self.phase] = max(self.wall.get(self.phase, 0.0), wall)

    def answered(self, what: str, took: float) -> None:
        if took >= self.answers.get(what, 0.0):
            self.answers[what], self.answer_phases[what] = took, self.phase

    def report(self) -> str:
        phases = ", ".join(f"{p} {s:.3f} s (wall {self.wall[p]:.3f} s)" for p, s in self.stall.items())
        answers = ", ".join(f"{k} {v:.3f} s ({self.answer_phases[k]})" for k, v in self.answers.items())
        return f"worst loop stall per phase: {phases}; worst answers (wall): {answers or 'none'}"


@contextlib.asynccontextmanager
async def probing() -> AsyncIterator[LoopStall]:
    """A running LoopStall probe for the body of the `async with`."""
    stall = LoopStall()
    task = asyncio.create_task(stall.run())
    await asyncio.sleep(TICK)
    try:
        yield stall
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@contextlib.contextmanager
def daemon_runtime() -> Iterator[None]:
    """The interpreter's settings as `nodeagent run` makes them for the body, restored after: the
    garbage collector's thresholds (util/gcsettings.py) and the thread switch interval
    (util/gilsettings.py).

    Why: an in-process test otherwise measures the interpreter's defaults, which the daemon does not
    run with. Under the default collector thresholds a pod of 10,000 containers set off ~2,500
    collections, the full ones 150-640 ms each with the GIL held (whichever thread ran them, the loop
    waited), most of the stall these tests reported; under the daemon's, ~220 with the longest 86-160
    ms. Side by side (load 7-8, tests/rpc/test_apiserver_edge.py's huge pod, three runs each): create
    0.50-0.74 -> 0.22-0.37 s, delete 1.06-1.79 -> 0.68-0.87 s. (gc.freeze() of the start's heap once
    ready was measured too and showed no difference beyond the noise: 0.30-0.47 s against 0.41-0.42 s
    in the whole daemon.) Under the default switch interval (5 ms) each GIL hand-back from a busy
    worker thread cost the loop up to 5 ms (gilsettings.py for the figures)."""
    thresholds, interval = gc.get_threshold(), sys.getswitchinterval()
    gc.set_threshold(*gcsettings.THRESHOLDS)
    sys.setswitchinterval(gilsettings.SWITCH_INTERVAL)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        sys.setswitchinterval(interval)
