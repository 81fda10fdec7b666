"""Performance-only changes on the scheduling path keep their answers (issue 12's benchmark work):

- devices of equal content share one CEL view, and only those: a bool attribute and an int of the
  same value, or a version and a string of the same text, must not share an outcome;
- the node pass keeps its best candidate while it runs: it is the one the full ranking picks;
- the node lifecycle controller with more dirty nodes than one work batch comes back at once
  (it used to wait for the next event, and the control plane never went idle).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodeagent.cel.selectors import Version, compile_selector, shared_view
from nodeagent.controlplane.allocator.model import Device
from nodeagent.controlplane.controllers.nodelifecycle import NodeLifecycleController
from nodeagent.controlplane.convert import basic as convert
from nodeagent.controlplane.scheduler.cache import ClusterCache
from nodeagent.controlplane.scheduler.core import Scheduler
from nodeagent.controlplane.scheduler.nodepass import Candidate, PodShape
from nodeagent.controlplane.scheduler.placement import NONE
from nodeagent.nodeapi.lease import new_lease
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock

D = "gpu.example.com"


def test_equal_devices_share_one_view_and_its_outcomes() -> None:
    a = Device(D, "pool-a", "gpu-0", {"model": "a100", "index": 1}, {"memory": 40 << 30})
    b = Device(D, "pool-b", "gpu-7", {"index": 1, "model": "a100"}, {"memory": 40 << 30})
    assert a.view is b.view
    sel = compile_selector('device.attributes["gpu.example.com"].model == "a100"')
    assert sel.matches(a.view) and sel.matches(b.view)


@pytest.mark.parametrize(
    ("left", "right", "expression"),
    [
        ({"flag": True}, {"flag": 1}, 'device.attributes["gpu.example.com"].flag == true'),
        ({"v": Version("1.0.0")}, {"v": "1.0.0"}, 'device.attributes["gpu.example.com"].v == "1.0.0"'),
        ({"l": (True, 2)}, {"l": (1, 2)}, 'device.attributes["gpu.example.com"].l[0] == true'),
    ],
)
def test_values_of_other_types_do_not_share_a_view(
    left: dict[str, object], right: dict[str, object], expression: str
) -> None:
    one = shared_view(D, left, {})  # type: ignore[arg-type]
    other = shared_view(D, right, {})  # type: ignore[arg-type]
    assert one is not other
    sel = compile_selector(expression)
    # true on one side; false or a runtime error (mismatched types) on the other
    assert sel.evaluate(one) != sel.evaluate(other)
    assert True in (sel.evaluate(one), sel.evaluate(other))


def test_different_capacity_does_not_share_a_view() -> None:
    assert shared_view(D, {}, {"memory": 1}) is not shared_view(D, {}, {"memory": 2})


def _node(name: str, cpu: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _bound_pod(name: str, node: str, cpu: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name,
                                                            "resourceVersion": "1"},
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]}}


def test_pass_best_is_the_lowest_ranked_candidate(fake_clock: FakeClock) -> None:
    store = ObjectStore.memory(admitted_kinds({}), fake_clock)
    try:
        sched = Scheduler(store, fake_clock)
        nodes = [_node(f"node-{i}", str(2 + i % 3)) for i in range(12)]
        for i, node in enumerate(nodes):
            node["metadata"]["resourceVersion"] = str(i + 1)
        sched.load([*nodes, *(_bound_pod(f"p{i}", f"node-{i}", f"{(i * 7) % 5 * 100 + 100}m")
                              for i in range(12))])
        shape = PodShape(requests={"cpu": 500}, place=NONE, allocated=(), models=(), sig=("s",))
        for _ in range(3):  # the second and third passes answer from the equivalence cache
            found = sched.nodes.run(shape)
            assert found.feasible
            assert found.best is min(found.feasible, key=Candidate.rank)
    finally:
        store.close()


@pytest.fixture
def lease_store(fake_clock: FakeClock) -> Iterator[ObjectStore]:
    s = ObjectStore.memory(admitted_kinds({}), fake_clock)
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-node-lease"}})
    yield s
    s.close()


def test_node_lifecycle_with_more_dirty_nodes_than_a_batch_is_due_at_once(
    lease_store: ObjectStore, fake_clock: FakeClock
) -> None:
    ctl = NodeLifecycleController(lease_store, fake_clock, grace_period=40.0)
    for i in range(5):
        node = lease_store.create(_node(f"n{i}", "1"))
        lease_store.create(new_lease(f"n{i}", node["metadata"]["uid"], 40, fake_clock.now()))
    ctl.load([*lease_store.list("Node"), *lease_store.list("Lease", "kube-node-lease")])
    assert not ctl.idle()
    ctl.work(2)  # nothing to write, but only two of the five dirty nodes looked at
    due = ctl.deadline()
    assert due is not None and due <= fake_clock.monotonic()
    while not ctl.idle():
        ctl.work(2)
    assert ctl.deadline() == pytest.approx(fake_clock.monotonic() + 5.0, abs=0.01)  # the next monitor pass


def test_claims_of_one_spec_share_a_conversion_and_keep_their_names(fake_clock: FakeClock) -> None:
    def claim(name: str, cls: str) -> dict[str, object]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "1"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                    "deviceClassName": cls, "allocationMode": "ExactCount", "count": 1}}]}}}

    cache = ClusterCache(fake_clock)
    for obj in (claim("a", "gpu"), claim("b", "gpu"), claim("c", "other"), claim("a2", "gpu")):
        assert cache.claim_model(obj) == convert.claim(obj)  # names, uid and requests as converted alone


def test_replicas_share_one_parse_and_an_invalid_pod_still_fails(fake_clock: FakeClock) -> None:
    cache = ClusterCache(fake_clock)

    def pod(name: str, cpu: object) -> dict[str, object]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]}}

    assert cache.pod_requests(pod("a", "500m"))[0]["cpu"] == 500
    assert cache.pod_requests(pod("b", "500m"))[0]["cpu"] == 500
    assert cache.pod_requests(pod("c", "2"))[0]["cpu"] == 2000
    for name in ("d", "e"):  # not remembered: each says why
        reqs, err = cache.pod_requests(pod(name, "lots"))
        assert reqs == {} and err.startswith("invalid pod: spec.containers[0].resources.requests"), err


def test_replicas_with_their_own_token_volumes_share_one_parse(fake_clock: FakeClock,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The ServiceAccount admission gives each pod its own kube-api-access-XXXXX volume and mounts:
    the pod parser reads neither, so replicas still share one parse; any other spec difference
    (here the cpu request, an init container's image) is parsed on its own."""
    cache = ClusterCache(fake_clock)
    parses: list[str] = []
    real = cache.parse_requests

    def counting(obj: dict[str, object]) -> object:
        parses.append(str(obj["metadata"]["name"]))
        return real(obj)

    monkeypatch.setattr(cache, "parse_requests", counting)

    def pod(name: str, cpu: str = "500m", image: str = "busybox") -> dict[str, object]:
        volume = f"kube-api-access-{name}"
        mount = [{"name": volume, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"containers": [{"name": "c", "image": "pause", "volumeMounts": mount,
                                         "resources": {"requests": {"cpu": cpu}}}],
                         "initContainers": [{"name": "i", "image": image, "volumeMounts": mount}],
                         "volumes": [{"name": volume, "projected": {"sources": [
                             {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}]}}

    for name in ("a", "b", "c"):
        assert cache.pod_requests(pod(name))[0]["cpu"] == 500
    assert cache.pod_requests(pod("d", cpu="2"))[0]["cpu"] == 2000
    assert cache.pod_requests(pod("e", image="other"))[0]["cpu"] == 500
    assert parses == ["a", "d", "e"]
