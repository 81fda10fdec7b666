"""Untrusted strings in log lines: quoted, escaped and bounded.

A plugin names its resource, driver and endpoint itself; logged raw, a name with a newline
forges a log line and a 16 MB name writes a 16 MB line. Every log line that carries a
plugin-provided string renders it through `untrusted`: one quoted token, control and
non-ASCII characters escaped (JSON-style, so no byte of it can end the line), cut at `limit`.
"""

from __future__ import annotations

import json

LIMIT = 256


def untrusted(text: object, limit: int = LIMIT) -> str:
    """`text` as one quoted, escaped token of at most about `limit` characters (plus a "+N more" note)."""
    s = text if isinstance(text, str) else str(text)
    extra = len(s) - limit
    quoted = json.dumps(s[:limit] if extra > 0 else s, ensure_ascii=True)
    return f"{quoted}+{extra}more" if extra > 0 else quoted


def plain_or_quoted(text: str, limit: int = LIMIT) -> str:
    """`text` unchanged when it is printable and short (the kubelet's `%s` texts stay exact), else untrusted()."""
    return text if len(text) <= limit and text.isprintable() else untrusted(text, limit)


class LogLimiter:
    """At most one log line per key every `interval` seconds; the lines held back are counted.

    `allow(key, now)` answers None when the line is to be skipped, else how many were skipped
    since the last line of that key (to be written into it). Keys are bounded by `max_keys`:
    beyond it the oldest are forgotten."""

    def __init__(self, interval: float, max_keys: int = 1024) -> None:
        self._interval = interval
        self._max_keys = max_keys
        self._last: dict[str, float] = {}
        self._skipped: dict[str, int] = {}

    def allow(self, key: str, now: float) -> int | None:
        last = self._last.get(key)
        if last is not None and now - last < self._interval:
            self._skipped[key] = self._skipped.get(key, 0) + 1
            return None
        if last is None and len(self._last) >= self._max_keys:
            oldest = next(iter(self._last))
            self._last.pop(oldest)
            self._skipped.pop(oldest, None)
        self._last.pop(key, None)
        self._last[key] = now  # re-inserted: the dict stays in order of last line
        return self._skipped.pop(key, 0)
