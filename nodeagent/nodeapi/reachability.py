"""Whether the node's API server answers: one warning when it stops, one info when it is back.

Why one place: every part of a joined node talks to the API server (Lease, Node status, pod
statuses, events, each watch). When the server goes away, each of them failed and said so on
its own, every pass: a 30 s outage logged 553 lines. The kubelet's client has one transport, and
its failures surface once per component at most; here the REST client (remote.py) reports every
request's outcome to this tracker, which logs the outage once (with the first error), counts the
requests that failed meanwhile by kind, and logs once when an answer comes again (how long, how
many). The components log a transport failure at DEBUG only (`Unreachable`); an answer that is a
refusal (4xx, 5xx) is theirs to report, since the server was there to give it.

The tracker also answers `answered_within`, which the watch liveness check (reflector.py) uses
to tell a quiet watch on a live server from a frozen or half-open one without a request of its own.
It does no I/O and has no task.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

from nodeagent.errors import Unavailable
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)


class Unreachable(Unavailable):
    """No answer from the API server at all (refused, reset, timed out, a watch gone quiet): the
    reachability tracker has reported it; callers retry and log it at DEBUG."""


class Reachability:
    """The API server's state as the requests of one client saw it."""

    def __init__(self, clock: Clock, description: Callable[[], str]) -> None:
        self._clock = clock
        self._description = description
        self._last_answer: float | None = None
        self._down_since: float | None = None
        self._failed: Counter[str] = Counter()
        self.outages = 0
        """Outages seen so far (each logged once): tests and the admin view read it."""

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def answered(self) -> None:
        """A request got an answer (any HTTP status): the server is there."""
        now = self._clock.monotonic()
        self._last_answer = now
        if self._down_since is None:
            return
        took = now - self._down_since
        counts = " ".join(f"{k}={v}" for k, v in sorted(self._failed.items()))
        logger.info("API server reachable again api=%s after=%.1fs failed_requests=%d %s", self._description(),
                    took, sum(self._failed.values()), counts)
        self._down_since = None
        self._failed.clear()

    def failed(self, kind: str, err: object, started: float | None = None) -> None:
        """A request got no answer; `kind` groups the count (lease, watch, pod-status...). A request
        `started` (monotonic) before the last answer is old news: one sent into the outage that timed
        out after the server answered again starts no new outage."""
        self._failed[kind] += 1
        if self._down_since is not None:
            return
        if started is not None and self._last_answer is not None and started <= self._last_answer:
            logger.debug("request sent before the API server answered again failed kind=%s err=%s", kind, err)
            self._failed.clear()
            return
        self._down_since = self._clock.monotonic()
        self.outages += 1
        logger.warning("API server unreachable api=%s err=%s (the node keeps its pods, retries, and logs "
                       "once when the server answers again)", self._description(), err)

    def answered_within(self, seconds: float) -> bool:
        """Whether any request got an answer in the last `seconds`."""
        last = self._last_answer
        return last is not None and self._clock.monotonic() - last <= seconds


def request_kind(method: str, path: str) -> str:
    """A short name for what a request was, for the counts of an outage."""
    parts = [p for p in path.split("/") if p]
    if "leases" in parts:
        return "lease"
    if "events" in parts:
        return "event"
    if parts[-1:] == ["status"] and "pods" in parts:
        return "pod-status"
    if "nodes" in parts:
        return "node"
    if method == "WATCH":
        return "watch"
    if method == "GET" and parts and parts[-1] in ("pods", "resourceclaims", "resourceslices"):
        return "list"
    return method.lower()
