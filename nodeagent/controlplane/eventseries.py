"""events.k8s.io/v1 Events as client-go's tools/events recorder makes them: the pure part.

Upstream components that post through tools/events (kube-scheduler; kube-proxy and kube-apiserver's
repair controllers, which nodeagent does not embed) write Events unlike tools/record's core/v1
recorder (events.py `EventRecorder`, the kubelet's and most controllers'):

- `make_event` is recorderImpl.makeEvent: the name is `<regarding name>.<wall time in hex
  nanoseconds>` (util.GenerateEventName; a random uuid when that is no DNS subdomain), eventTime
  a MicroTime, reportingController / reportingInstance (`<controller>-<hostname>`), the action,
  the regarding reference with the resourceVersion of the object as the caller had it, and no
  source, count, firstTimestamp or lastTimestamp. Kept in the store's core/v1 names
  (kinds/core.py converts to events.k8s.io/v1) with what kube-apiserver's conversion reads of
  such an event as core/v1: `firstTimestamp` and `lastTimestamp` null, `source` {}.
- `SeriesCache` is eventBroadcasterImpl's eventCache: events are isomorphic when type, action,
  reason, reporting controller and instance, regarding (with its resourceVersion) and related
  are equal; the note is not compared. The first event is created; its first repeat patches
  `series` {count 2, lastObservedTime} into the Event; later repeats only count in memory.
  Every `REFRESH_TIME` the series of the cache are written again; every `FINISH_TIME` a series
  not observed for `FINISH_TIME` is written one last time and forgotten, and so is a lone event
  older than that. A patch of an Event that is gone (expired) creates it again.

Pure: time is passed in (wall seconds); the adapter (events_v1.py) writes what this returns.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.store.validation import check_dns_subdomain
from nodeagent.util.timefmt import micro_time

FINISH_TIME = 360.0
"""client-go tools/events finishTime: a series not seen for 6 minutes ends (written, forgotten)."""
REFRESH_TIME = 1800.0
"""client-go tools/events refreshTime: every 30 minutes the open series are written again."""

_REF_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
Ref = tuple[str, ...]
Key = tuple[str, str, str, str, str, Ref, Ref]


def reference(obj: Mapping[str, Any], field_path: str = "") -> dict[str, str]:
    """reference.GetReference: the object's kind, namespace, name, uid, apiVersion and
    resourceVersion (the version the caller holds), empty fields left out as Go's omitempty."""
    md = obj.get("metadata") or {}
    ref = {
        "kind": str(obj.get("kind") or ""),
        "namespace": str(md.get("namespace") or ""),
        "name": str(md.get("name") or ""),
        "uid": str(md.get("uid") or ""),
        "apiVersion": str(obj.get("apiVersion") or ""),
        "resourceVersion": str(md.get("resourceVersion") or ""),
        "fieldPath": field_path,
    }
    return {k: v for k, v in ref.items() if v}


def event_name(regarding_name: str, nanos: int) -> str:
    """util.GenerateEventName: `<name>.<%x of UnixNano>`, a uuid when that is no DNS subdomain."""
    name = f"{regarding_name}.{nanos:x}"
    try:
        check_dns_subdomain("metadata.name", name)
    except ValidationError:
        return str(uuid.uuid4())
    return name


def make_event(
    regarding: Mapping[str, Any], *, type_: str, reason: str, action: str, note: str, now: float,
    controller: str, instance: str, related: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """recorderImpl.makeEvent, in the store's core/v1 names."""
    ref = reference(regarding)
    event: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name(ref.get("name", ""), round(now * 1e9)),
                     "namespace": ref.get("namespace") or "default"},
        "involvedObject": ref,
        "reason": reason,
        "message": note,
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "type": type_,
        "eventTime": micro_time(now),
        "action": action,
        "reportingComponent": controller,
        "reportingInstance": instance,
    }
    if related is not None:
        event["related"] = reference(related)
    return event


def event_key(event: Mapping[str, Any]) -> Key:
    """getKey: the fields that make two events isomorphic (the note is not one)."""

    def ref(value: Any) -> Ref:
        value = value or {}
        return tuple(str(value.get(f) or "") for f in _REF_FIELDS)

    return (str(event.get("type") or ""), str(event.get("action") or ""), str(event.get("reason") or ""),
            str(event.get("reportingComponent") or ""), str(event.get("reportingInstance") or ""),
            ref(event.get("involvedObject")), ref(event.get("related")))


@dataclass(frozen=True)
class Write:
    """What to write: `event` created (`patch` False), or its `series` patched into the Event of
    its name (`patch` True; created with the series when that Event is gone)."""

    event: dict[str, Any]
    patch: bool


@dataclass
class _Entry:
    event: dict[str, Any]  # as first created; the series is added on write
    event_time: float
    count: int = 1  # 1: no series yet
    last_observed: float = 0.0

    def write(self) -> Write:
        if self.count < 2:
            return Write(dict(self.event), patch=False)
        series = {"count": self.count, "lastObservedTime": micro_time(self.last_observed)}
        return Write({**self.event, "series": series}, patch=True)


class SeriesCache:
    """eventBroadcasterImpl's eventCache and its decisions (recordToSink, refreshExistingEventSeries,
    finishSeries); holds one entry per isomorphic key until its series ends."""

    def __init__(self) -> None:
        self._entries: dict[Key, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def observe(self, event: Mapping[str, Any], now: float) -> Write | None:
        """An event was recorded at `now`: the write it takes, or None (a series counted in memory)."""
        key = event_key(event)
        entry = self._entries.get(key)
        if entry is None:
            self._entries[key] = entry = _Entry(dict(event), now)
            return entry.write()
        entry.count += 1
        entry.last_observed = now
        return entry.write() if entry.count == 2 else None

    def refresh(self) -> list[Write]:
        """refreshExistingEventSeries: every open series written again."""
        return [entry.write() for entry in self._entries.values() if entry.count >= 2]

    def finish(self, now: float) -> list[Write]:
        """finishSeries: series not observed for FINISH_TIME are written a last time; they and lone
        events older than FINISH_TIME leave the cache (their next repeat starts a new Event)."""
        out: list[Write] = []
        for key, entry in list(self._entries.items()):
            if entry.count >= 2:
                if entry.last_observed < now - FINISH_TIME:
                    out.append(entry.write())
                    del self._entries[key]
            elif entry.event_time < now - FINISH_TIME:
                del self._entries[key]
        return out
