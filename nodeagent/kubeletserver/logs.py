"""What /containerLogs answers on a node where no container runs: what the node knows of the container.

Why: `kubectl logs` is the first thing a user types to see what a container got; a nodeagent
node has no container output, but it knows the container's lifecycle (the pod's events) and the
environment a runtime would have given it: the device plugins' Allocate envs first, then the
container's own env, then the env edits of the CDI devices it was given (device plugins' and
its DRA claims'), in the order the kubelet and a CDI-aware runtime apply them (a later value of
a name wins). The first line says so plainly, so nobody takes it for the container's output.
Options as the kubelet applies them to a log: timestamps (RFC 3339 prefix), tailLines,
limitBytes. Pure: data in, text out (CDI spec files are read by the caller).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LogEvent:
    time: float
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class EnvSource:
    """Env values from one source, in the order they apply: `source` names it in the text."""

    source: str
    values: tuple[tuple[str, str], ...]


def rfc3339(seconds: float, *, nano: bool = False) -> str:
    stamp = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    if nano:
        return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond * 1000:09d}Z"
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def spec_env(container: Mapping[str, Any]) -> EnvSource:
    """The container's env: literal values as given, references named (their values live in the API)."""
    out: list[tuple[str, str]] = []
    for item in container.get("env") or ():
        if not isinstance(item, Mapping) or not item.get("name"):
            continue
        if "valueFrom" in item and isinstance(item["valueFrom"], Mapping):
            ref = item["valueFrom"]
            kind = next(iter(ref), "valueFrom")
            found = ref.get(kind)
            target: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
            what = "/".join(str(target[k]) for k in ("name", "key", "fieldPath", "resource") if target.get(k))
            out.append((str(item["name"]), f"<{kind} {what}>".replace(" >", ">")))
        else:
            out.append((str(item["name"]), str(item.get("value", ""))))
    return EnvSource("spec", tuple(out))


def cdi_env(device_id: str, specs: Iterable[Mapping[str, Any]]) -> EnvSource | None:
    """The env edits of CDI device `vendor/class=name` in the specs given (the spec's own edits, then the
    device's); None when no spec defines it."""
    kind, sep, name = device_id.partition("=")
    if not sep:
        return None
    for spec in specs:
        if spec.get("kind") != kind:
            continue
        for device in spec.get("devices") or ():
            if isinstance(device, Mapping) and device.get("name") == name:
                values: list[tuple[str, str]] = []
                for edits in (spec.get("containerEdits"), device.get("containerEdits")):
                    for entry in (edits or {}).get("env") or () if isinstance(edits, Mapping) else ():
                        key, _, value = str(entry).partition("=")
                        values.append((key, value))
                return EnvSource(f"CDI {device_id}", tuple(values))
    return None


def resolve(sources: Sequence[EnvSource]) -> list[tuple[str, str, str]]:
    """(name, value, source) with later sources overriding earlier ones, in first-seen order."""
    merged: dict[str, tuple[str, str]] = {}
    for src in sources:
        for name, value in src.values:
            merged[name] = (value, src.source)
    return [(name, value, source) for name, (value, source) in merged.items()]


def container_text(
    namespace: str, pod: str, container: str, *, events: Sequence[LogEvent], sources: Sequence[EnvSource],
    state: str, unresolved: Sequence[str] = (),
) -> list[tuple[float | None, str]]:
    """The lines of the answer, each with the time it is about (None: no time of its own)."""
    lines: list[tuple[float | None, str]] = [
        (None, f"nodeagent runs no containers: this is not the output of container {container} of pod "
               f"{namespace}/{pod}, but what the node knows of it (its lifecycle events and resolved environment)"),
        (None, f"state: {state}"),
        (None, f"events of pod {namespace}/{pod}:"),
    ]
    if not events:
        lines.append((None, "  <none>"))
    for e in events:
        lines.append((e.time, f"  {rfc3339(e.time)} {e.type} {e.reason}: {e.message}"))
    lines.append((None, "environment (device plugins' Allocate, then the container's env, then CDI edits):"))
    resolved = resolve(sources)
    if not resolved:
        lines.append((None, "  <none>"))
    for name, value, source in resolved:
        lines.append((None, f"  {name}={value}\t# {source}"))
    for device_id in unresolved:
        lines.append((None, f"  # CDI device {device_id}: no spec found in the CDI directories, its edits unknown"))
    return lines


def render(lines: Sequence[tuple[float | None, str]], *, now: float, timestamps: bool = False,
           tail_lines: int | None = None, limit_bytes: int | None = None) -> bytes:
    """The log body as the kubelet cuts one: the last `tail_lines`, prefixed with times, at most `limit_bytes`."""
    chosen = list(lines) if tail_lines is None else (list(lines)[-tail_lines:] if tail_lines > 0 else [])
    text = "".join(
        (f"{rfc3339(when if when is not None else now, nano=True)} " if timestamps else "") + line + "\n"
        for when, line in chosen)
    body = text.encode()
    return body[:limit_bytes] if limit_bytes is not None else body
