"""The watch handler's shared encoded-event cache keeps only what more than one watcher reads."""

from __future__ import annotations

import orjson

from nodeagent.apiserver.http import EventLines
from nodeagent.apiserver.watching import Event
from nodeagent.store.watch import WatchEvent


def _events(n: int) -> list[Event]:
    return [WatchEvent("ADDED", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": f"c{i}"}}, i + 1)
            for i in range(n)]


def test_a_lone_watcher_gets_its_lines_without_filling_the_cache() -> None:
    lines = EventLines()
    lines.join("configmaps")
    assert not lines.shared("configmaps")
    events = _events(3)
    data = lines.batch(events, "", shared=lines.shared("configmaps"))
    assert [orjson.loads(x) for x in data.splitlines()] == [{"type": "ADDED", "object": ev.object} for ev in events
                                                            if isinstance(ev, WatchEvent)]
    assert lines.batch(events, "", shared=False) is not data  # encoded again: nothing was kept
    assert lines.batch(events[:1], "", shared=False) == data.splitlines(keepends=True)[0]


def test_watchers_of_one_resource_share_one_encoding_until_one_is_left() -> None:
    lines = EventLines()
    lines.join("configmaps")
    lines.join("secrets")
    assert not lines.shared("configmaps")  # another resource's watcher reads other events
    lines.join("configmaps")
    assert lines.shared("configmaps")
    events = _events(2)
    first = lines.batch(events, "", shared=lines.shared("configmaps"))
    assert lines.batch(events, "", shared=lines.shared("configmaps")) is first
    assert lines.line(events[0]) is lines.line(events[0])  # a line of the batch was kept too
    lines.leave("configmaps")
    assert not lines.shared("configmaps")
    lines.leave("configmaps")
    lines.leave("configmaps")  # an extra leave does not go negative
    lines.join("configmaps")
    assert not lines.shared("configmaps")
