"""Ctrl-C while the daemon is still importing: remembered, acted on once the imports are done.

A KeyboardInterrupt raised in the middle of importing a C extension (grpc's Cython module is
the largest the daemon loads) leaves that module half initialised, and the interpreter can then
crash at exit (a run of the clean-shutdown test ended with SIGSEGV and an empty log when Ctrl-C
came half a second into `nodeagent run`). So `run` defers SIGINT while it loads its config and
modules, and answers a Ctrl-C that came meanwhile with the usual exit status right after;
from asyncio.run on, the daemon's own signal handlers take over.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType


class DeferredInterrupt:
    """SIGINT held back until `release()`, which says whether one came meanwhile."""

    def __init__(self) -> None:
        self._came = False
        self._previous: object = None
        self._installed = threading.current_thread() is threading.main_thread()
        if self._installed:
            self._previous = signal.signal(signal.SIGINT, self._remember)

    def _remember(self, signum: int, frame: FrameType | None) -> None:
        self._came = True

    def release(self) -> bool:
        """Put back the handler there was (Python's KeyboardInterrupt) and say whether SIGINT came."""
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]
            self._installed = False
        return self._came
