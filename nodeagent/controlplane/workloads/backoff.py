"""Per-key exponential backoff as client-go's util/flowcontrol.Backoff (without jitter, as the
controllers use it): what the DaemonSet controller holds per DaemonSet, generation and node so
that deleting a failed daemon pod (which the kubelet may fail again at once) does not hot-loop.

One responsibility: the entries and their arithmetic. Times are passed in (epoch seconds, from the
caller's injected clock); the state is the caller's (one per controller, in memory like upstream's:
a restart starts every key afresh). Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeagent.util import backoff as policy


@dataclass
class _Entry:
    backoff: float
    last_update: float


class Backoff:
    """flowcontrol.NewBackOff(initial, maximum): `next` starts a key at `initial` and doubles it up to
    `maximum`; a key untouched for more than twice `maximum` starts afresh (hasExpired)."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial, self.maximum = initial, maximum
        self._policy = policy.Backoff(initial, cap=maximum)  # the daemon's one doubling rule
        self._entries: dict[str, _Entry] = {}

    def _expired(self, entry: _Entry, now: float) -> bool:
        return now - entry.last_update > 2 * self.maximum

    def get(self, key: str) -> float:
        """Get: the key's current delay (0 when unknown)."""
        entry = self._entries.get(key)
        return entry.backoff if entry is not None else 0.0

    def next(self, key: str, now: float) -> None:
        """Next: record an event at `now`, doubling the delay (or starting it at `initial`)."""
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            self._entries[key] = _Entry(self.initial, now)
        else:
            entry.backoff = self._policy.next_delay(entry.backoff)
            entry.last_update = now

    def in_backoff_since_update(self, key: str, now: float) -> bool:
        """IsInBackOffSinceUpdate: less than the key's delay has passed since its last event."""
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            return False
        return now - entry.last_update < entry.backoff

    def gc(self, now: float) -> None:
        """GC: forget the expired keys (upstream runs it every minute)."""
        for key in [k for k, e in self._entries.items() if self._expired(e, now)]:
            del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)
