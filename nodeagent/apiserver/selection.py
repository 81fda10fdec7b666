"""List options: label and field selectors, limit/continue tokens, resourceVersion semantics.

Why apart from the registry: list and watch read the same options and filter the same way,
and their errors are the API server's 400s (`field label not supported: spec.foo`, the
selector parser's texts, `continue key is not valid`). Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.apiserver.errors import APIError, bad_request
from nodeagent.errors import ValidationError
from nodeagent.kinds.model import FieldGetter
from nodeagent.store.selectors import Selector, parse_selector


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    equal: bool


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any], getters: Mapping[str, FieldGetter]) -> bool:
        return all((getters[req.field](obj) == req.value) == req.equal for req in self.requirements)

    def exact(self, field: str) -> str | None:
        """The value a requirement pins `field` to (`field=value`), for index-like shortcuts."""
        for req in self.requirements:
            if req.field == field and req.equal:
                return req.value
        return None


def parse_field_selector(text: str, getters: Mapping[str, FieldGetter], kind: str, version: str) -> FieldSelector:
    """`a=b,c==d,e!=f` (fields.ParseSelector); every field must be one the kind supports, checked after
    the whole text parsed, in its order (the handler's Selector.Transform over the parsed selector)."""
    reqs: list[FieldRequirement] = []
    for part in _split_unescaped(text):
        part = part.strip()
        if not part:
            continue
        name, value, equal = _requirement(part, text)
        reqs.append(FieldRequirement(name, _unescape(value), equal))
    for req in reqs:
        if req.field not in getters:
            raise bad_request(f'field label not supported: {req.field}')
    return FieldSelector(tuple(reqs))


def _requirement(part: str, text: str) -> tuple[str, str, bool]:
    """`a!=b`, `a==b` or `a=b` -> (field, value, equal)."""
    for op, equal in (("!=", False), ("==", True), ("=", True)):
        idx = part.find(op)
        if idx > 0:
            return part[:idx].strip(), part[idx + len(op):].strip(), equal
    raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")


def _split_unescaped(text: str) -> list[str]:
    parts, cur, escaped = [], "", False
    for ch in text:
        if escaped:
            cur += "\\" + ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _unescape(value: str) -> str:
    return value.replace("\\,", ",").replace("\\=", "=").replace("\\\\", "\\")


def parse_label_selector(text: str) -> Selector:
    try:
        return parse_selector(text)
    except ValidationError as err:
        raise bad_request(f"unable to parse requirement: {err.detail}") from None


@dataclass(frozen=True)
class Continue:
    """Where a paginated list goes on: after `key` (namespace, name), at resourceVersion `rv`."""

    rv: int
    key: tuple[str, str]


def encode_continue(rv: int, key: tuple[str, str]) -> str:
    doc = {"v": "meta.k8s.io/v1", "rv": rv, "start": f"{key[0]}/{key[1]}\x00"}
    return base64.urlsafe_b64encode(json.dumps(doc, separators=(",", ":")).encode()).decode()


def decode_continue(token: str) -> Continue:
    try:
        doc = json.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        start = str(doc["start"]).rstrip("\x00")
        ns, _, name = start.partition("/")
        return Continue(int(doc["rv"]), (ns, name))
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise bad_request("continue key is not valid: incorrect encoded start resourceVersion (version "
                          "meta.k8s.io/v1)") from None


def parse_int(value: str | None, name: str, *, minimum: int = 0) -> int | None:
    if value is None or value == "":
        return None
    try:
        out = int(value)
    except ValueError:
        raise bad_request(f'{name}: Invalid value: "{value}": must be an integer') from None
    if out < minimum:
        raise bad_request(f'{name}: Invalid value: {out}: must be greater than or equal to {minimum}')
    return out


def parse_resource_version(value: str | None) -> int | None:
    if value is None or value == "":
        return None
    try:
        rv = int(value)
    except ValueError:
        raise APIError(400, "BadRequest", f'invalid resource version "{value}"') from None
    if rv < 0:
        raise APIError(400, "BadRequest", f'invalid resource version "{value}"')
    return rv


def query_bool(value: str | None) -> bool:
    """A boolean query parameter as the API server converts it (Convert_Slice_string_To_bool):
    absent, empty, "0" and "false" in any case are false, anything else true ("True" from the
    Python clients too)."""
    return bool(value) and value != "0" and value.lower() != "false"  # type: ignore[union-attr]
