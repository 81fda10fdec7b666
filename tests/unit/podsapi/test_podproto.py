"""The Pods API's Pod encoding matches Go's (*v1.Pod).Marshal() byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodeagent.podsapi.podproto import PodEncodeError, encode_pod

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "podsapi"


def test_matches_go_marshal_of_a_rich_pod() -> None:
    pod = json.loads((FIXTURES / "pod.json").read_text())
    want = bytes.fromhex((FIXTURES / "pod.go-marshal.hex").read_text().strip())
    assert encode_pod(pod) == want


def test_minimal_pod_writes_every_non_pointer_field() -> None:
    # What Go writes for this pod (checked with k8s.io/api v0.34.13): ObjectMeta's strings, an
    # empty creationTimestamp, and the non-pointer fields of an empty spec and status.
    got = encode_pod({"metadata": {"name": "a", "namespace": "default", "uid": "u1"}})
    assert got.hex() == (
        "0a1a0a016112001a0764656661756c7422002a027531320038004200"
        "121c1a00320042004a0052005800600068008201008a01009a0100c20100"
        "1a130a001a0022002a0032004a005a007200880100"
    )


def test_pointer_fields_only_when_set() -> None:
    unset = encode_pod({"spec": {}})
    zero = encode_pod({"spec": {"terminationGracePeriodSeconds": 0}})
    # PodSpec field 4 (a *int64) appears, as varint 0, only when the JSON sets it.
    assert unset.hex().startswith("0a100a0012001a0022002a00320038004200121c1a00320042")
    assert zero.hex().startswith("0a100a0012001a0022002a00320038004200121e1a002000320042")


def test_negative_int32_is_a_ten_byte_varint() -> None:
    doc = {"status": {"containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": -1}}}]}}
    assert bytes.fromhex("08ffffffffffffffffff01") in encode_pod(doc)


def test_times_keep_whole_seconds_and_zero_time_is_empty() -> None:
    with_time = encode_pod({"metadata": {"creationTimestamp": "1970-01-01T00:00:10.5Z"}})
    assert bytes.fromhex("4204080a1000") in with_time  # seconds 10, nanos 0
    zero = encode_pod({"metadata": {"creationTimestamp": "0001-01-01T00:00:00Z"}})
    assert bytes.fromhex("4200") in zero


def test_unknown_fields_are_dropped() -> None:
    assert encode_pod({"spec": {"notAField": 1}}) == encode_pod({"spec": {}})


@pytest.mark.parametrize("doc, where", [
    ({"spec": {"containers": {}}}, "Pod.spec.containers"),
    ({"spec": {"priority": "high"}}, "Pod.spec.priority"),
    ({"metadata": {"labels": ["a"]}}, "Pod.metadata.labels"),
    ({"status": {"startTime": "yesterday"}}, "Pod.status.startTime"),
])
def test_wrong_types_name_the_field(doc: dict[str, object], where: str) -> None:
    with pytest.raises(PodEncodeError, match=where.replace(".", r"\.")):
        encode_pod(doc)
