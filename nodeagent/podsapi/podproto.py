"""A core/v1 Pod (its JSON shape, as the API serves it) -> the bytes `(*v1.Pod).Marshal()` writes.

Why: the kubelet's Pods API carries each pod as `bytes`, produced by k8s.io/api's generated
Marshal and read by clients with `(*v1.Pod).Unmarshal()`: the raw generated.proto message, not
the API server's `k8s\\x00` runtime.Unknown envelope. The encoding rules are the shared encoder's
(nodeagent.protowire.encoder), the same the API server answers protobuf with; this module only
names the message. Pure: dicts in, bytes out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.protowire.encoder import EncodeError, encode_message

PodEncodeError = EncodeError
"""The pod's JSON cannot be encoded (a value of the wrong type); the text names the field."""


def encode_pod(doc: Mapping[str, Any]) -> bytes:
    """The Pod `doc` (apiVersion/kind are not part of the message) as generated.proto bytes."""
    return encode_message("core", "Pod", doc)
