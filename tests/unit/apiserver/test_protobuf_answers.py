"""Watch events in protobuf as the API server's shared event cache writes them: the store's events and
the watch's own (BOOKMARK, ERROR with a Status), each a length-framed metav1.WatchEvent."""

from __future__ import annotations

from nodeagent.apiserver.errors import status_object
from nodeagent.apiserver.http import EventLines
from nodeagent.apiserver.protobuf import decoder
from nodeagent.store.watch import WatchEvent


def test_error_and_bookmark_events_are_framed_protobuf() -> None:
    lines = EventLines(proto=True)
    error = lines.line({"type": "ERROR", "object": status_object(410, "Expired", "too old resource version: 1 (5)")})
    bookmark = lines.line({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
                                                          "metadata": {"resourceVersion": "5"}}})
    events, rest = decoder.decode_watch(error + bookmark)
    assert rest == b""
    assert events[0] == ("ERROR", {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                   "message": "too old resource version: 1 (5)", "reason": "Expired", "code": 410})
    assert events[1][0] == "BOOKMARK" and events[1][1]["metadata"] == {"resourceVersion": "5"}


def test_store_events_are_encoded_once_per_event() -> None:
    lines = EventLines(proto=True)
    ev = WatchEvent("ADDED", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}}, 3)
    first = lines.batch([ev], "")
    assert lines.batch([ev], "") is first
    assert decoder.decode_watch(first)[0] == [("ADDED", {"kind": "ConfigMap", "apiVersion": "v1",
                                                         "metadata": {"name": "a"}})]


def test_an_answer_without_a_message_goes_as_json() -> None:
    """A kind the tables cannot write is answered JSON (client-go reads either by Content-Type), never a 500."""
    from nodeagent.apiserver.http import _answer
    from nodeagent.apiserver.routing import PROTOBUF, View

    doc = {"kind": "Nothing", "apiVersion": "example.com/v1", "metadata": {"name": "p"}}
    resp = _answer(doc, View("object", PROTOBUF))
    assert resp.content_type == "application/json"
    cm = _answer({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c"}}, View("object", PROTOBUF))
    assert cm.content_type == PROTOBUF
