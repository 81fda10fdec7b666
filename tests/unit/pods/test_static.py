"""Static pod directory: add, change, remove, bad files, naming and uid like the kubelet."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import RUNNING
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.pods.static import StaticPodSource, static_pod_from_manifest, static_pod_uid
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock
from nodeagent.util.fswatch import DirWatch, FakeWatch, InotifyWatch
from tests.waiting import eventually

from .fakes import FakeAdmitter, FakeCgroups, FakeResources

POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - name: etcd
    image: registry.k8s.io/etcd:3.5
    resources:
      requests:
        cpu: {cpu}
"""


class Setup:
    def __init__(self, root: Path, clock: FakeClock) -> None:
        self.dir = root / "manifests"
        self.dir.mkdir()
        self.clock = clock
        self.recorder = EventRecorder(clock=clock, host="node-a")
        self.cgroups = FakeCgroups()
        self.manager = PodManager(
            node_name="Node-A",
            resources=FakeResources({"cpu": 4000, "memory": 2**33, "pods": 10}),
            admitters=[FakeAdmitter("cpu")],
            cgroups=self.cgroups,
            db=StateDB.memory(),
            clock=clock,
            instruments=Instruments(CollectorRegistry()),
            recorder=self.recorder,
        )
        self.source = StaticPodSource(
            path=self.dir,
            manager=self.manager,
            node_name="Node-A",
            clock=clock,
            recorder=self.recorder,
            interval=20.0,
        )

    def names(self) -> list[str]:
        return [v.pod.key for v in self.manager.list()]

    def warnings(self) -> list[str]:
        return [e.message for e in self.recorder.events() if e.type == "Warning"]


@pytest.fixture
async def env(tmp_path: Path, fake_clock: FakeClock) -> AsyncIterator[Setup]:
    s = Setup(tmp_path, fake_clock)
    yield s
    await s.manager.close()


async def test_add_change_remove(env: Setup) -> None:
    (env.dir / "etcd.yaml").write_text(POD_YAML.format(cpu="500m"))
    (env.dir / "notes.txt").write_text("not a pod")
    (env.dir / ".hidden.yaml").write_text("garbage: [")
    await env.source.sync_once()
    assert env.names() == ["kube-system/etcd-node-a"]
    view = env.manager.get("kube-system", "etcd-node-a")
    assert view.status.phase == RUNNING
    assert view.pod.source == "file" and view.pod.node_name == "Node-A"
    assert len(view.pod.uid) == 32  # the kubelet's md5 hex
    assert view.pod.annotations["kubernetes.io/config.source"] == "file"
    assert view.pod.annotations["kubernetes.io/config.hash"] == view.pod.uid
    first_uid = view.pod.uid

    await env.source.sync_once()  # nothing changed
    assert env.manager.get("kube-system", "etcd-node-a").pod.uid == first_uid

    (env.dir / "etcd.yaml").write_text(POD_YAML.format(cpu="1"))
    await env.source.sync_once()
    view = env.manager.get("kube-system", "etcd-node-a")
    assert view.pod.uid != first_uid and view.pod.containers[0].requests == {"cpu": 1000}
    assert env.cgroups.removed == ["etcd-node-a"]

    (env.dir / "etcd.yaml").unlink()
    await env.source.sync_once()
    assert env.names() == []


async def test_json_file(env: Setup) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "api"},
        "spec": {"containers": [{"name": "a", "image": "x"}]},
    }
    (env.dir / "api.json").write_text(json.dumps(doc))
    await env.source.sync_once()
    assert env.names() == ["default/api-node-a"]


async def test_bad_file_warns_once_and_never_crashes(env: Setup) -> None:
    (env.dir / "bad.yaml").write_text(POD_YAML.format(cpu="lots"))
    (env.dir / "broken.yml").write_text("apiVersion: v1\nkind: [\n")
    (env.dir / "good.yaml").write_text(POD_YAML.format(cpu="1"))
    await env.source.sync_once()
    await env.source.sync_once()
    assert env.names() == ["kube-system/etcd-node-a"]
    warnings = env.warnings()
    assert len(warnings) == 2
    bad = next(w for w in warnings if "bad.yaml" in w)
    assert "spec.containers[0].resources.requests[cpu]" in bad
    assert 'Invalid value: "lots"' in bad
    assert any("broken.yml" in w and "cannot parse" in w for w in warnings)
    events = [e for e in env.recorder.events() if e.type == "Warning"]
    assert all(e.involved.kind == "Node" and e.reason == "FailedValidation" for e in events)


