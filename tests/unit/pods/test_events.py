"""Event recorder: kubelet-like events, dedup with counts, bounded size."""

from __future__ import annotations

from nodeagent.objects.pod.model import Pod
from nodeagent.pods.events import EventRecorder, ObjectRef
from nodeagent.util.clock import FakeClock


def test_dedup_counts_and_timestamps(fake_clock: FakeClock) -> None:
    rec = EventRecorder(clock=fake_clock, host="node-a")
    pod = Pod(uid="u", name="web")
    ref = ObjectRef.for_pod(pod)
    start = fake_clock.now()
    rec.warning(ref, "OutOfcpu", "no cpu")
    fake_clock.advance(30)
    event = rec.warning(ref, "OutOfcpu", "no cpu")
    assert (event.count, event.first_timestamp, event.last_timestamp) == (2, start, start + 30)
    rec.normal(ref, "Started", "Started container app")
    assert [(e.type, e.reason, e.count) for e in rec.for_pod(pod)] == [
        ("Warning", "OutOfcpu", 2),
        ("Normal", "Started", 1),
    ]
    assert event.involved == ObjectRef("Pod", "web", "default", "u")
    assert event.source == "kubelet" and event.host == "node-a"
    other = Pod(uid="v", name="web")  # same name, another pod
    assert rec.for_pod(other) == []
    assert len(rec.for_object("Pod", "default", "web")) == 2


def test_bounded(fake_clock: FakeClock) -> None:
    rec = EventRecorder(clock=fake_clock, max_events=3)
    ref = ObjectRef("Node", "node-a")
    for i in range(5):
        fake_clock.advance(1)
        rec.normal(ref, "R", f"m{i}")
    assert [e.message for e in rec.events()] == ["m2", "m3", "m4"]
    rec.forget([ref])
    assert rec.events() == []


def test_emit_for_subsystems_without_uid(fake_clock: FakeClock) -> None:
    rec = EventRecorder(clock=fake_clock)
    pod = Pod(uid="u", name="web")
    rec.emit("Pod", "default", "web", "Warning", "UnexpectedAdmissionError", "no devices")
    assert [e.reason for e in rec.for_pod(pod)] == ["UnexpectedAdmissionError"]


def test_pulled_message_follows_the_ensure_secret_pulled_images_gate() -> None:
    """image_manager.go: the 'and can be accessed by the pod' wording only with
    KubeletEnsureSecretPulledImages (beta, on since 1.35); the image quoted as Go's %q."""
    from nodeagent.pods.lifecycle import pulled_message

    assert pulled_message("pause:1", ensure_secret_pulled=True) == (
        'Container image "pause:1" already present on machine and can be accessed by the pod')
    assert pulled_message('a"b', ensure_secret_pulled=False) == 'Container image "a\\"b" already present on machine'
