"""Pod records (pods/records.py) read back to the same pod and status; version 2 leaves unset
times and exit codes out (no null, so state.db stores it without its round-trip check) and
version-1 records, which wrote them as null, still read."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod.model import PodStatus
from nodeagent.pods import records
from nodeagent.pods import status as st
from nodeagent.state.db import encode
from nodeagent.util.clock import FakeClock

from .fakes import make_pod


def _statuses(clock: FakeClock) -> list[tuple[str, PodStatus]]:
    pod = make_pod("p", clock, cpu="100m")
    running = st.running_status(pod, "Burstable", 100.0)
    return [
        ("running", running),
        ("pending", st.pending_status(pod, "Burstable", "waiting for a driver", 100.0)),
        ("rejected", st.rejected_status("BestEffort", "OutOfcpu", "no room", 100.0)),
        ("finished", st.finished_status(running, 3, 160.0)),
        ("empty", PodStatus()),
    ]


@pytest.mark.parametrize("which", ["running", "pending", "rejected", "finished", "empty"])
@pytest.mark.parametrize("finish_at", [None, 250.5])
def test_records_read_back(which: str, finish_at: float | None, fake_clock: FakeClock) -> None:
    pod = make_pod("p", fake_clock, cpu="100m")
    status = dict(_statuses(fake_clock))[which]
    doc = records.entry_to_record(pod, status, holds_resources=True, finish_at=finish_at)
    records.check_version(doc, "k")
    assert doc["version"] == 2
    assert records.pod_from_record(doc["pod"]) == pod
    assert records.status_from_record(doc["status"]) == status
    assert doc.get("finishAt") == finish_at
    assert "null" not in encode(doc)  # nothing unset is written


def test_a_running_pod_keeps_its_times_and_exit_codes(fake_clock: FakeClock) -> None:
    pod = make_pod("p", fake_clock)
    finished = st.finished_status(st.running_status(pod, "BestEffort", 100.0), 0, 160.0)
    back = records.status_from_record(records.status_to_record(finished))
    assert back.start_time == 100.0
    assert [(c.exit_code, c.started_at, c.finished_at) for c in back.container_statuses] == [(0, 100.0, 160.0)]


def test_version_1_records_with_nulls_still_read(fake_clock: FakeClock) -> None:
    v1: dict[str, Any] = {
        "version": 1, "holdsResources": True, "finishAt": None,
        "status": {
            "phase": "Running", "reason": "", "message": "", "qosClass": "BestEffort", "startTime": 100.0,
            "conditions": [["Ready", "True", "", "", 100.0]],
            "containerStatuses": [{"name": "c", "state": "running", "reason": "", "exitCode": None,
                                   "startedAt": 100.0, "finishedAt": None, "allocatedResourcesStatus": []}],
            "initContainerStatuses": [],
        },
    }
    records.check_version(v1, "k")
    status = records.status_from_record(v1["status"])
    assert status.phase == "Running" and status.start_time == 100.0
    (cs,) = status.container_statuses
    assert (cs.exit_code, cs.started_at, cs.finished_at) == (None, 100.0, None)


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(NodeAgentError, match="pod record k: unsupported version 3"):
        records.check_version({"version": 3}, "k")
