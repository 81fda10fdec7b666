"""QoS class table, as the kubelet's ComputePodQOS decides."""

from __future__ import annotations

import pytest

from nodeagent.objects.pod.model import BEST_EFFORT, BURSTABLE, GUARANTEED, Container, Pod
from nodeagent.pods.qos import pod_qos

G = {"cpu": 1000, "memory": 2**30}


def pod(*containers: Container, init: tuple[Container, ...] = (), **kw: dict[str, int]) -> Pod:
    return Pod(uid="u", name="p", containers=containers, init_containers=init, **kw)  # type: ignore[arg-type]


CASES = [
    ("no resources", pod(Container("a")), BEST_EFFORT),
    (
        "only extended",
        pod(Container("a", requests={"example.com/gpu": 1}, limits={"example.com/gpu": 1})),
        BEST_EFFORT,
    ),
    ("zero requests", pod(Container("a", requests={"cpu": 0})), BEST_EFFORT),
    ("equal limits", pod(Container("a", requests=G, limits=G)), GUARANTEED),
    (
        "guaranteed plus extended",
        pod(Container("a", requests={**G, "example.com/gpu": 1}, limits={**G, "example.com/gpu": 1})),
        GUARANTEED,
    ),
    ("cpu only limits", pod(Container("a", requests={"cpu": 1000}, limits={"cpu": 1000})), BURSTABLE),
    ("request below limit", pod(Container("a", requests={"cpu": 500, "memory": 2**30}, limits=G)), BURSTABLE),
    ("requests only", pod(Container("a", requests={"memory": 10})), BURSTABLE),
    ("one container best effort", pod(Container("a", requests=G, limits=G), Container("b")), BURSTABLE),
    ("init container counts", pod(Container("a", requests=G, limits=G), init=(Container("i"),)), BURSTABLE),
    (
        "init guaranteed too",
        pod(Container("a", requests=G, limits=G), init=(Container("i", requests=G, limits=G),)),
        GUARANTEED,
    ),
    ("init only resources", pod(Container("a"), init=(Container("i", requests={"cpu": 1}),)), BURSTABLE),
    ("pod-level guaranteed", pod(Container("a"), pod_requests=G, pod_limits=G), GUARANTEED),
    (
        "pod-level burstable",
        pod(Container("a", requests=G, limits=G), pod_requests={"cpu": 500, "memory": 2**30}, pod_limits=G),
        BURSTABLE,
    ),
    ("pod-level requests only", pod(Container("a"), pod_requests={"cpu": 100}), BURSTABLE),
    (
        "pod-level limits lack memory",
        pod(Container("a"), pod_requests={"cpu": 1000}, pod_limits={"cpu": 1000}),
        BURSTABLE,
    ),
]


@pytest.mark.parametrize(("p", "expected"), [(p, e) for _, p, e in CASES], ids=[n for n, _, _ in CASES])
def test_qos(p: Pod, expected: str) -> None:
    assert pod_qos(p) == expected
