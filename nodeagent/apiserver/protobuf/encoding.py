"""The API server's protobuf answers: objects, lists, Status errors, metadata views and watch frames.

Why: client-go (kube-scheduler, kube-controller-manager, every typed clientset) asks built-in kinds
for `application/vnd.kubernetes.protobuf, */*` and decodes protobuf several times faster than JSON;
answered JSON, each of their informers paid JSON decoding for every object it ever saw. kube-apiserver
writes each answer through apimachinery's protobuf serializer: the `k8s\\x00` runtime.Unknown
envelope {typeMeta, raw = the typed message}; a watch stream is metav1.WatchEvent messages, each
framed by its 4-byte big-endian length, whose object is such an envelope. Which kinds have a message
is kinds.py's table (the same the request decoder reads); the byte rules are the shared encoder's
(nodeagent.protowire.encoder). Pure: dicts in, bytes out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.protobuf.kinds import KINDS
from nodeagent.protowire.encoder import EncodeError, Memo, encode_list, encode_message, envelope, watch_event

META_V1 = "meta.k8s.io/v1"


def has_message(api_version: str, kind: str) -> bool:
    """Whether answers of this kind can be protobuf (a table describes its message)."""
    return (api_version, kind) in KINDS


def encode_object(doc: Mapping[str, Any], api_version: str = "", kind: str = "", memo: Memo | None = None) -> bytes:
    """One object in its envelope; its apiVersion/kind (or the given ones) pick the message. Status,
    PartialObjectMetadata and the kinds' Lists are messages of their own (meta.k8s.io). `memo`: the
    encoder's memo of stored versions' bytes (encoder.Memo), for documents made of stored versions."""
    api_version = str(doc.get("apiVersion") or api_version)
    kind = str(doc.get("kind") or kind)
    if kind == "Status":
        return envelope("v1", "Status", encode_message("meta", "Status", doc))
    if kind == "PartialObjectMetadata":
        return envelope(api_version, kind, encode_message("meta", kind, doc, memo))
    if kind == "PartialObjectMetadataList":
        return envelope(api_version, kind, encode_list("meta", "PartialObjectMetadata", doc, memo))
    target = KINDS.get((api_version, kind))
    if target is None and kind.endswith("List"):
        item = KINDS.get((api_version, kind[:-4]))
        if item is not None:
            return envelope(api_version, kind, encode_list(item[0], item[1], doc, memo))
    if target is None:
        raise KeyError(f"no protobuf message for {kind} in {api_version!r}")
    return envelope(api_version, kind, encode_message(target[0], target[1], doc, memo))


def encode_event(event_type: str, obj: Mapping[str, Any], api_version: str = "", kind: str = "",
                 memo: Memo | None = None) -> bytes:
    """One watch event frame (ADDED/MODIFIED/DELETED/BOOKMARK with the kind's object, ERROR with a Status)."""
    return watch_event(event_type, encode_object(obj, api_version, kind, memo))


_PART_SIZES: dict[int, tuple[Any, int]] = {}
"""id(part) -> (the part, the bytes its field adds): the spec of a huge pod is weighed once, not at each
of its status writes (a new version shares the unchanged dicts of the one it replaces) nor again in the
same write's retry without managedFields. An entry keeps its part alive, so its id is not reused; the
store's committed parts are never changed."""
_PARTS_MAX = 32


def stored_size(_info: object, obj: Mapping[str, Any]) -> int | None:
    """The length of `obj` as kube-apiserver stores it in etcd (its protobuf envelope, no
    resourceVersion: etcd's revision is it), for the store's size limit (store/limits.py); None for a
    kind without a message here, or a value the encoder refuses: weighed as JSON. Only objects whose
    JSON is near the limit come here. Weighed field by field (a message's fields add up): the bytes of
    {field: value} less those of {}, each big part remembered (_PART_SIZES)."""
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    target = KINDS.get((api_version, kind))
    if target is None:
        return None
    package, name = target
    try:
        base = len(encode_message(package, name, {}))
        raw = base
        for key, value in obj.items():
            if key in ("apiVersion", "kind"):
                continue
            if key == "metadata" and isinstance(value, Mapping) and "resourceVersion" in value:
                value = {k: v for k, v in value.items() if k != "resourceVersion"}
            part = key != "metadata" and isinstance(value, dict | list)
            hit = _PART_SIZES.get(id(value)) if part else None
            if hit is not None and hit[0] is value:
                raw += hit[1]
                continue
            size = len(encode_message(package, name, {key: value})) - base
            if part:
                if len(_PART_SIZES) >= _PARTS_MAX:
                    _PART_SIZES.clear()
                _PART_SIZES[id(value)] = (value, size)
            raw += size
    except EncodeError:
        return None
    type_meta = len(envelope(api_version, kind, b""))  # the envelope around an empty raw
    return type_meta - 2 + 1 + _varint_len(raw) + raw


def _varint_len(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)
