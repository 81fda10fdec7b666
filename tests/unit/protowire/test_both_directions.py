"""The shared tables read and write the same bytes Go does, through both of their users.

Why: the API server's decoder and the Pods API's encoder used to read two copies of the tables;
now they read one, so one Go golden checks both directions over the Pod's whole message tree
(tests/fixtures/podsapi: `(*v1.Pod).Marshal()` of pod.json by k8s.io/api). The decoder is reached
below its envelope (the API server reads no Pod body, apiserver/protobuf/kinds.py), on the same
tables and wire code its served kinds use.
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


def test_decoded_pod_encodes_back_to_gos_bytes() -> None:
    _pod, go_bytes = _golden()
    assert encode_pod(decoder._message("core", "Pod", go_bytes, 0)) == go_bytes
