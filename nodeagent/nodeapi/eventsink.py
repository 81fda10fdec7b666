"""The node's events posted to a remote API server: a queue, a poster task and the correlation names.

client-go's event broadcaster as the kubelet uses it over REST (tools/record: the recorder's
queue, EventSinkImpl's Create and Patch): the recorder's sink only queues (at most 10,000; more
are dropped, as the broadcaster drops on a full channel), and a background task posts them. An
event seen again (same object, type, reason and message) with a higher count is PATCHed onto the
Event it was posted as (the names of the last 5000 are kept), otherwise POSTed under a new name.
An unreachable server or a conflict is retried on the one Backoff (on the injected clock) and logged once
per outage (unreachable: by the client's reachability tracker);
any other refusal drops that event. Exists apart from RemoteAPI's endpoints because it is a
component of its own with its own task and state, reaching the server only through `request`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from nodeagent.errors import Conflict, NodeAgentError, NotFound, Unavailable
from nodeagent.nodeapi.reachability import Unreachable
from nodeagent.pods.events import Event
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock
from nodeagent.util.timefmt import micro_time

logger = logging.getLogger(__name__)

BACKOFF_START, BACKOFF_CAP = 0.5, 10.0
MERGE_PATCH = "application/merge-patch+json"
QUEUE_MAX = 10_000
NAMES_MAX = 5000

Request = Callable[..., Awaitable[Any]]
"""RemoteAPI.request: (method, path, *, body, content_type) -> the decoded answer, or a typed error."""


class RemoteEventSink:
    """Queue the recorder's events; post them from a task the owner spawns."""

    def __init__(self, request: Request, node_name: str, clock: Clock) -> None:
        self._request = request
        self._clock = clock
        self._node = node_name  # reportingInstance when the event names no host
        self._queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=QUEUE_MAX)
        self._names: dict[tuple[Any, ...], str] = {}

    def post(self, event: Event) -> None:
        """The EventRecorder sink: queue the event (dropped when the queue is full)."""
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            logger.debug("event dropped (queue full) reason=%s", event.reason)

    def run(self) -> Coroutine[Any, Any, None]:
        """The poster, for the owner to run as a background task (the kubelet's event broadcaster)."""
        return self._post_events()

    async def _post_events(self) -> None:
        failures = 0
        backoff = Backoff(BACKOFF_START, BACKOFF_CAP)
        while True:
            event = await self._queue.get()
            while True:
                try:
                    await self._post(event)
                    failures = 0
                    break
                except (Unavailable, Conflict) as err:
                    failures += 1
                    wait = backoff.delay(failures)
                    # unreachable: the client's reachability tracker said so, once
                    level = logging.WARNING if failures == 1 and not isinstance(err, Unreachable) else logging.DEBUG
                    logger.log(level, "event not posted, retrying reason=%s err=%s", event.reason, err)
                    await self._clock.sleep(wait)
                except Exception as err:
                    logger.info("event not posted reason=%s object=%s/%s err=%s", event.reason,
                                event.involved.namespace, event.involved.name, err)
                    break

    async def flush(self, *, wait: bool) -> None:
        """Post what is still queued (at close), each within a second; stop at the first failure."""
        while not self._queue.empty():
            event = self._queue.get_nowait()
            try:
                await asyncio.wait_for(self._post(event), 1.0)
            except (NodeAgentError, TimeoutError):
                return

    async def _post(self, event: Event) -> None:
        ref = event.involved
        namespace = ref.namespace or "default"
        key = (ref, event.type, event.reason, event.message)
        name = self._names.get(key)
        if name is not None and event.count > 1:
            try:
                await self._request("PATCH", f"/api/v1/namespaces/{namespace}/events/{name}", body={
                    "count": event.count, "lastTimestamp": micro_time(event.last_timestamp)[:19] + "Z"},
                    content_type=MERGE_PATCH)
                return
            except NotFound:
                pass
        name = f"{ref.name}.{secrets.token_hex(8)}"
        involved: dict[str, Any] = {"kind": ref.kind, "name": ref.name, "apiVersion": "v1"}
        if ref.namespace:
            involved["namespace"] = ref.namespace
        if ref.uid:
            involved["uid"] = ref.uid
        if ref.field_path:
            involved["fieldPath"] = ref.field_path
        await self._request("POST", f"/api/v1/namespaces/{namespace}/events", body={
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved, "reason": event.reason, "message": event.message, "type": event.type,
            "count": event.count, "firstTimestamp": micro_time(event.first_timestamp)[:19] + "Z",
            "lastTimestamp": micro_time(event.last_timestamp)[:19] + "Z",
            "source": {"component": event.source, **({"host": event.host} if event.host else {})},
            "reportingComponent": event.source, "reportingInstance": event.host or self._node})
        self._names[key] = name
        while len(self._names) > NAMES_MAX:
            self._names.pop(next(iter(self._names)))
