"""events.k8s.io/v1 Event (k8s.io/api events/v1 generated.proto).

Why: client-go's new event recorder (events.k8s.io) writes these through its typed client in
protobuf. Its references and legacy source are core/v1 messages. Notation: nodeagent.protowire.notation.
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

EVENTS_V1 = package({
    "Event": """
        1 metadata meta.ObjectMeta; 2 eventTime MicroTime; 3 series EventSeries*; 4 reportingController string
        5 reportingInstance string; 6 action string; 7 reason string; 8 regarding core.ObjectReference
        9 related core.ObjectReference*; 10 note string; 11 type string; 12 deprecatedSource core.EventSource
        13 deprecatedFirstTimestamp Time; 14 deprecatedLastTimestamp Time; 15 deprecatedCount int32""",
    "EventSeries": "1 count int32!; 2 lastObservedTime MicroTime",
})
