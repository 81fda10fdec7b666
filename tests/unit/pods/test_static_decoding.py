"""Static pod files: read and parsed off the event loop; unknown fields dropped as the kubelet does, but named.

The kubelet's tryDecodeSinglePod decodes with the lenient UniversalDecoder, so an unknown field
(`nodeSelectr:`) is dropped without a word. nodeagent drops it too (the pod runs), and names each
field path with the file in a warning log line and a Warning event (UnknownField) on the pod.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import RUNNING
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.pods.static import MAX_CONFIG_LENGTH, StaticPodSource
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock
from nodeagent.wiring.node_resources import pod_unknown_fields

from .fakes import FakeAdmitter, FakeCgroups, FakeResources

TYPOS = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  lables: {app: web}
spec:
  nodeSelectr: {disk: ssd}
  containers:
  - name: web
    image: nginx
    resource: {}
"""


class Setup:
    def __init__(self, root: Path, clock: FakeClock) -> None:
        self.dir = root / "manifests"
        self.dir.mkdir()
        self.recorder = EventRecorder(clock=clock, host="node-a")
        self.manager = PodManager(
            node_name="node-a", resources=FakeResources({"cpu": 4000, "memory": 2**33, "pods": 10}),
            admitters=[FakeAdmitter("cpu")], cgroups=FakeCgroups(), db=StateDB.memory(), clock=clock,
            instruments=Instruments(CollectorRegistry()), recorder=self.recorder,
        )
        self.threads: list[str] = []
        known = pod_unknown_fields()

        def unknown(doc: Any) -> Sequence[str]:
            self.threads.append(threading.current_thread().name)
            return known(doc)

        self.source = StaticPodSource(path=self.dir, manager=self.manager, node_name="node-a", clock=clock,
                                      recorder=self.recorder, unknown_fields=unknown)


@pytest.fixture
async def env(tmp_path: Path, fake_clock: FakeClock) -> AsyncIterator[Setup]:
    s = Setup(tmp_path, fake_clock)
    yield s
    await s.manager.close()


async def test_unknown_fields_are_dropped_and_named(env: Setup, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    path = env.dir / "web.yaml"
    path.write_text(TYPOS)
    await env.source.sync_once()
    view = env.manager.get("default", "web-node-a")
    assert view.status.phase == RUNNING
    events = [e for e in env.recorder.events() if e.reason == "UnknownField"]
    assert len(events) == 1 and events[0].type == "Warning"
    assert events[0].message == (
        f'Static pod file {path}: unknown field "metadata.lables", unknown field "spec.nodeSelectr", '
        'unknown field "spec.containers[0].resource" (ignored)')
    assert any(str(path) in r.getMessage() and "spec.nodeSelectr" in r.getMessage() for r in caplog.records)
    await env.source.sync_once()  # unchanged: not named again
    assert len([e for e in env.recorder.events() if e.reason == "UnknownField"]) == 1


async def test_files_are_parsed_off_the_event_loop(env: Setup) -> None:
    (env.dir / "web.yaml").write_text(TYPOS)
    await env.source.sync_once()
    assert env.threads and threading.main_thread().name not in env.threads


async def test_file_over_the_limit_is_refused_without_reading_it_whole(env: Setup) -> None:
    big = env.dir / "big.yaml"
    with big.open("wb") as f:
        f.write(b"# " + b"x" * (MAX_CONFIG_LENGTH + 10) + b"\n")
    await env.source.sync_once()
    warnings = [e.message for e in env.recorder.events() if e.type == "Warning"]
    assert warnings == [f"Error validating static pod file {big} due to cannot read {big}: file is larger than "
                        f"{MAX_CONFIG_LENGTH} bytes, ignoring"]
    assert env.threads == []  # refused before any parse
