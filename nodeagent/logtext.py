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
