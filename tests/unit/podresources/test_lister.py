"""Which pods and containers pod-resources lists, gates, errors and the freshness token."""

from __future__ import annotations

import pytest

from nodeagent.errors import KubeletError
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.podresources.fakes import InMemoryResources, VersionedResources
from nodeagent.podresources.lister import PodResourcesLister, listed_containers
from nodeagent.podresources.providers import DeviceInfo, DynamicResourceInfo
from nodeagent.util.yielding import CHUNK


def pod() -> Pod:
    return Pod(
        uid="u1",
        name="p",
        namespace="ns",
        init_containers=(Container("i1"), Container("s1", restart_policy="Always"), Container("i2"),
                         Container("s2", restart_policy="Always")),
        containers=(Container("c1"), Container("c2")),
    )


def test_listed_containers_sidecars_first() -> None:
    assert [c.name for c in listed_containers(pod())] == ["s1", "s2", "c1", "c2"]


def lister(res: InMemoryResources, gates: dict[str, bool] | None = None) -> PodResourcesLister:
    g = gates or {}
    return PodResourcesLister(res, res, res, res, res, lambda name: g.get(name, True))


def test_get_errors_use_kubelet_text() -> None:
    res = VersionedResources()
    res.add_pod(pod())
    assert lister(res).get("ns", "p").name == "p"
    with pytest.raises(KubeletError, match=r"^pod q in namespace ns not found$"):
        lister(res).get("ns", "q")
    with pytest.raises(KubeletError, match=r"^PodResources API Get method disabled$"):
        lister(res, {"KubeletPodResourcesGet": False}).get("ns", "p")
    # a pod rejected at admission or terminated is not found (GetPodByName filters as GetActivePods)
    res.set_active("u1", False)
    with pytest.raises(KubeletError, match=r"^pod p in namespace ns not found$"):
        lister(res).get("ns", "p")


def test_dynamic_gate() -> None:
    res = VersionedResources()
    res.add_pod(pod())
    res.assign("u1", "c1", dynamic=[DynamicResourceInfo("claim", "ns")])
    (on,) = lister(res).list_active()
    (off,) = lister(res, {"KubeletPodResourcesDynamicResources": False}).list_active()
    assert on.containers[2].dynamic_resources and not off.containers[2].dynamic_resources


def test_v1alpha1_view() -> None:
    res = InMemoryResources()
    res.add_pod(pod(), active=False)
    res.assign("u1", "c1", devices=[DeviceInfo("r", "d")], cpus=[1])
    (p,) = lister(res).list_all_devices()
    assert [c.name for c in p.containers] == ["c1", "c2"]
    assert p.containers[0].devices == (DeviceInfo("r", "d"),) and p.containers[0].cpu_ids == ()
    assert lister(res).list_active() == []


def test_generation_token() -> None:
    assert lister(InMemoryResources()).generation() is None
    res = VersionedResources()
    lst = lister(res)
    before = lst.generation()
    assert before is not None and lst.generation() == before
    res.set_health("r", "d", False)
    assert lst.generation() != before
    # the dynamic-resources gate is part of the token
    gates = {"KubeletPodResourcesDynamicResources": True}
    gated = PodResourcesLister(res, res, res, res, res, lambda n: gates.get(n, True))
    t1 = gated.generation()
    gates["KubeletPodResourcesDynamicResources"] = False
    assert gated.generation() != t1


class Holding(InMemoryResources):
    """Providers that tell whether a pod holds anything of theirs (PodHoldings), counting the
    per-container questions asked."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def holds_any(self, pod_uid: str) -> bool:
        kept = (self._devices, self._cpus, self._memory, self._dynamic)
        return any(uid == pod_uid for table in kept for uid, _ in table)

    def container_cpus(self, pod_uid: str, container: str) -> tuple[int, ...]:
        self.asked += 1
        return tuple(super().container_cpus(pod_uid, container))


async def test_a_big_pod_holding_nothing_is_listed_without_asking_each_container() -> None:
    many = Pod(uid="u9", name="big", namespace="ns", containers=tuple(Container(f"c{i}") for i in range(CHUNK + 10)))
    res = Holding()
    res.add_pod(many)
    expected = lister(res).list_active()
    res.asked = 0
    assert await lister(res).list_active_yielding() == expected
    assert res.asked == 0
    res.assign("u9", "c3", cpus=[4])  # now it holds something: every container is asked, the same answer
    expected = lister(res).list_active()
    res.asked = 0
    (got,) = await lister(res).list_active_yielding()
    assert [got] == expected and got.containers[3].cpu_ids == (4,) and res.asked == CHUNK + 10
