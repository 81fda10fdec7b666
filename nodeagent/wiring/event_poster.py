"""The node's events as core v1 Events in the object store, batched one transaction per loop turn.

Exists because posting each event in its own store transaction cost a commit and a watch
publish per event (about four per pod start): the kubelet's event broadcaster is asynchronous
too (events go to a channel and are written by a goroutine), and nothing acknowledges an event
to a client. So the recorder's sink only queues the event; the queue is written at the end of
the current event-loop turn, in one transaction, before any client can send its next request
(a queue longer than util.yielding.CHUNK in chunks of that many, one per turn). Each event is
recorded on its own inside that transaction: one that the store refuses
is logged and skipped, the others are written (the batch is first tried without a savepoint per
event, and only when one is refused written again with them). Outside a running loop (tests, start-up code)
an event is written at once. `close` writes what is still queued. The Events are correlated as
the kubelet's recorder does (`controlplane.events.EventRecorder`, one per event source).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from nodeagent.controlplane import events as api_events
from nodeagent.errors import NodeAgentError
from nodeagent.pods.events import Event
from nodeagent.store import ObjectStore, StoreBusy, Transaction
from nodeagent.util.yielding import BREATH, CHUNK, LEAST, TURN

logger = logging.getLogger(__name__)

_BUSY_RETRY = 0.005
"""Seconds before a write put off because another thread's transaction holds the store."""


class EventPoster:
    """The EventRecorder sink: queue, then write the queue in one transaction per loop turn."""

    def __init__(self, store: ObjectStore, manager: str = "") -> None:
        """`manager`: the field manager the Events' managedFields name (the kubelet's user agent: its
        event client posts them as kube-apiserver records any writer); empty: none recorded."""
        self._store = store
        self._manager = manager
        self._queue: list[Event] = []
        self._handle: asyncio.Handle | asyncio.TimerHandle | None = None
        self._recorders: dict[tuple[str, str], api_events.EventRecorder] = {}

    def __call__(self, event: Event) -> None:
        self._queue.append(event)
        if self._handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._handle = loop.call_soon(self._flush_turn)

    def pending(self) -> int:
        """Events queued and not written yet."""
        return len(self._queue)

    def _flush_turn(self) -> None:
        """One loop turn's write: at most `CHUNK` events (the 40,000 container events of a pod of
        10,000 containers held the event loop for a second in one transaction, issue 25), and no
        more than util.yielding.TURN seconds of them once LEAST were written (256 took 30-60 ms, so
        a /healthz answer, which needs a few turns, came 0.1-0.2 s late); the rest util.yielding.BREATH
        later, after whatever else is ready to run meanwhile, in the order they were queued."""
        self._handle = None
        loop = asyncio.get_running_loop()
        if self._store.busy:
            # a worker thread's transaction (a huge pod's write) holds the store: writing now
            # would hold the event loop until it commits, so try again a little later
            self._handle = loop.call_later(_BUSY_RETRY, self._flush_turn)
            return
        if self._write(CHUNK, wait=False, budget=TURN) < 0:  # taken by a worker meanwhile: the same, later
            self._handle = loop.call_later(_BUSY_RETRY, self._flush_turn)
            return
        if self._queue:  # the rest after util.yielding.BREATH, so a gRPC answer's turns run back to back
            self._handle = loop.call_later(BREATH, self._flush_turn)

    def flush(self) -> int:
        """Write every queued event in one store transaction; returns how many were written."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        return self._write(len(self._queue))

    def _write(self, count: int, *, wait: bool = True, budget: float | None = None) -> int:
        """Write the first `count` queued events in one store transaction; how many were written
        (-1, every event queued again, when `wait` is False and another thread holds the store).
        With `budget`, the events after the one that took the transaction past `budget` seconds
        (LEAST written at least) go back to the head of the queue, unwritten."""
        batch, self._queue = self._queue[:count], self._queue[count:]
        if not batch:
            return 0
        written = 0
        try:
            try:  # the common case, every event accepted: no savepoint per event
                done = len(batch)
                clock = time.perf_counter
                until = clock() + budget if budget is not None else 0.0
                with self._store.transaction(savepoints=False, manager=self._manager, wait=wait) as tx:
                    for i, event in enumerate(batch, 1):
                        self._record_or_raise(tx, event)
                        if budget is not None and i >= LEAST and i < done and clock() >= until:
                            done = i
                            break
                self._queue[:0] = batch[done:]
                return done
            except StoreBusy:
                self._queue[:0] = batch
                return -1
            except _Refused:  # rolled back: again, each event on its own (savepoints)
                pass
            with self._store.transaction(manager=self._manager) as tx:
                for event in batch:
                    written += self._record(tx, event)
        except NodeAgentError as err:  # the store is closed or its file failed: nothing was written
            logger.warning("events not posted count=%d error=%s", len(batch), err)
            return 0
        return written

    async def close(self) -> None:
        self.flush()

    def _record(self, tx: Transaction, event: Event) -> int:
        try:
            self._record_or_raise(tx, event)
        except _Refused as refused:
            ref, err = event.involved, refused.__cause__
            logger.debug("event not posted reason=%s object=%s/%s error=%s",
                         event.reason, ref.namespace, ref.name, err)
            return 0
        return 1

    def _record_or_raise(self, tx: Transaction, event: Event) -> None:
        ref = event.involved
        store = self._store
        stored = store.peek(ref.kind, ref.namespace, ref.name) if ref.kind in store.kinds else None
        if stored is not None and (not ref.uid or stored["metadata"].get("uid") == ref.uid):
            obj: dict[str, Any] = dict(stored)
        else:  # not (or no longer) in the store: the reference as the recorder gave it
            obj = {"apiVersion": "v1", "kind": ref.kind,
                   "metadata": {"name": ref.name, "namespace": ref.namespace, "uid": ref.uid}}
        try:
            recorder = self._recorders.get((event.source, event.host))
            if recorder is None:
                recorder = api_events.EventRecorder(event.source, host=event.host)
                self._recorders[(event.source, event.host)] = recorder
            recorder.record(tx, obj, event.type, event.reason, event.message, now=event.last_timestamp,
                            field_path=ref.field_path)
        except NodeAgentError as err:
            raise _Refused from err


class _Refused(Exception):
    """The store refused one event (its cause): the batch is written again event by event."""
