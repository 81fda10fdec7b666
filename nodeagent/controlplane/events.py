"""core/v1 Events written into the object store (events.k8s.io/v1 ones: eventseries.py, events_v1.py).

Two core/v1 recorders:
- `record` (module function): a keyed core/v1 recorder whose key is the object, type and
  reason (plus action), not the message: a repeat updates count, message and lastTimestamp of
  one Event (a repeat inside the same second with the same message is not counted, so a
  retry loop does not inflate the count). Left to the resource claim controller and the device
  taint eviction controller, whose upstream counterparts post through tools/record (the
  `EventRecorder` below would be their faithful form). The scheduler, whose upstream posts
  through client-go tools/events (events.k8s.io/v1), uses events_v1.py instead.
- `EventRecorder`: core/v1's recorder (client-go tools/record, events_cache.go), used by the
  kubelet and the classic DRA controllers. The same event (source, involved object, type,
  reason and *message*) bumps count and lastTimestamp of one Event; events that differ only
  in message stay separate Events until more than `max_similar` distinct messages of one
  (source, object, type, reason) arrive within `interval` seconds, after which they go to one
  Event whose message reads "(combined from similar events): <latest message>". Then, as
  client-go's EventSourceObjectSpamFilter, each (source, involved object, type) spends one token of
  a bucket of `spam_burst` (25) refilled at `spam_qps` (one per 5 minutes): an event without a
  token is dropped, so a pod with 10,000 containers gets 25 Normal events from the kubelet, not
  30,000 (each a store write and a watch event that held the event loop for seconds, issue 25).
An Event has no ownerReferences, as upstream's: it outlives the object it reports and expires
with the Event kind's TTL (kinds/core.py EVENT_TTL, kube-apiserver's --event-ttl) after its
last write.

Intended difference from upstream: upstream names an Event `<object>.<creation time in hex
nanoseconds>` and finds it again through an in-memory cache; here the name is derived from the
correlation key (`<object>.<reason>` for `record`, `<object>.<digest of the key>` for
`EventRecorder`), so the store itself is the cache and a restarted daemon keeps counting.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodeagent.errors import NodeAgentError
from nodeagent.store import ObjectStore, Transaction
from nodeagent.store.meta import rfc3339

logger = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
_MAX_NAME = 253
COMBINED_PREFIX = "(combined from similar events): "
"""client-go's EventAggregatorByReasonMessageFunc prefix."""
AGGREGATE_MAX_EVENTS = 10
"""client-go's defaultAggregateMaxEvents: distinct messages before similar events are combined."""
AGGREGATE_INTERVAL = 600.0
"""client-go's defaultAggregateIntervalInSeconds."""
LRU_ENTRIES = 4096
"""client-go's maxLruCacheEntries."""
SPAM_BURST = 25
"""client-go's defaultSpamBurst: events a source may send about one object (and type) at once."""
SPAM_QPS = 1.0 / 300.0
"""client-go's defaultSpamQPS: the refill of that allowance, one event every 5 minutes."""


def event_name(obj: Mapping[str, Any], reason: str) -> str:
    """The name of `record`'s Event for (obj, reason)."""
    name = f"{obj['metadata']['name']}.{reason.lower()}"
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:10]
        name = name[: _MAX_NAME - 11] + "." + digest
    return name


def record(
    tx: Transaction,
    obj: Mapping[str, Any],
    reason: str,
    message: str,
    *,
    now: float,
    component: str,
    type_: str = WARNING,
    action: str = "",
) -> None:
    """Create or bump the Event for (obj, reason) in `tx`; `action` is what the component did
    (events.k8s.io's action, e.g. the scheduler's "Binding"), left out when empty."""
    namespace = obj["metadata"].get("namespace") or "default"
    name = event_name(obj, reason)
    stamp = rfc3339(now)
    cur = tx.try_get("Event", namespace, name)
    if cur is not None and (cur.get("involvedObject") or {}).get("uid", "") != obj["metadata"].get("uid", ""):
        # an Event of an earlier object of this name (events outlive their objects): upstream's key
        # holds the object's uid, so this one starts afresh
        fresh = _new_event(obj, name, type_, reason, message, stamp, component)
        if action:
            fresh["action"] = action
        fresh["metadata"] = cur["metadata"]
        tx.update(fresh)
        return
    if cur is not None:
        if cur.get("message") == message and cur.get("lastTimestamp") == stamp:
            return
        cur["count"] = int(cur.get("count") or 1) + 1
        cur["message"] = message
        cur["lastTimestamp"] = stamp
        cur["type"] = type_
        tx.update(cur)
        return
    event = _new_event(obj, name, type_, reason, message, stamp, component)
    if action:
        event["action"] = action
    tx.create(event, copy=False)


def _new_event(
    obj: Mapping[str, Any], name: str, type_: str, reason: str, message: str, stamp: str, component: str,
    host: str = "",
) -> dict[str, Any]:
    md = obj["metadata"]
    involved = _involved(obj)
    event: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": md.get("namespace") or "default"},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": type_,
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": component, **({"host": host} if host else {})},
        # client-go's makeEvent: ReportingController and ReportingInstance are the source's component and host
        "reportingComponent": component,
        "reportingInstance": host,
    }
    return event


