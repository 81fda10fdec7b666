"""util/jsoncopy.py: a big JSON value is copied in pieces, the same value as an orjson round trip, and
no single orjson call reads back the whole of it (issue 25: a 3 MB pod's loads held the GIL 50-100 ms)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from nodeagent.store.meta import clone
from nodeagent.util import jsoncopy


def _huge_pod(containers: int) -> dict[str, Any]:
    names = [f"c{i}" for i in range(containers)]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "huge", "labels": {"a": "b"}, "managedFields": [{
            "manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:containers": {f'k:{{"name":"{n}"}}': {".": {}, "f:image": {}} for n in names}}},
        }]},
        "spec": {"containers": [{"name": n, "image": "x", "ports": [{"containerPort": 80}], "env": []}
                                for n in names], "restartPolicy": "Always", "priority": 0},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": n, "ready": True, "restartCount": 0, "started": True, "state": {"running": {"startedAt": "t"}},
             "resources": {"limits": {"cpu": 1.5}}} for n in names]},
    }


def _containers(value: Any) -> list[int]:
    """The ids of every dict and list in `value`."""
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out.append(id(v))
            stack.extend(v.values())
        elif isinstance(v, list):
            out.append(id(v))
            stack.extend(v)
    return out


@pytest.mark.parametrize("containers", [3, 5000])
def test_the_copy_is_the_round_trip_and_shares_nothing(containers: int) -> None:
    pod = _huge_pod(containers)
    text = orjson.dumps(pod)
    assert (len(text) >= jsoncopy.BIG_BYTES) == (containers > 100)
    copied = jsoncopy.loads_copy(pod, text)
    assert copied == orjson.loads(text) == pod
    assert orjson.dumps(copied) == text  # the same members in the same order
    assert not set(_containers(copied)) & set(_containers(pod))
    assert clone(pod) == pod


def test_no_single_call_reads_back_the_whole_value(monkeypatch: pytest.MonkeyPatch) -> None:
    pod = _huge_pod(5000)
    text = orjson.dumps(pod)
    read: list[int] = []

    class Recording:
        dumps = staticmethod(orjson.dumps)

        @staticmethod
        def loads(data: bytes) -> Any:
            read.append(len(data))
            return orjson.loads(data)

    monkeypatch.setattr(jsoncopy, "orjson", Recording)
    assert jsoncopy.loads_copy(pod, text) == pod
    assert read, "the big value was not read back through orjson"
    assert max(read) < len(text) / 4, (max(read), len(text))
