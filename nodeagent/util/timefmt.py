"""Ages as Kubernetes prints them (apimachinery's duration.HumanDuration), and metav1.MicroTime's text.

Why a module of its own: `kubectl describe` (nodeagent/pods/describe.py) and the API server's
table printers (nodeagent/apiserver/tables/) print the same ages (`5s`, `3m2s`, `2d3h`), and the
node side may not import the API server, so the one implementation lives below both. Pure: the
caller passes the duration; no clock is read here.
"""

from __future__ import annotations

import time


def micro_time(seconds: float) -> str:
    """metav1.MicroTime as the API writes it: 2026-11-24T01:59:16.123456Z (a Lease's renewTime, an
    events.k8s.io Event's eventTime)."""
    whole = int(seconds)
    micros = round((seconds - whole) * 1_000_000)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micros:06d}Z"


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration: about two significant figures (`5s`, `3m2s`, `4h`, `2d3h`)."""
    d = int(seconds * 1e9)  # Go's time.Duration counts nanoseconds; the branches truncate as Go does
    secs = _trunc(d, 10**9)
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    minutes = _trunc(d, 60 * 10**9)
    if minutes < 10:
        s = secs % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = _trunc(d, 3600 * 10**9)
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def _trunc(value: int, unit: int) -> int:
    """Integer division rounding toward zero, as Go's does."""
    q = abs(value) // unit
    return q if value >= 0 else -q
