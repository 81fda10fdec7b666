"""What a fault is: one rule that delays, fails, drops or refuses calls of the node, and how it is spelt.

Faults are staged from the kubelet's side: on the calls the node makes to plugins (device
plugin, DRA driver, plugin registration) and on the calls it serves (pod-resources, the Pods
API, device-plugin Register). A rule names the method (the gRPC method name, as upstream
spells it), optionally the plugin (extended resource name or DRA driver name), the action,
and how often: the next `count` matching calls, each matching call with `probability`, both
(the next `count` of those picked), or neither (every matching call until cleared).

The same spelling is used by the admin API, the CLI and the config timeline, so the one
parser here (`parse_rule`) gives the same field-path errors everywhere. Pure: no grpc.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from nodeagent.errors import ValidationError

DELAY = "delay"
FAIL = "fail"
DROP = "drop"
REFUSE = "refuse"
ACTIONS = (DELAY, FAIL, DROP, REFUSE)

CLIENT = "client"  # a call the node makes to a plugin
SERVER = "server"  # a call the node serves

# method -> (side, streaming, what it belongs to). Wire names exactly as upstream's services.
METHODS: Mapping[str, tuple[str, bool, str]] = {
    "GetDevicePluginOptions": (CLIENT, False, "v1beta1.DevicePlugin"),
    "ListAndWatch": (CLIENT, True, "v1beta1.DevicePlugin"),
    "GetPreferredAllocation": (CLIENT, False, "v1beta1.DevicePlugin"),
    "Allocate": (CLIENT, False, "v1beta1.DevicePlugin"),
    "PreStartContainer": (CLIENT, False, "v1beta1.DevicePlugin"),
    "NodePrepareResources": (CLIENT, False, "DRAPlugin"),
    "NodeUnprepareResources": (CLIENT, False, "DRAPlugin"),
    "NodeWatchResources": (CLIENT, True, "DRAResourceHealth"),
    "GetInfo": (CLIENT, False, "pluginregistration.Registration"),
    "NotifyRegistrationStatus": (CLIENT, False, "pluginregistration.Registration"),
    "Register": (SERVER, False, "v1beta1.Registration"),
    "List": (SERVER, False, "PodResourcesLister"),
    "Get": (SERVER, False, "PodResourcesLister"),
    "GetAllocatableResources": (SERVER, False, "PodResourcesLister"),
    "ListPods": (SERVER, False, "v1alpha1.Pods"),
    "GetPod": (SERVER, False, "v1alpha1.Pods"),
    "WatchPods": (SERVER, True, "v1alpha1.Pods"),
}

# The gRPC status codes a fail rule may answer with (grpc's names; OK is not a failure).
CODES = (
    "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
    "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
)
DEFAULT_MESSAGE = "fault injected by nodeagent"
REFUSE_MESSAGE = "registration refused by a nodeagent fault"

KUBELET_RESTART = "kubelet-restart"  # a timeline entry's action that is not a fault rule

RULE_KEYS = frozenset({"method", "plugin", "action", "code", "message", "delay", "count", "probability"})


@dataclass(frozen=True)
class FaultRule:
    """One fault. `count` None: no bound; `probability` None: every matching call (1.0)."""

    action: str
    method: str = ""
    plugin: str = ""
    code: str = ""
    message: str = ""
    delay: float = 0.0
    count: int | None = None
    probability: float | None = None
    id: int = 0

    @property
    def side(self) -> str:
        if self.action == REFUSE:
            return SERVER
        return METHODS[self.method][0]

    def describe(self) -> str:
        """One line for listings and the call record: `fail UNAVAILABLE`, `delay 2s`, `drop`, `refuse`."""
        if self.action == FAIL:
            return f"fail {self.code}"
        if self.action == DELAY:
            return f"delay {self.delay:g}s"
        return self.action

    def to_dict(self) -> dict[str, Any]:
        """The rule as the config and the CLI spell it (no empty fields)."""
        out: dict[str, Any] = {"id": self.id, "action": self.action}
        for key, value in (("method", self.method), ("plugin", self.plugin), ("code", self.code),
                           ("message", self.message)):
            if value:
                out[key] = value
        if self.action == DELAY:
            out["delay"] = f"{self.delay:g}s"
        if self.count is not None:
            out["count"] = self.count
        if self.probability is not None:
            out["probability"] = self.probability
        return out


def _text(doc: Mapping[str, Any], key: str, path: str) -> str:
    value = doc.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"{path}.{key}", f"expected string, got {type(value).__name__}")
    return value


def parse_seconds(value: object, path: str) -> float:
    """A duration: a number of seconds or Go-style text ("500ms", "2s", "1m30s")."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _go_duration(value, path)
    else:
        raise ValidationError(path, f"expected duration, got {type(value).__name__}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValidationError(path, "must be a finite, non-negative duration")
    return seconds


_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _go_duration(text: str, path: str) -> float:
    rest, total = text.strip(), 0.0
    if rest == "0":
        return 0.0
    if not rest:
        raise ValidationError(path, 'invalid duration ""')
    while rest:
        i = 0
        while i < len(rest) and (rest[i].isdigit() or rest[i] == "."):
            i += 1
        j = i
        while j < len(rest) and not (rest[j].isdigit() or rest[j] == "."):
            j += 1
        number, unit = rest[:i], rest[i:j]
        if not number or unit not in _UNITS:
            raise ValidationError(path, f'invalid duration "{text}"')
        try:
            total += float(number) * _UNITS[unit]
        except ValueError:
            raise ValidationError(path, f'invalid duration "{text}"') from None
        rest = rest[j:]
    return total


def parse_rule(doc: Mapping[str, Any], path: str, extra_keys: frozenset[str] = frozenset()) -> FaultRule:
    """Validate one rule; errors name the field path (`faults[0].code: ...`)."""
    for key in doc:
        if key not in RULE_KEYS and key not in extra_keys:
            raise ValidationError(f"{path}.{key}", "unknown field")
    action = _text(doc, "action", path)
    if action not in ACTIONS:
        raise ValidationError(f"{path}.action", f'unsupported value "{action}": one of {", ".join(ACTIONS)}')
    method = _text(doc, "method", path)
    plugin = _text(doc, "plugin", path)
    message = _text(doc, "message", path)
    if action == REFUSE:
        if method:
            raise ValidationError(f"{path}.method", "a refuse rule applies to registrations: leave method empty")
    elif not method:
        raise ValidationError(f"{path}.method", f"Required value: one of {', '.join(METHODS)}")
    elif method not in METHODS:
        raise ValidationError(f"{path}.method", f'unsupported value "{method}": one of {", ".join(METHODS)}')
    if method and plugin and METHODS[method][0] == SERVER and method != "Register":
        raise ValidationError(f"{path}.plugin", f"{method} is served to clients, not called on a plugin: "
                                                "leave plugin empty")
    code = _text(doc, "code", path)
    if action == FAIL:
        code = code or "UNAVAILABLE"
        if code.upper() not in CODES:
            raise ValidationError(f"{path}.code", f'unsupported value "{code}": one of {", ".join(CODES)}')
        code = code.upper()
        message = message or DEFAULT_MESSAGE
    elif code:
        raise ValidationError(f"{path}.code", f"only a fail rule has a status code, not a {action} rule")
    delay = 0.0
    if action == DELAY:
        if doc.get("delay") is None:
            raise ValidationError(f"{path}.delay", "Required value: how long to delay each call")
        delay = parse_seconds(doc["delay"], f"{path}.delay")
        if delay <= 0:
            raise ValidationError(f"{path}.delay", "must be positive")
    elif doc.get("delay") is not None:
        raise ValidationError(f"{path}.delay", f"only a delay rule has a delay, not a {action} rule")
    if action == DROP and not METHODS[method][1]:
        streams = ", ".join(m for m, (_, streaming, _) in METHODS.items() if streaming and METHODS[m][0] == CLIENT)
        raise ValidationError(f"{path}.method", f"only a stream can be dropped ({streams}), not {method}")
    if action == DROP and METHODS[method][0] != CLIENT:
        raise ValidationError(f"{path}.method", f"{method} is served by the node; only streams to plugins drop")
    count = _count(doc.get("count"), f"{path}.count")
    probability = _probability(doc.get("probability"), f"{path}.probability")
    return FaultRule(action=action, method=method, plugin=plugin, code=code, message=message, delay=delay,
                     count=count, probability=probability)


def _count(value: object, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(path, f"expected integer, got {type(value).__name__}")
    if value < 1:
        raise ValidationError(path, "must be at least 1")
    return value


def _probability(value: object, path: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(path, f"expected number, got {type(value).__name__}")
    if not math.isfinite(value) or not 0 < value <= 1:
        raise ValidationError(path, "must be in (0, 1]")
    return float(value)


def with_id(rule: FaultRule, rule_id: int) -> FaultRule:
    return replace(rule, id=rule_id)


@dataclass(frozen=True)
class TimelineEntry:
    """One entry of the config's fault timeline (parsed by nodeagent.config.faults, played by timeline.py)."""

    at: float  # seconds after the daemon is ready
    rule: FaultRule | None = None  # None: a kubelet restart
