"""The shared tables read and write the same bytes Go does, through both of their users.

Why: the API server's decoder and the Pods API's encoder used to read two copies of the tables;
now they read one, so one Go golden checks both directions over the Pod's whole message tree
(tests/fixtures/podsapi: `(*v1.Pod).Marshal()` of pod.json by k8s.io/api). The decoder is reached
below its envelope (the golden is a bare Pod message), on the same tables and wire code the API
server reads protobuf Pod bodies with.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from nodeagent.apiserver.protobuf import decoder
from nodeagent.podsapi.podproto import encode_pod

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "podsapi"


def _golden() -> tuple[dict[str, Any], bytes]:
    pod = json.loads((FIXTURES / "pod.json").read_text())
    return pod, bytes.fromhex((FIXTURES / "pod.go-marshal.hex").read_text().strip())


def test_go_bytes_decode_to_the_pod_as_encoding_json_writes_it() -> None:
    pod, go_bytes = _golden()
    want = copy.deepcopy(pod)
    # What Go's json.Unmarshal + Marshal + encoding/json make of pod.json, which the decoder mirrors:
    del want["spec"]["unknownField"]  # not a PodSpec field: dropped on the way into the struct
    for name in ("initContainers", "ephemeralContainers"):
        want["spec"][name][0]["resources"] = {}  # a non-pointer struct: written even when empty
    want["status"]["containerStatuses"][1]["lastState"] = {}  # likewise
    del want["status"]["conditions"][0]["lastProbeTime"]  # an unset Time: the decoder leaves it out
    terminated = want["status"]["containerStatuses"][1]["state"]["terminated"]
    terminated["finishedAt"] = "2024-05-01T10:22:00Z"  # metav1.Time keeps whole seconds
    assert decoder._message("core", "Pod", go_bytes, 0) == want


def test_a_pod_request_body_is_the_go_message_in_its_envelope() -> None:
    """What client-go's protobuf serializer sends for a Pod: runtime.Unknown{typeMeta, raw=Marshal()}."""
    _pod, go_bytes = _golden()
    type_meta = b"\x0a\x02v1\x12\x03Pod"
    body = (decoder.MAGIC + b"\x0a" + bytes([len(type_meta)]) + type_meta
            + b"\x12" + _varint(len(go_bytes)) + go_bytes)
    obj, api_version, kind = decoder.decode(body)
    assert (api_version, kind) == ("v1", "Pod")
    assert obj == {"apiVersion": "v1", "kind": "Pod", **decoder._message("core", "Pod", go_bytes, 0)}


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes([*out, n])


def test_decoded_pod_encodes_back_to_gos_bytes() -> None:
    _pod, go_bytes = _golden()
    assert encode_pod(decoder._message("core", "Pod", go_bytes, 0)) == go_bytes
