"""Failed authentications: throttled per source address, and told in the log once per interval.

Why (nodeagent's own; kube-apiserver has no such limit and logs nothing for a wrong token): a
guessed token costs nothing to send, so a loop of them would be a free oracle and, on a shared
loopback address, noise that hides everything else. Each source address has a token bucket of
failures (`burst`, refilled at `rate` per second). While it is empty, a request from that source
that would need a bearer token checked is answered 429 with Retry-After without looking at the
token, as kube-apiserver's max-in-flight and priority-and-fairness filters refuse excess load
(client-go retries a 429 after Retry-After by itself), so the answer carries no information about
the guess. Only checked failures drain the bucket (a 429 drains nothing: the bucket refills at its
rate however fast it is asked): a good token from the same address keeps working while the bucket
holds a failure, and a client certificate verified by TLS is never throttled, so a local attacker
on 127.0.0.1 can slow a token-using administrator (to its retries after Retry-After) only while it
keeps guessing, and never a certificate-using node or plugin.

The log: the first failure of a source is logged at once, later ones are counted and told in one
line per `interval` (source, count, the last reason), so 1,000 wrong tokens make a handful of
lines, not 1,000 and not none. Pure: the clock is passed in, the lines are returned to log.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_SOURCES = 4096
"""Sources tracked at once; beyond it the quietest (fullest bucket, oldest) are forgotten."""


@dataclass
class _Source:
    tokens: float
    updated: float
    pending: int = 0  # failures not yet logged
    last_reason: str = ""
    logged_at: float = -math.inf


@dataclass(frozen=True)
class LogLine:
    """One line to log: `count` failures from `source` since the previous line, the last one's reason."""

    source: str
    count: int
    reason: str
    first: bool  # the source's first failure after a quiet interval (logged at once)


class FailureThrottle:
    def __init__(self, *, burst: int = 10, rate: float = 1.0, interval: float = 60.0,
                 max_sources: int = MAX_SOURCES) -> None:
        self.burst, self.rate, self.interval = burst, rate, interval
        self._max = max_sources
        self._sources: dict[str, _Source] = {}

    def _refill(self, source: str, now: float) -> _Source:
        state = self._sources.get(source)
        if state is None:
            if len(self._sources) >= self._max:
                self._forget(now)
            state = self._sources[source] = _Source(float(self.burst), now)
        else:
            state.tokens = min(float(self.burst), state.tokens + (now - state.updated) * self.rate)
            state.updated = now
        return state

    def _forget(self, now: float) -> None:
        for key, state in sorted(self._sources.items(), key=lambda kv: (-kv[1].tokens, kv[1].updated)):
            if len(self._sources) < self._max:
                break
            if state.pending == 0:
                del self._sources[key]
        while len(self._sources) >= self._max:  # every one has unlogged failures: drop the oldest
            del self._sources[min(self._sources, key=lambda k: self._sources[k].updated)]

    def retry_after(self, source: str, now: float) -> int:
        """0 when `source` may have a credential checked now, else the seconds until it may (>= 1)."""
        state = self._sources.get(source)
        if state is None:
            return 0
        state = self._refill(source, now)
        if state.tokens >= 1.0:
            return 0
        return max(1, math.ceil((1.0 - state.tokens) / self.rate))

    def failed(self, source: str, reason: str, now: float, *, checked: bool = True) -> LogLine | None:
        """Count one failed authentication of `source` (a `checked` credential drains the bucket; one refused
        unread only counts for the log, so the bucket refills at its rate however fast 429s are asked for);
        the line to log now, if one is due."""
        state = self._refill(source, now)
        if checked:
            state.tokens = max(0.0, state.tokens - 1.0)
        state.pending += 1
        state.last_reason = reason
        if now - state.logged_at >= self.interval:
            return self._line(source, state, now, first=True)
        return None

    def flush(self, now: float) -> list[LogLine]:
        """Lines for every source whose failures have waited an interval; quiet full sources forgotten."""
        out: list[LogLine] = []
        for source, state in list(self._sources.items()):
            if state.pending and now - state.logged_at >= self.interval:
                out.append(self._line(source, state, now, first=False))
            elif not state.pending and min(float(self.burst), state.tokens + (now - state.updated) * self.rate) \
                    >= self.burst and now - state.logged_at >= self.interval:
                del self._sources[source]
        return out

    @staticmethod
    def _line(source: str, state: _Source, now: float, *, first: bool) -> LogLine:
        line = LogLine(source, state.pending, state.last_reason, first)
        state.pending = 0
        state.logged_at = now
        return line

    def pending(self) -> list[LogLine]:
        """Every count not yet logged (at shutdown)."""
        out = [LogLine(s, st.pending, st.last_reason, False) for s, st in self._sources.items() if st.pending]
        for st in self._sources.values():
            st.pending = 0
        return out
