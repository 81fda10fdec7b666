"""Logging set-up, called once from cli.py; nothing else configures handlers.

Formats: `plain` (level and logger, no timestamp: journald adds its own under
systemd), `full` (with timestamps, for a terminal) and `json` (one object a line).
"""

from __future__ import annotations

import json
import logging
import sys

FORMATS = ("plain", "full", "json")


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": record.created,
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out)


def setup(level: str = "info", fmt: str = "plain") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    elif fmt == "full":
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # grpc's own chatter is not ours to show at info level.
    logging.getLogger("grpc").setLevel(logging.WARNING)
