"""Typed field accessors for v1 Pod documents, with the API server's field paths and wording.

Why a module of its own: the metadata, container and resource parts of Pod parsing
(manifest.py, containers.py, resources.py) all read fields the same lenient way
(absent or null is empty) and must reject a wrong type with the same message
(`Invalid type: expected object, got string`), so they share these few helpers rather than
importing each other. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.objects.common import type_error
from nodeagent.store import validation as meta


def get_mapping(obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise type_error(path, value, "object")
    return value


def get_list(obj: Mapping[str, Any], key: str, path: str) -> Sequence[Any]:
    value = obj.get(key)
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise type_error(path, value, "array")
    return value


def get_str(obj: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise type_error(path, value, "string")
    return value


def get_string_map(obj: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    raw = get_mapping(obj, key, path)
    out: dict[str, str] = {}
    for k, v in raw.items():
        if not isinstance(v, str):
            raise type_error(f"{path}[{k}]", v, "string")
        out[str(k)] = v
    return out


def unique_label(raw: Mapping[str, Any], path: str, seen: set[str]) -> str:
    """`<path>.name`: required, a DNS label, not seen before in its list (recorded in `seen`)."""
    name = get_str(raw, "name", f"{path}.name")
    if not name:
        raise meta.required(f"{path}.name")
    meta.check_dns_label(f"{path}.name", name)
    if name in seen:
        raise meta.duplicate(f"{path}.name", name)
    seen.add(name)
    return name
