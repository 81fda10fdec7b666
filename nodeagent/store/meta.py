"""Object metadata helpers for the store: copying, timestamps, generated names, API-server errors.

Messages are the API server's (`resourceclaims.resource.k8s.io "x" not found`, the
"object has been modified" conflict, `ResourceClaim.resource.k8s.io "x" is invalid: ...`)
so the CLI prints what kubectl users know. Pure: no I/O, randomness comes from the caller.
"""

from __future__ import annotations

import datetime
import functools
import pickle
import random
from typing import Any

import orjson

from nodeagent.errors import AlreadyExists, Conflict, NotFound, ValidationError
from nodeagent.store.kinds import KindInfo, Obj

Key = tuple[str, str, str]
"""(kind, namespace, name); namespace is "" for cluster-scoped kinds."""

_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The API server's generateName alphabet (no vowels, no confusable characters)."""
GENERATED_SUFFIX_LEN = 5
MAX_GENERATE_NAME_PREFIX = 63 - GENERATED_SUFFIX_LEN


def clone(value: Any) -> Any:
    """Deep-copy a JSON value. An orjson round trip runs in C: about twice as fast as a pickle
    round trip for pod-sized objects (and 6-12 times faster than copy.deepcopy); the store
    clones on every read and write. What orjson refuses (integers beyond 64 bits, non-JSON
    values a caller handed in) takes the pickle round trip, as before."""
    try:
        return orjson.loads(orjson.dumps(value))
    except orjson.JSONEncodeError:
        return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))


def rfc3339(seconds: float) -> str:
    """`2006-01-02T15:04:05Z`, the metav1.Time wire format (second precision, UTC)."""
    return _rfc3339(int(seconds))


@functools.lru_cache(maxsize=4)
def _rfc3339(seconds: int) -> str:
    # a pure function of the second: every write in a burst stamps the same few seconds
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def generated_name(prefix: str, rng: random.Random) -> str:
    """generateName + 5 random characters, the prefix cut as the API server does."""
    suffix = "".join(rng.choice(_NAME_ALPHABET) for _ in range(GENERATED_SUFFIX_LEN))
    return prefix[:MAX_GENERATE_NAME_PREFIX] + suffix


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def describe_key(key: Key) -> str:
    kind, ns, name = key
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def not_found(info: KindInfo, name: str) -> NotFound:
    return NotFound(f'{info.resource} "{name}" not found')


def already_exists(info: KindInfo, name: str) -> AlreadyExists:
    return AlreadyExists(f'{info.resource} "{name}" already exists')


def conflict(info: KindInfo, name: str) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {info.resource} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def uid_conflict(info: KindInfo, name: str, want: str, have: str) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {info.resource} "{name}": Precondition failed: '
        f"UID in precondition: {want}, UID in object meta: {have}"
    )


class ErrorList(ValidationError):
    """Several field errors at once (upstream's field.ErrorList), written `[path: detail, ...]`;
    InvalidObject.wrap lists each as a cause. The store's own, as objects/ may not be imported here."""

    def __init__(self, errors: list[ValidationError]) -> None:
        self.errors = errors
        super().__init__("", "[" + ", ".join(str(e) for e in errors) + "]")


class InvalidObject(ValidationError):
    """A ValidationError that also names the object, as the API server's 422 answer does.

    `path` and `detail` keep the hook's field path and text; `str()` reads
    `ResourceClaim.resource.k8s.io "x" is invalid: spec.devices.requests[0].name: Required value`.
    """

    def __init__(self, info: KindInfo, name: str, path: str, detail: str) -> None:
        super().__init__(path, detail)
        self.kind = info.kind
        self.name = name
        self.errors: list[ValidationError] = []
        where = f"{path}: {detail}" if path else detail
        self.args = (f'{info.group_kind} "{name}" is invalid: {where}',)

    def __str__(self) -> str:
        return str(self.args[0])

    @classmethod
    def wrap(cls, info: KindInfo, name: str, err: ValidationError) -> InvalidObject:
        if isinstance(err, InvalidObject):
            return err
        out = cls(info, name, err.path, err.detail)
        several = getattr(err, "errors", None)  # an ErrorList: the API server lists each as a cause
        if several:
            out.errors = list(several)
        return out
