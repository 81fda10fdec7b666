"""An in-memory, bounded event recorder with the kubelet's event semantics.

Events are what `kubectl describe` shows at the bottom: type (Normal/Warning), reason,
message, the involved object, a count and first/last timestamps. Like the client-go
event correlator, a repeat of the same (object, type, reason, message) bumps the count
instead of adding a row. The oldest events are dropped beyond `max_events`. Not durable:
the kubelet's events live in the API server with a TTL; ours live as long as the daemon.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nodeagent.objects.pod.model import Pod
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"


@dataclass(frozen=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    field_path: str = ""
    """involvedObject.fieldPath: the container an event is about (kubecontainer.GenerateContainerRef)."""

    @classmethod
    def for_pod(cls, pod: Pod) -> ObjectRef:
        return cls("Pod", pod.name, pod.namespace, pod.uid)

    @classmethod
    def for_container(cls, pod: Pod, name: str, *, init: bool | None = None) -> ObjectRef:
        """The pod with the container's field path, as the kubelet's container events name it:
        spec.containers{NAME}, or spec.initContainers{NAME} for an init container (sidecars too).
        `init`: whether it is an init container, when the caller knows (container names are unique
        across both lists); else found by a scan of the pod's containers, which a caller naming each
        of 10,000 containers must not pay for each (issue 25)."""
        in_init = init if init is not None else (
            not any(c.name == name for c in pod.containers) and any(c.name == name for c in pod.init_containers))
        field = "initContainers" if in_init else "containers"
        return cls("Pod", pod.name, pod.namespace, pod.uid, f"spec.{field}{{{name}}}")


@dataclass(frozen=True)
class Event:
    involved: ObjectRef
    type: str
    reason: str
    message: str
    count: int
    first_timestamp: float
    last_timestamp: float
    source: str = "kubelet"
    host: str = ""


class EventRecorder:
    def __init__(self, *, clock: Clock, host: str = "", max_events: int = 1000) -> None:
        self._clock = clock
        self._host = host
        self._max = max_events
        self._events: OrderedDict[tuple[ObjectRef, str, str, str], Event] = OrderedDict()
        self._sinks: list[Callable[[Event], None]] = []

    def add_sink(self, sink: Callable[[Event], None]) -> None:
        """Also hand every recorded event to `sink` (the daemon posts them to the API as Events,
        as the kubelet does); a failing sink is logged, never raised to the recorder's caller."""
        self._sinks.append(sink)

    @property
    def posted(self) -> bool:
        """True when events also go to the API: readers of the API need not merge these in."""
        return bool(self._sinks)

    def record(
        self, ref: ObjectRef, type_: str, reason: str, message: str, *, source: str = "kubelet"
    ) -> Event:
        key = (ref, type_, reason, message)
        now = self._clock.now()
        old = self._events.pop(key, None)
        if old is not None:
            event = dataclasses.replace(old, count=old.count + 1, last_timestamp=now)
        else:
            event = Event(ref, type_, reason, message, 1, now, now, source, self._host)
        self._events[key] = event
        while len(self._events) > self._max:
            self._events.popitem(last=False)
        for sink in self._sinks:
            try:
                sink(event)
            except Exception:
                logger.exception("event sink failed reason=%s object=%s/%s", reason, ref.namespace, ref.name)
        return event

    def normal(self, ref: ObjectRef, reason: str, message: str) -> Event:
        return self.record(ref, NORMAL, reason, message)

    def warning(self, ref: ObjectRef, reason: str, message: str) -> Event:
        return self.record(ref, WARNING, reason, message)

    def emit(self, kind: str, namespace: str, name: str, type_: str, reason: str, message: str) -> None:
        """Callable shape for subsystems that know an object only by kind and name (devices)."""
        self.record(ObjectRef(kind, name, namespace), type_, reason, message)

    def events(self) -> list[Event]:
        """All events, oldest first by first occurrence of the last repeat."""
        return sorted(self._events.values(), key=lambda e: (e.first_timestamp, e.last_timestamp))

    def for_object(self, kind: str, namespace: str, name: str, uid: str | None = None) -> list[Event]:
        """Events of one object; with `uid`, events recorded without a uid match as well."""
        return [
            e
            for e in self.events()
            if e.involved.kind == kind
            and e.involved.namespace == namespace
            and e.involved.name == name
            and (uid is None or e.involved.uid in (uid, ""))
        ]

    def for_pod(self, pod: Pod) -> list[Event]:
        return self.for_object("Pod", pod.namespace, pod.name, pod.uid)

    def forget(self, refs: Sequence[ObjectRef]) -> None:
        drop = set(refs)
        for key in [k for k in self._events if k[0] in drop]:
            del self._events[key]
