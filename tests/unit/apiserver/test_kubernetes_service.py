"""The `default/kubernetes` Service, Endpoints and EndpointSlice (apiserver/kubernetes_service.py) over an
in-memory store with the admitted kinds' hooks (the Service goes through the ClusterIP allocator)."""

from __future__ import annotations

import asyncio

import pytest

from nodeagent.apiserver import kubernetes_service as ks
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock
from tests.storeholding import held_by_a_worker


@pytest.fixture
def store() -> ObjectStore:
    return ObjectStore.memory(admitted_kinds(), FakeClock())


def test_the_service_takes_the_first_address_of_the_range_and_points_at_the_secure_port(store: ObjectStore) -> None:
    ks.KubernetesService(store, lambda: 6443, "192.0.2.10").sync()
    svc = store.get("Service", "default", "kubernetes")
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    spec = svc["spec"]
    assert (spec["clusterIP"], spec["clusterIPs"], spec["type"]) == ("10.0.0.1", ["10.0.0.1"], "ClusterIP")
    assert spec["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]
    assert "selector" not in spec and spec["ipFamilyPolicy"] == "SingleStack" and spec["ipFamilies"] == ["IPv4"]
    ep = store.get("Endpoints", "default", "kubernetes")
    assert ep["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}
    assert ep["subsets"] == [{"addresses": [{"ip": "192.0.2.10"}],
                              "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]
    eps = store.get("EndpointSlice", "default", "kubernetes")
    assert eps["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
    assert eps["addressType"] == "IPv4"
    assert [e["addresses"] for e in eps["endpoints"]] == [["192.0.2.10"]]
    assert eps["endpoints"][0]["conditions"]["ready"] is True
    assert eps["ports"] == [{"name": "https", "port": 6443, "protocol": "TCP"}]


def test_a_new_port_resets_the_endpoints_and_the_slice_but_not_the_service(store: ObjectStore) -> None:
    ks.KubernetesService(store, lambda: 6443, "192.0.2.10").sync()
    rvs = {k: store.get(k, "default", "kubernetes")["metadata"]["resourceVersion"]
           for k in ("Service", "Endpoints", "EndpointSlice")}
    ks.KubernetesService(store, lambda: 6443, "192.0.2.10").sync()  # nothing to change: nothing written
    assert rvs == {k: store.get(k, "default", "kubernetes")["metadata"]["resourceVersion"] for k in rvs}
    ks.KubernetesService(store, lambda: 7443, "192.0.2.11").sync()
    assert store.get("Service", "default", "kubernetes")["metadata"]["resourceVersion"] == rvs["Service"]
    assert store.get("Endpoints", "default", "kubernetes")["subsets"][0] == {
        "addresses": [{"ip": "192.0.2.11"}], "ports": [{"name": "https", "port": 7443, "protocol": "TCP"}]}
    eps = store.get("EndpointSlice", "default", "kubernetes")
    assert (eps["endpoints"][0]["addresses"], eps["ports"][0]["port"]) == (["192.0.2.11"], 7443)


def test_a_deleted_service_comes_back_at_the_next_sync(store: ObjectStore) -> None:
    keeper = ks.KubernetesService(store, lambda: 6443, None)
    keeper.sync()
    store.delete("Service", "default", "kubernetes")
    keeper.sync()
    assert store.get("Service", "default", "kubernetes")["spec"]["clusterIP"] == "10.0.0.1"


def test_a_loopback_server_advertises_nothing_and_writes_no_endpoints(store: ObjectStore) -> None:
    assert ks.advertise_address("127.0.0.1", ["192.0.2.10"]) is None
    ks.KubernetesService(store, lambda: 6443, ks.advertise_address("127.0.0.1", ["192.0.2.10"])).sync()
    assert store.peek("Service", "default", "kubernetes") is not None
    assert store.peek("Endpoints", "default", "kubernetes") is None
    assert store.peek("EndpointSlice", "default", "kubernetes") is None


@pytest.mark.parametrize(("bind", "hosts", "want"), [
    ("192.0.2.7", ["198.51.100.1"], "192.0.2.7"),
    ("0.0.0.0", ["127.0.0.1", "fe80::1", "169.254.0.3", "198.51.100.1", "2001:db8::1"], "198.51.100.1"),
    ("::", ["198.51.100.1", "2001:db8::1"], "2001:db8::1"),
    ("0.0.0.0", ["2001:db8::1"], None),
])
def test_the_advertised_address(bind: str, hosts: list[str], want: str | None) -> None:
    assert ks.advertise_address(bind, hosts) == want


def test_the_default_service_cidr_is_created_ready_and_a_false_ready_is_left_alone(store: ObjectStore) -> None:
    ks.KubernetesService(store, lambda: 6443, None, now=lambda: 1_800_000_000.0).sync()
    cidr = store.get("ServiceCIDR", "", "kubernetes")
    assert cidr["spec"] == {"cidrs": ["10.0.0.0/24"]}
    assert cidr["status"]["conditions"] == [{"type": "Ready", "status": "True", "reason": "",
                                             "message": "Kubernetes default Service CIDR is ready",
                                             "lastTransitionTime": "2027-01-15T08:00:00Z"}]
    cidr["status"]["conditions"][0] |= {"status": "False", "reason": "Overlap", "message": "m"}
    store.update_status(cidr)
    ks.ensure_service_cidr(store, 1_800_000_100.0)
    assert store.get("ServiceCIDR", "", "kubernetes")["status"]["conditions"][0]["status"] == "False"


def test_a_service_holding_the_first_address_fails_the_sync_with_a_log_not_an_exception(store: ObjectStore) -> None:
    store.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "squatter", "namespace": "default"},
                  "spec": {"clusterIP": "10.0.0.1", "ports": [{"port": 80}]}})
    keeper = ks.KubernetesService(store, lambda: 6443, "192.0.2.10")
    assert keeper.try_sync() is False
    assert store.peek("Service", "default", "kubernetes") is None
    store.delete("Service", "default", "squatter")
    assert keeper.try_sync() is True
    assert store.get("Service", "default", "kubernetes")["spec"]["clusterIP"] == "10.0.0.1"


async def test_a_round_waits_while_another_thread_writes_and_never_holds_the_event_loop(store: ObjectStore) -> None:
    """The reconcile runs on the event loop every 10 s: taking the store's lock while a worker thread's
    transaction held it (a huge pod's status write) stalled every socket 30-230 ms (issue 25)."""
    clock = FakeClock()
    keeper = ks.KubernetesService(store, lambda: 6443, "192.0.2.10", now=clock.now)
    keeper.sync()
    store.delete("Endpoints", "default", "kubernetes")
    with held_by_a_worker(store) as release:  # the code before held the loop here: the test fails, not hangs
        task = asyncio.create_task(keeper.run(clock.sleep))
        try:
            await clock.wait_for_sleepers()
            clock.advance(ks.INTERVAL)
            await clock.wait_for_sleepers()  # put off: the worker still writes
            assert clock.deadlines == [ks.INTERVAL + ks.BUSY_RETRY]
            assert store.loop_waits.count == 0 and store.peek("Endpoints", "default", "kubernetes") is None
            await asyncio.to_thread(release)
            clock.advance(ks.BUSY_RETRY)
            await clock.wait_for_sleepers()
            assert clock.deadlines == [2 * ks.INTERVAL + ks.BUSY_RETRY]
            assert store.get("Endpoints", "default", "kubernetes")["subsets"][0]["addresses"] == [{"ip": "192.0.2.10"}]
            assert store.loop_waits.count == 0
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
