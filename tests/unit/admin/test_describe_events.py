"""describe's Events section reads both event shapes as kubectl describe does: a core/v1 event's
source and lastTimestamp; an events.k8s.io/v1 one's (the scheduler's) reportingComponent and
series.lastObservedTime or eventTime, since it has no source, count or timestamps."""

from __future__ import annotations

from typing import Any

from nodeagent.admin.describe import describe_object

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}


def _row(text: str, reason: str) -> list[str]:
    [line] = [ln for ln in text.splitlines() if f" {reason} " in f" {ln} "]
    return line.split()


def test_events_of_both_recorders() -> None:
    core = {"type": "Normal", "reason": "Pulled", "message": "pulled", "source": {"component": "kubelet"},
            "lastTimestamp": "2027-01-15T07:59:00Z", "count": 1}
    lone: dict[str, Any] = {
        "type": "Normal", "reason": "Scheduled", "message": "bound", "source": {}, "firstTimestamp": None,
        "lastTimestamp": None, "eventTime": "2027-01-15T07:58:00.123456Z", "reportingComponent": "default-scheduler"}
    series = {**lone, "type": "Warning", "reason": "FailedScheduling", "message": "no fit",
              "series": {"count": 3, "lastObservedTime": "2027-01-15T07:59:30.000001Z"}}
    text = describe_object(POD, [core, lone, series], now=NOW)
    assert _row(text, "Pulled")[:4] == ["Normal", "Pulled", "60s", "kubelet"]
    assert _row(text, "Scheduled")[:4] == ["Normal", "Scheduled", "2m", "default-scheduler"]
    assert _row(text, "FailedScheduling")[:4] == ["Warning", "FailedScheduling", "30s", "default-scheduler"]
