"""Exponential backoff: the one retry-delay rule of the daemon, as a policy and a per-key tracker.

Upstream retries with the same shape everywhere (wait.Backoff, the workqueue's per-item
exponential limiter, the kubelet's exponentialbackoff for volume and plugin operations): a first
delay, multiplied by a factor after each failure, capped. Writing that formula at each retry
site let the sites drift (overflow guards in some, off-by-one exponents in others), so every
site asks this class instead, in whichever form it keeps its state:
- `delay(failures)`: the delay after the n-th consecutive failure (loops that count failures);
- `next_delay(previous)`: the delay after `previous` (loops that keep the last delay);
- `failed(key)` / `ready(key)` / `succeeded(key)`: per-key bookkeeping of when a key may be
  tried again, on the injected clock's monotonic time (or a `now` the caller already read).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodeagent.util.clock import Clock

INITIAL_BACKOFF = 0.5
"""The kubelet's exponentialbackoff initialDurationBeforeRetry (operation executor, plugin watcher)."""
MAX_BACKOFF = 122.0
"""The kubelet's maxDurationBeforeRetry, 2m2s."""
_MAX_EXPONENT = 64
"""Past this many doublings every delay the daemon uses is at its cap; the bound keeps a long run of
failures from overflowing the float."""


@dataclass
class Backoff:
    """`initial`, then multiplied by `factor` per failure, never above `cap` (seconds)."""

    initial: float = INITIAL_BACKOFF
    cap: float = MAX_BACKOFF
    factor: float = 2.0
    clock: Clock | None = None
    """Read by the per-key methods when no `now` is given."""
    _next: dict[str, tuple[float, float]] = field(default_factory=dict)  # key -> (not before, last delay)

    def delay(self, failures: int) -> float:
        """The delay after the `failures`-th consecutive failure (the first, or none yet: `initial`)."""
        return min(self.initial * self.factor ** min(max(failures - 1, 0), _MAX_EXPONENT), self.cap)

    def next_delay(self, previous: float) -> float:
        """The delay that follows `previous` (`initial` when there was none, i.e. `previous` <= 0)."""
        return self.initial if previous <= 0 else min(previous * self.factor, self.cap)

    def ready(self, key: str, now: float | None = None) -> bool:
        entry = self._next.get(key)
        return entry is None or self._now(now) >= entry[0]

    def failed(self, key: str, now: float | None = None) -> float:
        """Record a failure of `key` at `now`; return the delay before its next attempt."""
        entry = self._next.get(key)
        delay = self.next_delay(0.0 if entry is None else entry[1])
        self._next[key] = (self._now(now) + delay, delay)
        return delay

    def succeeded(self, key: str) -> None:
        self._next.pop(key, None)

    def forget_except(self, keys: Mapping[str, object]) -> None:
        """Drop entries of keys that are gone (a removed key starts afresh when it returns)."""
        for key in [k for k in self._next if k not in keys]:
            del self._next[key]

    def pending(self) -> dict[str, float]:
        """Key -> the monotonic time before which it waits."""
        return {key: entry[0] for key, entry in self._next.items()}

    def _now(self, now: float | None) -> float:
        if now is not None:
            return now
        if self.clock is None:
            raise ValueError("Backoff without a clock needs the time from its caller")
        return self.clock.monotonic()
