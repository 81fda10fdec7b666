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


class _StatusToAGoneClient(logging.Filter):
    """grpc aio logs an ERROR with a traceback when a server-streaming handler ends after its client
    has gone: the final status has no call left to go to (ExecuteBatchError of a
    SendStatusFromServerOperation), as when the daemon and a plugin stop together and the plugin ends
    its health streams. Nothing is lost, so it is one line without the traceback, at debug level."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith("ExecuteBatchError raised in core by servicer method") \
                or not record.exc_info or "SendStatusFromServerOperation" not in str(record.exc_info[1]):
            return True
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)


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
    cygrpc = logging.getLogger("grpc._cython.cygrpc")
    if not any(isinstance(f, _StatusToAGoneClient) for f in cygrpc.filters):
        cygrpc.addFilter(_StatusToAGoneClient())
