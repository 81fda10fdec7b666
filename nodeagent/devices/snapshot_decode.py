"""Decode ListAndWatch snapshots by what changed since the previous one of the stream.

Converting 100,000 protobuf devices (topology included) cost ~1 s per snapshot, and a
plugin flapping one device's health sends all of them each time. The wire bytes of two
such snapshots differ only around the records of the changed devices, and a repeated
message field is a plain run of (tag, length, record) items. So the decoder keeps the
previous snapshot's bytes, record offsets and devices; for a new one it finds the
common prefix and suffix of the two byte strings (C-speed slice comparisons), decodes
only the records between them, and takes every other device from the previous
snapshot. The devices produced are always exactly those a full decode would give (the
changed region must parse as whole records, else the snapshot is decoded in full);
when the changed records kept their ids and NUMA nodes, the snapshot also carries which
devices changed health (DeviceSnapshot.moved). Pure (protobuf decoding only), and run in
a worker thread for large snapshots: a decoder belongs to one stream, used by one
call at a time.
"""

from __future__ import annotations

import bisect

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2
from nodeagent.devices.convert import device_from_pb
from nodeagent.devices.model import Device
from nodeagent.devices.snapshot import DeviceSnapshot

_DEVICES_TAG = 0x0A  # ListAndWatchResponse.devices: field 1, length-delimited
DELTA_MIN = 256  # smaller snapshots are decoded in full


def _records(data: bytes, start: int, end: int) -> list[int] | None:
    """Start offsets of the device records in data[start:end]; None unless it is exactly whole
    `devices` records (any other field, or a record crossing `end`, makes it None)."""
    out = []
    pos = start
    while pos < end:
        if data[pos] != _DEVICES_TAG:
            return None
        out.append(pos)
        pos += 1
        length = shift = 0
        while True:
            if pos >= end:
                return None
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if shift > 63:
                return None
        pos += length
    return out if pos == end else None


def _common_prefix(a: bytes, b: bytes) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # a[:lo] == b[:lo] holds; find the largest such lo
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    lo, hi = 0, limit
    la, lb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class SnapshotDecoder:
    """Decodes the snapshots of one ListAndWatch stream; None for one equal to the previous."""

    def __init__(self, delta_min: int = DELTA_MIN) -> None:
        """`delta_min`: snapshots of at most this many devices are decoded in full (cheaper than
        the bookkeeping of a delta for a few devices); only an identical resend is skipped."""
        self._delta_min = delta_min
        self._data: bytes | None = None  # the previous snapshot's bytes (None before the first)
        self._offsets: list[int] | None = None  # its record starts, plus its length; None: full decodes
        self._devices: DeviceSnapshot | None = None

    def decode(self, msg: api_pb2.ListAndWatchResponse) -> DeviceSnapshot | None:
        data = msg.SerializeToString()
        old, offsets, devices = self._data, self._offsets, self._devices
        if old is not None and data == old:
            return None
        out = None
        large = len(msg.devices) > self._delta_min
        if large and old is not None and offsets is not None and devices is not None:
            out = self._delta(old, offsets, devices, data)
        if out is None:
            out = DeviceSnapshot(device_from_pb(d) for d in msg.devices)
            starts = _records(data, 0, len(data)) if large else None
            self._offsets = None if starts is None or len(starts) != len(out) else [*starts, len(data)]
        self._data, self._devices = data, out
        return out

    def _delta(self, old: bytes, offsets: list[int], devices: DeviceSnapshot, data: bytes) -> DeviceSnapshot | None:
        prefix = _common_prefix(old, data)
        suffix = _common_suffix(old, data, min(len(old), len(data)) - prefix)
        count = len(devices)
        # old records i..j (j exclusive) hold every differing byte: from the one containing
        # `prefix` to the one containing the last differing byte (none if only appended/removed at a boundary)
        i = bisect.bisect_right(offsets, prefix) - 1
        j = bisect.bisect_left(offsets, len(old) - suffix)
        i, j = max(0, min(i, count)), max(min(j, count), max(0, min(i, count)))
        delta = len(data) - len(old)
        start, end = offsets[i], offsets[j] + delta
        if end < start:
            return None
        starts = _records(data, start, end)
        if starts is None:
            return None
        fresh = [device_from_pb(api_pb2.Device.FromString(data[s + _header(data, s):e]))
                 for s, e in zip(starts, [*starts[1:], end][:len(starts)], strict=True)]
        same_layout = len(fresh) == j - i and all(
            f.id == d.id and f.numa_nodes == d.numa_nodes for f, d in zip(fresh, devices[i:j], strict=True))
        moved: tuple[Device, ...] | None = None
        if same_layout:
            moved = tuple(f for f, d in zip(fresh, devices[i:j], strict=True) if f.health != d.health)
        out = DeviceSnapshot(devices[:i] + fresh + devices[j:], base=devices, moved=moved)
        devices.base = None  # only the newest snapshot names its base: no chain of old snapshots
        if delta == 0 and len(fresh) == j - i:
            new_offsets = offsets
            if starts != offsets[i:j]:
                new_offsets = offsets[:i] + starts + offsets[j:]
        else:
            new_offsets = offsets[:i] + starts + [o + delta for o in offsets[j:]]
        self._offsets = new_offsets
        return out


def _header(data: bytes, pos: int) -> int:
    """Length of the tag and length varint of the record at `pos`."""
    n = 1
    while data[pos + n] & 0x80:
        n += 1
    return n + 1
