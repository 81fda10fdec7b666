"""The call record: every call the node makes to a plugin, in a bounded ring buffer, for assertions.

One entry per unary call (when it ends) and two per stream (when it opens and when it
closes): wall time, plugin, method, a short request summary, the gRPC status (grpc's name),
the duration, and the fault that took the call if one did. The buffer keeps the newest
`size` entries; `seq` keeps counting so a reader can ask for what came after what it saw.
Pure: the interceptors build the entries (summaries are made at the edge, never a message).
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

DEFAULT_SIZE = 4096

CALL = "call"
OPEN = "open"
CLOSE = "close"


@dataclass(frozen=True)
class CallEntry:
    seq: int
    time: float  # wall clock, seconds since the epoch
    plugin: str
    method: str
    event: str  # call | open | close
    summary: str = ""
    code: str = "OK"
    duration: float = 0.0  # seconds (a stream's close: how long it was open)
    fault: str = ""  # the rule that took the call: "fail UNAVAILABLE", "delay 2s", "drop"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class CallLog:
    """The newest `size` calls, oldest first."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        if size < 1:
            raise ValueError("call record size must be at least 1")
        self._entries: deque[CallEntry] = deque(maxlen=size)
        self._seq = 0

    def add(self, time: float, plugin: str, method: str, event: str, *, summary: str = "", code: str = "OK",
            duration: float = 0.0, fault: str = "") -> CallEntry:
        self._seq += 1
        entry = CallEntry(self._seq, time, plugin, method, event, summary, code, duration, fault)
        self._entries.append(entry)
        return entry

    def entries(self, *, plugin: str = "", method: str = "", since: int = 0, limit: int = 0) -> list[CallEntry]:
        """Entries after seq `since`, of one plugin and/or method when given; the newest `limit` if set."""
        out = [e for e in self._entries
               if e.seq > since and (not plugin or e.plugin == plugin) and (not method or e.method == method)]
        return out[-limit:] if limit > 0 else out

    def clear(self) -> None:
        self._entries.clear()


def human_time(epoch: float) -> str:
    """Wall-clock seconds as the table shows them: RFC 3339 in UTC with milliseconds, the form the
    API server's timestamps take (`-o json` keeps the raw seconds, for arithmetic)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def format_table(entries: list[CallEntry]) -> str:
    """The record as `nodeagent calls` prints it: one line per entry, aligned columns."""
    rows = [("SEQ", "TIME", "PLUGIN", "METHOD", "EVENT", "CODE", "DURATION", "FAULT", "REQUEST")]
    for e in entries:
        rows.append((str(e.seq), human_time(e.time), e.plugin or "-", e.method, e.event, e.code,
                     f"{e.duration * 1000:.1f}ms", e.fault or "-", e.summary))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"