def _involved(obj: Mapping[str, Any]) -> dict[str, Any]:
    md = obj["metadata"]
    involved = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": md["name"],
        "uid": md.get("uid", ""),
    }
    if md.get("namespace"):
        involved["namespace"] = md["namespace"]
    return involved


@dataclass
class _Bucket:
    """golang.org/x/time/rate's token bucket as client-go's passive rate limiter uses it: starts full."""

    tokens: float
    last: float

    def take(self, now: float, burst: int, qps: float) -> bool:
        """Spend one token if there is one (after refilling for the time since the last call)."""
        self.tokens = min(float(burst), self.tokens + max(0.0, now - self.last) * qps)
        self.last = max(self.last, now)
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


@dataclass
class _Similar:
    """client-go's aggregateRecord: the distinct messages seen and when the last one came."""

    messages: dict[str, None] = field(default_factory=dict)  # insertion-ordered set
    last: float = 0.0


class EventRecorder:
    """core/v1 Events of one component (and host), correlated like client-go's EventCorrelator.

    Holds only the aggregation records (bounded like upstream's LRU); counts live in the store.
    """

    def __init__(
        self,
        component: str,
        *,
        host: str = "",
        max_similar: int = AGGREGATE_MAX_EVENTS,
        interval: float = AGGREGATE_INTERVAL,
        cache_size: int = LRU_ENTRIES,
        spam_burst: int = SPAM_BURST,
        spam_qps: float = SPAM_QPS,
        manager: str = "",
    ) -> None:
        self.component = component
        self.manager = manager
        """The field manager of the writes `record_now` makes in a transaction of its own (the
        binary whose client-go would post them: its name, as client-go's default User-Agent gives
        it); "" records none. `record` writes as the caller's transaction does."""
        self.host = host
        self._max_similar = max_similar
        self._interval = interval
        self._cache_size = cache_size
        self._spam_burst = spam_burst
        self._spam_qps = spam_qps
        self._similar: OrderedDict[str, _Similar] = OrderedDict()
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def record(
        self, tx: Transaction, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, now: float,
        field_path: str = "",
    ) -> None:
        """Create the Event in `tx`, or bump the one this event correlates with; nothing when the
        spam filter drops it (as EventCorrelate: aggregation first, then the filter). `field_path`
        names the part of the object (a pod's container): it is in the key an event repeats under
        (client-go's getEventKey), not in the aggregation or spam keys."""
        involved = _involved(obj)
        source = "\x00".join(
            [self.component, self.host, involved["kind"], involved.get("namespace", ""), involved["name"],
             str(involved["uid"]), involved["apiVersion"], type_]
        )
        aggregate = source + "\x00" + reason
        key = aggregate + "\x00" + message + ("\x00" + field_path if field_path else "")
        similar = self._similar.pop(aggregate, None)
        if similar is None or now - similar.last > self._interval:
            similar = _Similar()
        similar.messages[message] = None
        similar.last = now
        self._similar[aggregate] = similar
        while len(self._similar) > self._cache_size:
            self._similar.popitem(last=False)
        if len(similar.messages) >= self._max_similar:
            del similar.messages[next(iter(similar.messages))]  # upstream pops any one; the oldest here
            key, message = aggregate, COMBINED_PREFIX + message
        if not self._allowed(source, now):
            return
        digest = hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:16]
        name = f"{involved['name'][:200].rstrip('-.')}.{digest}"
        namespace = obj["metadata"].get("namespace") or "default"
        stamp = rfc3339(now)
        cur = tx.try_get("Event", namespace, name)
        if cur is not None:
            cur["count"] = int(cur.get("count") or 1) + 1
            cur["message"] = message
            cur["lastTimestamp"] = stamp
            tx.update(cur)
            return
        event = _new_event(obj, name, type_, reason, message, stamp, self.component, self.host)
        if field_path:
            event["involvedObject"]["fieldPath"] = field_path
        tx.create(event, copy=False)

    def _allowed(self, source: str, now: float) -> bool:
        """EventSourceObjectSpamFilter.Filter, inverted: a token of this source's bucket (LRU-bounded)."""
        bucket = self._buckets.pop(source, None)
        if bucket is None:
            bucket = _Bucket(tokens=float(self._spam_burst), last=now)
        self._buckets[source] = bucket
        while len(self._buckets) > self._cache_size:
            self._buckets.popitem(last=False)
        return bucket.take(now, self._spam_burst, self._spam_qps)

    def record_now(
        self, store: ObjectStore, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, now: float
    ) -> None:
        """`record` in a transaction of its own; a store refusal is logged, never raised (an
        event is a report, never a reason for the caller's work to fail)."""
        try:
            with store.transaction(manager=self.manager) as tx:
                self.record(tx, obj, type_, reason, message, now=now)
        except NodeAgentError as err:
            md = obj.get("metadata") or {}
            logger.warning("event not recorded kind=%s name=%s reason=%s err=%s",
                           obj.get("kind"), md.get("name"), reason, err)
