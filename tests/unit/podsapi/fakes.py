"""A PodsView over a dict, for the Pods API tests (unit and rpc)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def pod(uid: str, name: str, phase: str = "Pending", namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "node-1"},
        "status": {"phase": phase},
    }


class FakePods:
    """The node's pods; every change bumps the generation, as the pod manager's does."""

    def __init__(self) -> None:
        self.docs: dict[str, dict[str, Any]] = {}
        self._generation = 0
        self.reads = 0

    def put(self, doc: dict[str, Any]) -> None:
        self.docs[doc["metadata"]["uid"]] = doc
        self._generation += 1

    def remove(self, uid: str) -> None:
        del self.docs[uid]
        self._generation += 1

    def generation(self) -> int:
        return self._generation

    def pods(self) -> Mapping[str, Mapping[str, Any]]:
        self.reads += 1
        return dict(self.docs)


def _fields(data: bytes) -> dict[int, list[bytes | int]]:
    """A protobuf message's fields (number -> values), enough to read a few Pod fields back."""
    out: dict[int, list[bytes | int]] = {}
    pos = 0

    def varint() -> int:
        nonlocal pos
        value = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while pos < len(data):
        tag = varint()
        if tag & 7 == 0:
            out.setdefault(tag >> 3, []).append(varint())
        else:
            size = varint()
            out.setdefault(tag >> 3, []).append(data[pos:pos + size])
            pos += size
    return out


def read_pod(raw: bytes) -> tuple[str, str, str, str]:
    """(namespace, name, uid, status.phase) of a Pod in generated.proto bytes."""
    pod = _fields(raw)
    meta = _fields(pod[1][0]) if 1 in pod else {}  # type: ignore[arg-type]
    status = _fields(pod[3][0]) if 3 in pod else {}  # type: ignore[arg-type]

    def text(fields: dict[int, list[bytes | int]], n: int) -> str:
        value = fields.get(n, [b""])[0]
        return value.decode() if isinstance(value, bytes) else str(value)

    return text(meta, 3), text(meta, 1), text(meta, 5), text(status, 1)