async def test_file_turning_bad_deletes_its_pod(env: Setup) -> None:
    path = env.dir / "etcd.yaml"
    path.write_text(POD_YAML.format(cpu="1"))
    await env.source.sync_once()
    path.write_text(POD_YAML.format(cpu="-1"))
    await env.source.sync_once()
    assert env.names() == []
    assert any("must be greater than or equal to 0" in w for w in env.warnings())
    path.write_text(POD_YAML.format(cpu="1"))
    await env.source.sync_once()
    assert env.names() == ["kube-system/etcd-node-a"]


async def test_duplicate_name_in_two_files(env: Setup) -> None:
    (env.dir / "a.yaml").write_text(POD_YAML.format(cpu="1"))
    (env.dir / "b.yaml").write_text(POD_YAML.format(cpu="2"))
    await env.source.sync_once()
    assert env.names() == ["kube-system/etcd-node-a"]
    assert env.manager.get("kube-system", "etcd-node-a").pod.containers[0].requests == {"cpu": 1000}
    assert any("b.yaml" in w and "Duplicate value" in w for w in env.warnings())


async def test_missing_directory_is_empty(tmp_path: Path, fake_clock: FakeClock) -> None:
    s = Setup(tmp_path, fake_clock)
    (s.dir / "etcd.yaml").write_text(POD_YAML.format(cpu="1"))
    await s.source.sync_once()
    (s.dir / "etcd.yaml").unlink()
    s.dir.rmdir()
    await s.source.sync_once()
    assert s.names() == []
    await s.manager.close()


async def test_run_polls_on_the_clock(env: Setup) -> None:
    task = asyncio.create_task(env.source.run())
    try:
        await env.clock.wait_for_sleepers(1)  # the first pass (empty folder) is done
        (env.dir / "etcd.yaml").write_text(POD_YAML.format(cpu="1"))
        await asyncio.sleep(0)
        assert env.names() == []
        env.clock.advance(20)
        await eventually(lambda: env.names() == ["kube-system/etcd-node-a"])  # parsed in a worker thread
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_uid_is_deterministic_and_depends_on_node_and_path(fake_clock: FakeClock) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "image": "x"}]},
    }
    uid = static_pod_uid(doc, node_name="n", path="/m/p.yaml")
    assert uid == static_pod_uid(dict(doc), node_name="n", path="/m/p.yaml")
    assert uid != static_pod_uid(doc, node_name="m", path="/m/p.yaml")
    assert uid != static_pod_uid(doc, node_name="n", path="/m/q.yaml")
    pod = static_pod_from_manifest(doc, path="/m/p.yaml", node_name="n", clock=fake_clock)
    assert (pod.uid, pod.name, pod.namespace, pod.node_name) == (uid, "p-n", "default", "n")
    assert doc["metadata"] == {"name": "p"}  # input untouched


def _source(env: Setup, watch: DirWatch) -> StaticPodSource:
    return StaticPodSource(path=env.dir, manager=env.manager, node_name="Node-A", clock=env.clock,
                           recorder=env.recorder, interval=20.0, watch=watch)


def _running(env: Setup) -> bool:
    return any(v.pod.key == "kube-system/etcd-node-a" and v.status.phase == RUNNING for v in env.manager.list())


async def test_a_change_runs_a_pass_at_once_and_the_interval_resyncs(env: Setup) -> None:
    watch = FakeWatch()
    task = asyncio.ensure_future(_source(env, watch).run())
    try:
        await env.clock.wait_for_sleepers(1)  # first pass: empty folder
        (env.dir / "etcd.yaml").write_text(POD_YAML.format(cpu="500m"))
        watch.trigger()
        await eventually(lambda: _running(env))  # the clock never moved: the change did it
        (env.dir / "etcd.yaml").unlink()
        await env.clock.wait_for_sleepers(1)  # back to waiting for a change or the interval
        env.clock.advance(20.0)  # no event this time: the resync pass removes it
        await eventually(lambda: env.names() == [])
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert watch.closed


async def test_manifest_written_is_running_at_once_with_inotify(env: Setup) -> None:
    task = asyncio.ensure_future(_source(env, InotifyWatch(env.dir)).run())
    try:
        await asyncio.sleep(0.05)
        (env.dir / "etcd.yaml").write_text(POD_YAML.format(cpu="500m"))
        # Polling alone (the clock never moves) would never see it; bench/ measures the latency.
        await eventually(lambda: _running(env))
        (env.dir / "etcd.yaml").unlink()
        await eventually(lambda: env.names() == [])
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
