"""Field helpers shared by both documents: typed reads, field paths and ConfigError construction.

Every parser in this package reports errors as `<path>: <what is wrong>`, e.g.
`KubeletConfiguration.maxPods: expected integer, got string`. Keeping the path
builders, type checks, duration/cpuset/quantity/bind-address readers in one place is what keeps
those messages uniform across the KubeletConfiguration and NodeAgentConfiguration
parsers.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from nodeagent.errors import ConfigError
from nodeagent.util import quantity

T = TypeVar("T")


def key_path(parent: str, key: str) -> str:
    return f"{parent}.{key}"


def map_path(parent: str, key: object) -> str:
    return f'{parent}["{key}"]'


def type_name(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
            float: "number", type(None): "null"}.get(type(value), type(value).__name__)


def expect(value: object, kind: type[T] | tuple[type, ...], path: str, what: str) -> T:
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ConfigError(f"{path}: expected {what}, got boolean")
    if not isinstance(value, kind):
        raise ConfigError(f"{path}: expected {what}, got {type_name(value)}")
    return value  # type: ignore[return-value]


def check_keys(doc: Mapping[str, Any], allowed: set[str] | frozenset[str], path: str) -> None:
    for key in doc:
        if key not in allowed:
            raise ConfigError(f"{key_path(path, str(key))}: unknown field")


def quantity_map(value: object, path: str, allowed: frozenset[str] | None = None) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, raw in expect(value, dict, path, "object").items():
        p = map_path(path, key)
        if allowed is not None and key not in allowed:
            raise ConfigError(f"{p}: unsupported resource (one of {', '.join(sorted(allowed))})")
        try:
            out[str(key)] = quantity.parse_nonnegative(str(key), raw)
        except quantity.QuantityError as err:
            raise ConfigError(f"{p}: {err}") from None
    return out


_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: object, path: str) -> float:
    """Go duration text ("5m0s", "30s", "1h") or a number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{path}: duration must be a finite, non-negative number of seconds")
        return float(value)
    text = expect(value, str, path, "duration string")
    if text in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION_RE.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or pos == 0:
        raise ConfigError(f'{path}: invalid duration "{text}" (e.g. "30s", "5m0s")')
    return total


def parse_cpuset(value: object, path: str) -> tuple[int, ...]:
    """Linux cpuset list syntax: "0-3,8,10-11"."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    text = expect(value, str, path, "cpu list string").strip()
    if not text:
        return ()
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if m is None:
            raise ConfigError(f'{path}: invalid cpu list "{text}" (e.g. "0-1,4")')
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo:
            raise ConfigError(f'{path}: invalid cpu range "{part}"')
        cpus.update(range(lo, hi + 1))
    return tuple(sorted(cpus))


def as_bool(value: object, path: str) -> bool:
    return expect(value, bool, path, "boolean")


def as_str(value: object, path: str) -> str:
    return expect(value, str, path, "string")


def as_int(value: object, path: str, minimum: int | None = None) -> int:
    n = expect(value, int, path, "integer")
    if minimum is not None and n < minimum:
        raise ConfigError(f"{path}: must be at least {minimum}, got {n}")
    return n


def choice(value: object, path: str, choices: frozenset[str]) -> str:
    text = as_str(value, path)
    if text not in choices:
        raise ConfigError(f'{path}: unsupported value "{text}" (one of {", ".join(sorted(choices))})')
    return text


def split_host_port(address: str, path: str) -> tuple[str, int]:
    """A "host:port" bind address (host required, IPv6 in brackets) as (host without brackets, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f'{path}: expected "host:port", got "{address}"')
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    """Whether a bind host is a loopback one ("localhost" or a loopback IP), where the API
    server may allow anonymous access."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ConfigErrors(ConfigError):
    """Several configuration errors reported at once (as kube-apiserver reports every field error of
    an object, not the first): one `path: message` per line after a count."""

    def __init__(self, messages: list[str]) -> None:
        self.messages = list(messages)
        super().__init__(f"{len(messages)} configuration errors:\n  " + "\n  ".join(messages))


def messages_of(err: ConfigError) -> list[str]:
    return err.messages if isinstance(err, ConfigErrors) else [str(err)]


def raise_all(messages: list[str]) -> None:
    """Raise what was collected: nothing, the one error as it is, or every error at once."""
    if len(messages) == 1:
        raise ConfigError(messages[0])
    if messages:
        raise ConfigErrors(messages)


class Collector:
    """Collects the ConfigErrors of independent parses so that all of them are reported together."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def run(self, parse: Callable[[], T]) -> T | None:
        try:
            return parse()
        except ConfigError as err:
            self.messages.extend(messages_of(err))
            return None

    def add(self, message: str) -> None:
        self.messages.append(message)

    def raise_all(self) -> None:
        raise_all(self.messages)
