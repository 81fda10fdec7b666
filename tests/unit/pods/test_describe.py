"""`kubectl describe pod` layout."""

from __future__ import annotations

import pytest

from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.objects.pod.model import ResourceHealth, ResourceStatus
from nodeagent.pods import status as st
from nodeagent.pods.describe import describe_pod, tabwrite
from nodeagent.pods.events import EventRecorder, ObjectRef
from nodeagent.util.clock import FakeClock
from nodeagent.util.timefmt import human_duration


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (50 * 3600, "2d2h"),
        (9 * 86400, "9d"),
        (800 * 86400, "2y70d"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_tabwrite_aligns_blocks() -> None:
    out = tabwrite(["Name:\tweb", "Namespace:\tdefault", "Containers:", "  a:\tb", "  long one:\tc"])
    assert out == "Name:       web\nNamespace:  default\nContainers:\n  a:         b\n  long one:  c\n"


def test_describe_running_pod() -> None:
    clock = FakeClock(start=1_700_000_000.0)
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web", "tier": "fe"}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "resources": {
                        "limits": {"cpu": "1", "memory": "1Gi", "example.com/gpu": 1},
                        "requests": {"cpu": "500m"},
                    },
                }
            ]
        },
    }
    pod = pod_from_manifest(doc, clock=clock)
    status = st.running_status(pod, "Burstable", clock.now())
    status = st.with_resource_status(
        status,
        "app",
        [ResourceStatus("example.com/gpu", (ResourceHealth("dev-1", "Healthy"),))],
        replace=False,
    )
    rec = EventRecorder(clock=clock)
    rec.normal(ObjectRef.for_pod(pod), "Started", "Started container app")
    clock.advance(90)
    rec.normal(ObjectRef.for_pod(pod), "Started", "Started container app")
    out = describe_pod(pod, status, rec.for_pod(pod), now=clock.now() + 10)
    lines = out.splitlines()
    assert lines[0] == "Name:         web"
    assert "Start Time:   Tue, 14 Nov 2023 22:13:20 +0000" in lines
    assert "Labels:       app=web" in lines and "              tier=fe" in lines
    assert "Annotations:  <none>" in lines
    assert "Status:       Running" in lines
    assert "    State:          Running" in lines
    assert "    Limits:" in lines and "      cpu:              1" in lines
    assert "      example.com/gpu:  1" in lines and "      memory:           1Gi" in lines
    assert "    Requests:" in lines and "      cpu:              500m" in lines
    assert lines[lines.index("    Allocated Resources Status:") + 1 :][:2] == [
        "      example.com/gpu:",
        "        dev-1:  Healthy",
    ]
    assert "  PodReadyToStartContainers   True " in lines
    assert "QoS Class:                    Burstable" in lines
    assert lines[-4:] == [
        "Events:",
        "  Type    Reason   Age                 From     Message",
        "  ----    ------   ----                ----     -------",
        "  Normal  Started  10s (x2 over 100s)  kubelet  Started container app",
    ]


def test_describe_rejected_pod() -> None:
    clock = FakeClock()
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "big"},
        "spec": {"containers": [{"name": "app", "image": "x"}]},
    }
    pod = pod_from_manifest(doc, clock=clock)
    status = st.rejected_status(
        "BestEffort", "OutOfcpu", "Node didn't have enough resource: cpu", clock.now()
    )
    out = describe_pod(pod, status, [], now=clock.now())
    assert "Reason:       OutOfcpu\n" in out
    assert "Message:      Pod was rejected: Node didn't have enough resource: cpu\n" in out
    assert "State:" not in out
    assert out.endswith("QoS Class:  BestEffort\nEvents:     <none>\n")  # no Conditions block: the kubelet writes none
