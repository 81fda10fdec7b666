"""The stored size of a built-in kind's object (the store's size limit): its protobuf envelope as etcd
holds it, weighed field by field with the big parts remembered."""

from __future__ import annotations

from typing import Any

from nodeagent.apiserver.protobuf.encoding import encode_object, stored_size


def _pod(containers: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "u", "resourceVersion": "12345",
                         "labels": {"a": "b"}},
            "spec": {"containers": [{"name": f"c{i}", "image": "x", "terminationMessagePath": "/dev/termination-log"}
                                    for i in range(containers)]},
            "status": {"phase": "Pending"}}


def _without_rv(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}}


def test_the_size_is_the_envelopes_without_the_resource_version() -> None:
    for containers in (0, 1, 300):
        pod = _pod(containers)
        assert stored_size(None, pod) == len(encode_object(_without_rv(pod)))


def test_a_remembered_part_answers_for_the_same_dict_only() -> None:
    pod = _pod(50)
    first = stored_size(None, pod)
    # the next version shares the spec, its status is new: the sum is still the whole encoding
    running = {**pod, "status": {"phase": "Running", "containerStatuses": [
        {"name": f"c{i}", "image": "x", "ready": True} for i in range(50)]}}
    assert stored_size(None, running) == len(encode_object(_without_rv(running)))
    assert (stored_size(None, running) or 0) > (first or 0)
    # an equal spec in a new dict is weighed again, not taken for another
    other = {**running, "spec": {"containers": running["spec"]["containers"][:10]}}
    assert stored_size(None, other) == len(encode_object(_without_rv(other)))


def test_kinds_without_a_message_are_weighed_as_json() -> None:
    assert stored_size(None, {"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {}}) is None
