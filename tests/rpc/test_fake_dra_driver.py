"""The fake DRA driver over real unix sockets, called with grpc clients the way the kubelet calls it.

The Kubernetes API is the kit's in-test fake API server (HTTP on loopback, the few endpoints a
driver uses, over MemoryAPI) reached through a kubeconfig, so these tests depend only on the
driver and the kit. Two tests run the driver as a subprocess (`python -m plugins.fake_dra_driver`),
one the way nodeagent spawns it.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from nodeagent.apis.dra.v1 import api_pb2 as dra_v1
from nodeagent.apis.dra.v1 import api_pb2_grpc as dra_v1_grpc
from nodeagent.apis.dra.v1beta1 import api_pb2 as dra_v1beta1
from nodeagent.apis.dra.v1beta1 import api_pb2_grpc as dra_v1beta1_grpc
from nodeagent.apis.dra_health.v1 import api_pb2 as health_v1
from nodeagent.apis.dra_health.v1 import api_pb2_grpc as health_v1_grpc
from nodeagent.apis.dra_health.v1alpha1 import api_pb2 as health_v1alpha1
from nodeagent.apis.dra_health.v1alpha1 import api_pb2_grpc as health_v1alpha1_grpc
from nodeagent.apis.pluginregistration.v1 import api_pb2 as reg_pb
from nodeagent.apis.pluginregistration.v1 import api_pb2_grpc as reg_grpc
from nodeagent.rpc.server import channel
from plugins.dra_kit import control
from plugins.dra_kit.health import HealthBoard
from plugins.dra_kit.kube import KubeAccess
from plugins.dra_kit.model import ClaimRef, PrepareResult
from plugins.dra_kit.server import DriverServer
from plugins.fake_dra_driver.driver import FakeDRADriver
from plugins.fake_dra_driver.profile import parse_profile
from tests.unit.dra_kit.fake_apiserver import FakeAPIServer
from tests.unit.dra_kit.memory_api import MemoryAPI
from tests.waiting import eventually

pytestmark = pytest.mark.rpc

REPO = Path(__file__).resolve().parents[2]
DRIVER = "gpu.example.com"
NODE = "node-a"
PROFILE: dict[str, Any] = {
    "driverName": DRIVER,
    "poolName": "pool-a",
    "devices": [
        {"name": f"gpu-{i}", "model": "A100", "uuid": f"GPU-{i}", "pcieRoot": "pci0000:00", "numa": i // 2,
         "memory": "40Gi"}
        for i in range(4)
    ],
    "cdi": {
        "kind": "gpu.example.com/gpu",
        "env": ["GPU_DEVICE_{index}={uuid}"],
        "deviceNodes": [{"path": "/dev/fake-gpu{ordinal}", "hostPath": "/dev/null"}],
        "commonEnv": ["DRA_CLAIM_UID={claim}"],
    },
    "healthCheckTimeoutSeconds": 7,
    "sliceCheckSeconds": 0.1,
}

def claim(name: str, uid: str, devices: list[str], *, namespace: str = "default",
          extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    results = [{"request": "gpu", "driver": DRIVER, "pool": "pool-a", "device": d} for d in devices]
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {"allocation": {"devices": {"results": results + (extra or [])}}},
    }


def published(api: MemoryAPI, node: str = NODE) -> list[dict[str, Any]]:
    return [o for o in api.slices.values() if o["spec"]["nodeName"] == node]


class Env:
    def __init__(self, root: Path, server: FakeAPIServer, driver: FakeDRADriver, cdi_dir: Path) -> None:
        self.root, self.server, self.driver, self.cdi_dir = root, server, driver, cdi_dir
        self.api = server.api

    @property
    def dra_sock(self) -> Path:
        return self.root / "plugins" / DRIVER / "dra.sock"

    @property
    def reg_sock(self) -> Path:
        return self.root / "plugins_registry" / f"{DRIVER}-reg.sock"


@pytest.fixture
async def make_env(short_dir: Path) -> AsyncIterator[Callable[..., Any]]:
    started: list[tuple[FakeDRADriver, KubeAccess, FakeAPIServer]] = []

    async def make(**overrides: Any) -> Env:
        doc = copy.deepcopy(PROFILE)
        doc.update(overrides)
        server = FakeAPIServer(MemoryAPI(NODE))
        await server.start()
        api = KubeAccess(server.kubeconfig(short_dir / "kubeconfig"))
        root, cdi_dir = short_dir / "root", short_dir / "cdi"
        driver = FakeDRADriver(parse_profile(doc), root_dir=root, api=api, node_name=NODE, cdi_dir=cdi_dir)
        await driver.start()
        started.append((driver, api, server))
        return Env(root, server, driver, cdi_dir)

    yield make
    for driver, api, server in reversed(started):
        await driver.stop()
        await api.close()
        await server.stop()


@pytest.fixture
async def env(make_env: Callable[..., Any]) -> Env:
    e: Env = await make_env()
    return e


# ---------------------------------------------------------------------------- registration


async def test_registration_info_and_status(env: Env) -> None:
    async with channel(env.reg_sock) as chan:
        stub = reg_grpc.RegistrationStub(chan)
        info = await stub.GetInfo(reg_pb.InfoRequest(), timeout=5)
        assert info.type == "DRAPlugin"
        assert info.name == DRIVER
        assert info.endpoint == str(env.dra_sock)
        assert Path(info.endpoint).is_absolute()
        assert list(info.supported_versions) == [
            "v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth", "v1beta1.DRAResourceHealth",
            "v1alpha1.DRAResourceHealth"]
        await stub.NotifyRegistrationStatus(reg_pb.RegistrationStatus(plugin_registered=True), timeout=5)
        assert env.driver.server.registered is True
        await stub.NotifyRegistrationStatus(
            reg_pb.RegistrationStatus(plugin_registered=False, error="RegisterPlugin error -- bad"), timeout=5)
    assert env.driver.server.registered is False
    assert env.driver.server.registration_error == "RegisterPlugin error -- bad"
    status = await control.arequest(env.driver.server.control_path, {"status": {}})
    assert status["registered"] is False and status["registrationError"] == "RegisterPlugin error -- bad"


async def test_service_socket_has_health_and_reflection(env: Env) -> None:
    async with channel(env.dra_sock) as chan:
        resp = await health_pb2_grpc.HealthStub(chan).Check(
            health_pb2.HealthCheckRequest(service="k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"), timeout=5)
        assert resp.status == health_pb2.HealthCheckResponse.SERVING
    grpcurl = Path(sys.executable).parent / "grpcurl"
    if grpcurl.exists():
        out = await asyncio.to_thread(subprocess.run, [str(grpcurl), "-plaintext", "-unix", str(env.dra_sock), "list"],
                                      capture_output=True, text=True, timeout=20)
        assert set(out.stdout.split()) >= {
            "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin", "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin",
            "v1.DRAResourceHealth", "v1beta1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"}, out.stderr


class _NoHealthBackend:
    async def prepare(self, claims: Sequence[ClaimRef]) -> Mapping[str, PrepareResult]:
        return {}  # the server reports the missing uids as per-claim errors

    async def unprepare(self, claims: Sequence[ClaimRef]) -> Mapping[str, str]:
        return {}

    def health_board(self) -> HealthBoard | None:
        return None


async def test_kit_backend_without_health(short_dir: Path) -> None:
    server = DriverServer("net.example.com", short_dir / "root", _NoHealthBackend())
    await server.start()
    try:
        async with channel(server.registration_path) as chan:
            info = await reg_grpc.RegistrationStub(chan).GetInfo(reg_pb.InfoRequest(), timeout=5)
        assert list(info.supported_versions) == ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
        async with channel(server.plugin_path) as chan:
            stream = health_v1_grpc.DRAResourceHealthStub(chan).NodeWatchResources(
                health_v1.NodeWatchResourcesRequest(), timeout=5)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stream.read()
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
            resp = await dra_v1_grpc.DRAPluginStub(chan).NodePrepareResources(
                dra_v1.NodePrepareResourcesRequest(claims=[dra_v1.Claim(namespace="n", uid="u", name="c")]),
                timeout=5)
            assert resp.claims["u"].error == "driver net.example.com returned no result for n/c (u)"
            un = await dra_v1_grpc.DRAPluginStub(chan).NodeUnprepareResources(
                dra_v1.NodeUnprepareResourcesRequest(claims=[dra_v1.Claim(namespace="n", uid="u", name="c")]),
                timeout=5)
            assert un.claims["u"].error == ""
        reply = await control.arequest(server.control_path, {"set_health": {"device": "p/d", "health": "Healthy"}})
        assert reply["code"] == "InvalidArgument"
    finally:
        await server.stop()


async def test_only_the_profiles_services(make_env: Callable[..., Any]) -> None:
    env: Env = await make_env(services=["v1beta1.DRAPlugin", "v1.DRAResourceHealth"],
                              devices=[{"name": "gpu-0"}])
    async with channel(env.reg_sock) as chan:
        info = await reg_grpc.RegistrationStub(chan).GetInfo(reg_pb.InfoRequest(), timeout=5)
    assert list(info.supported_versions) == ["v1beta1.DRAPlugin", "v1.DRAResourceHealth"]
    async with channel(env.dra_sock) as chan:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await dra_v1_grpc.DRAPluginStub(chan).NodePrepareResources(dra_v1.NodePrepareResourcesRequest(),
                                                                       timeout=5)
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
        stream = health_v1alpha1_grpc.DRAResourceHealthStub(chan).NodeWatchResources(
            health_v1alpha1.NodeWatchResourcesRequest(), timeout=5)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stream.read()
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
        resp = await dra_v1beta1_grpc.DRAPluginStub(chan).NodePrepareResources(
            dra_v1beta1.NodePrepareResourcesRequest(), timeout=5)
        assert dict(resp.claims) == {}


# ---------------------------------------------------------------------------- slices


async def test_slice_published_and_republished(env: Env, short_dir: Path) -> None:
    await asyncio.wait_for(env.driver.publisher.published.wait(), 5)
    (obj,) = published(env.api)
    assert obj["metadata"]["name"].startswith(f"{NODE}-{DRIVER}-")
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": "node-uid-1", "controller": True}]
    assert obj["spec"]["driver"] == DRIVER
    assert obj["spec"]["nodeName"] == NODE
    assert obj["spec"]["pool"] == {"name": "pool-a", "generation": 1, "resourceSliceCount": 1}
    assert obj["spec"]["devices"][1] == {
        "name": "gpu-1",
        "attributes": {"model": {"string": "A100"}, "uuid": {"string": "GPU-1"},
                       "pcieRoot": {"string": "pci0000:00"}, "numa": {"int": 0}},
        "capacity": {"memory": {"value": "40Gi"}},
    }
    await asyncio.sleep(0.3)
    writes = [(m, p) for m, p, _ in env.server.requests if m in ("POST", "PUT", "DELETE")]
    assert writes == [("POST", "/apis/resource.k8s.io/v1/resourceslices")]  # unchanged slices are not rewritten
    # the daemon restarts and deletes the node's slices: the slice comes back by itself
    env.api.remove_slice(obj["metadata"]["name"])
    await eventually(lambda: len(published(env.api)) == 1, what="slice re-published")
    assert published(env.api)[0]["spec"]["pool"]["generation"] == 1
    # a changed device list bumps the pool generation
    await env.driver.publisher.set_pools({"pool-a": [{"name": "gpu-0"}]})
    await eventually(lambda: published(env.api)[0]["spec"]["devices"] == [{"name": "gpu-0"}],
                     what="slice updated")
    assert published(env.api)[0]["spec"]["pool"]["generation"] == 2


async def test_slice_published_when_the_api_comes_late(short_dir: Path) -> None:
    kubeconfig = short_dir / "kubeconfig"
    api = KubeAccess(kubeconfig)
    driver = FakeDRADriver(parse_profile(PROFILE), root_dir=short_dir / "root", api=api, node_name=NODE,
                           cdi_dir=short_dir / "cdi")
    await driver.start()
    server = FakeAPIServer(MemoryAPI(NODE))
    try:
        await asyncio.sleep(0.3)
        assert not driver.publisher.published.is_set()  # no kubeconfig yet: the driver waits
        await server.start()
        server.kubeconfig(kubeconfig)
        await asyncio.wait_for(driver.publisher.published.wait(), 5)
        assert len(published(server.api)) == 1
    finally:
        await driver.stop()
        await api.close()
        await server.stop()


# ---------------------------------------------------------------------------- prepare / unprepare


def _cdi_file(env: Env, uid: str) -> Path:
    return env.cdi_dir / f"{DRIVER}-{uid}.json"


async def test_prepare_v1_writes_cdi_and_is_idempotent(env: Env) -> None:
    env.api.put_claim(claim("c1", "uid-1", ["gpu-1", "gpu-3"],
                        extra=[{"request": "nic", "driver": "net.example.com", "pool": "p", "device": "eth0"}]))
    req = dra_v1.NodePrepareResourcesRequest(claims=[dra_v1.Claim(namespace="default", uid="uid-1", name="c1")])
    async with channel(env.dra_sock) as chan:
        stub = dra_v1_grpc.DRAPluginStub(chan)
        resp = await stub.NodePrepareResources(req, timeout=45)
        again = await stub.NodePrepareResources(req, timeout=45)
    got = resp.claims["uid-1"]
    assert got.error == ""
    assert [(list(d.request_names), d.pool_name, d.device_name, list(d.cdi_device_ids)) for d in got.devices] == [
        (["gpu"], "pool-a", "gpu-1", ["gpu.example.com/gpu=uid-1-gpu-1"]),
        (["gpu"], "pool-a", "gpu-3", ["gpu.example.com/gpu=uid-1-gpu-3"]),
    ]
    assert not got.devices[0].HasField("share_id")
    assert again == resp
    spec = json.loads(_cdi_file(env, "uid-1").read_text())
    assert spec["cdiVersion"] == "0.6.0"
    assert spec["kind"] == "gpu.example.com/gpu"
    assert spec["containerEdits"] == {"env": ["DRA_CLAIM_UID=uid-1"]}
    assert spec["devices"] == [
        {"name": "uid-1-gpu-1", "containerEdits": {
            "env": ["GPU_DEVICE_0=GPU-1"],
            "deviceNodes": [{"path": "/dev/fake-gpu1", "hostPath": "/dev/null", "permissions": "rw"}]}},
        {"name": "uid-1-gpu-3", "containerEdits": {
            "env": ["GPU_DEVICE_1=GPU-3"],
            "deviceNodes": [{"path": "/dev/fake-gpu3", "hostPath": "/dev/null", "permissions": "rw"}]}},
    ]
    # every CDI id resolves to a device of the spec: "<kind>=<name>"
    names = {f"{spec['kind']}={d['name']}" for d in spec["devices"]}
    assert {i for d in got.devices for i in d.cdi_device_ids} == names
    assert env.driver.server.prepare_calls == 2
    assert sorted(p.name for p in env.cdi_dir.iterdir()) == [f"{DRIVER}-uid-1.json"]


async def test_prepare_v1beta1_and_unprepare(env: Env) -> None:
    env.api.put_claim(claim("c2", "uid-2", ["gpu-0"], namespace="team"))
    ref = dra_v1beta1.Claim(namespace="team", uid="uid-2", name="c2")
    async with channel(env.dra_sock) as chan:
        stub = dra_v1beta1_grpc.DRAPluginStub(chan)
        resp = await stub.NodePrepareResources(dra_v1beta1.NodePrepareResourcesRequest(claims=[ref]), timeout=45)
        dev = resp.claims["uid-2"].devices[0]
        assert (list(dev.request_names), dev.pool_name, dev.device_name, list(dev.cdi_device_ids)) == (
            ["gpu"], "pool-a", "gpu-0", ["gpu.example.com/gpu=uid-2-gpu-0"])
        assert _cdi_file(env, "uid-2").exists()
        un = await stub.NodeUnprepareResources(dra_v1beta1.NodeUnprepareResourcesRequest(claims=[ref]), timeout=45)
        assert dict(un.claims) == {"uid-2": dra_v1beta1.NodeUnprepareResourceResponse()}
        assert not _cdi_file(env, "uid-2").exists()
        # unprepare is idempotent, also through v1
        un1 = await dra_v1_grpc.DRAPluginStub(chan).NodeUnprepareResources(
            dra_v1.NodeUnprepareResourcesRequest(claims=[dra_v1.Claim(namespace="team", uid="uid-2", name="c2")]),
            timeout=45)
        assert un1.claims["uid-2"].error == ""
    assert env.driver.store.uids() == []


async def test_prepare_per_claim_errors(env: Env) -> None:
    env.api.put_claim(claim("ok", "uid-ok", ["gpu-2"]))
    env.api.put_claim(claim("alien", "uid-alien", ["gpu-99"]))
    env.api.put_claim(claim("stale", "uid-new", ["gpu-0"]))
    claims = [dra_v1.Claim(namespace="default", uid=u, name=n)
              for n, u in [("ok", "uid-ok"), ("alien", "uid-alien"), ("missing", "uid-m"), ("stale", "uid-old")]]
    async with channel(env.dra_sock) as chan:
        resp = await dra_v1_grpc.DRAPluginStub(chan).NodePrepareResources(
            dra_v1.NodePrepareResourcesRequest(claims=claims), timeout=45)
    assert resp.claims["uid-ok"].error == ""
    assert resp.claims["uid-alien"].error == (
        "driver gpu.example.com has no device pool-a/gpu-99 (claim default/alien)")
    assert resp.claims["uid-m"].error == (
        'retrieve claim default/missing: resourceclaims.resource.k8s.io "missing" not found')
    assert resp.claims["uid-old"].error == "claim default/stale got replaced"
    assert sorted(p.name for p in env.cdi_dir.iterdir()) == [f"{DRIVER}-uid-ok.json"]


async def test_injected_faults(env: Env) -> None:
    env.api.put_claim(claim("c1", "uid-1", ["gpu-1"]))
    req = dra_v1.NodePrepareResourcesRequest(claims=[dra_v1.Claim(namespace="default", uid="uid-1", name="c1")])
    ctl = env.driver.server.control_path
    assert (await control.arequest(ctl, {"set_faults": {"prepareFailures": 1}}))["ok"] is True
    async with channel(env.dra_sock) as chan:
        stub = dra_v1_grpc.DRAPluginStub(chan)
        first = await stub.NodePrepareResources(req, timeout=45)
        assert first.claims["uid-1"].error == "injected prepare failure"
        assert not _cdi_file(env, "uid-1").exists()
        second = await stub.NodePrepareResources(req, timeout=45)
        assert second.claims["uid-1"].devices[0].device_name == "gpu-1"
        await control.arequest(ctl, {"set_faults": {"prepareFailures": 1, "prepareFailureMode": "rpc",
                                                    "prepareError": "driver on fire"}})
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.NodePrepareResources(req, timeout=45)
        assert err.value.code() == grpc.StatusCode.UNKNOWN
        assert err.value.details() == "driver on fire"
        await control.arequest(ctl, {"set_faults": {"prepareDelaySeconds": 0.3}})
        t0 = time.monotonic()
        await stub.NodePrepareResources(req, timeout=45)
        assert time.monotonic() - t0 >= 0.3
    bad = await control.arequest(ctl, {"set_faults": {"prepareFailureMode": "never"}})
    assert bad["ok"] is False and "faults.prepareFailureMode" in bad["error"]


# ---------------------------------------------------------------------------- health


async def test_health_streams_complete_lists_and_flip_at_once(env: Env) -> None:
    async with channel(env.dra_sock) as chan:
        s1 = health_v1_grpc.DRAResourceHealthStub(chan).NodeWatchResources(health_v1.NodeWatchResourcesRequest())
        s0 = health_v1alpha1_grpc.DRAResourceHealthStub(chan).NodeWatchResources(
            health_v1alpha1.NodeWatchResourcesRequest())
        try:
            for stream, pb in ((s1, health_v1), (s0, health_v1alpha1)):
                first: Any = await asyncio.wait_for(stream.read(), 5)
                assert [(d.device.pool_name, d.device.device_name, d.health, d.health_check_timeout_seconds)
                        for d in first.devices] == [("pool-a", f"gpu-{i}", pb.HEALTHY, 7) for i in range(4)]
                assert abs(first.devices[0].last_updated_time - time.time()) < 5
            t0 = time.monotonic()
            reply = await control.arequest(env.driver.server.control_path,
                                           {"set_health": {"device": "pool-a/gpu-1", "health": "Unhealthy",
                                                           "message": "ECC errors"}})
            assert reply == {"ok": True, "changed": True}
            for stream, pb in ((s1, health_v1), (s0, health_v1alpha1)):
                msg: Any = await asyncio.wait_for(stream.read(), 1)
                assert len(msg.devices) == 4  # always the complete list
                by_name = {d.device.device_name: d for d in msg.devices}
                assert by_name["gpu-1"].health == pb.UNHEALTHY
                assert by_name["gpu-1"].message == "ECC errors"
                assert by_name["gpu-0"].health == pb.HEALTHY
            assert time.monotonic() - t0 < 1.0  # the resend period here is 7/3 s: this was the change
            assert env.driver.server.health_streams == 2
        finally:
            s1.cancel()
            s0.cancel()
    listing = await control.arequest(env.driver.server.control_path, {"list": {}})
    assert [d["health"] for d in listing["devices"]] == ["Healthy", "Unhealthy", "Healthy", "Healthy"]
    missing = await control.arequest(env.driver.server.control_path,
                                     {"set_health": {"device": "pool-a/gpu-9", "health": "Unhealthy"}})
    assert missing == {"ok": False, "code": "NotFound", "error": "driver gpu.example.com has no device pool-a/gpu-9"}
    bad = await control.arequest(env.driver.server.control_path,
                                 {"set_health": {"device": "gpu-1", "health": "Unhealthy"}})
    assert bad["code"] == "InvalidArgument"


async def test_health_resent_and_pausable(make_env: Callable[..., Any]) -> None:
    env: Env = await make_env(healthResendSeconds=0.1)
    async with channel(env.dra_sock) as chan:
        stream = health_v1_grpc.DRAResourceHealthStub(chan).NodeWatchResources(health_v1.NodeWatchResourcesRequest())
        try:
            await asyncio.wait_for(stream.read(), 5)
            await asyncio.wait_for(stream.read(), 1)  # re-sent with no change
            await control.arequest(env.driver.server.control_path, {"pause_health": {"paused": True}})
            nxt = asyncio.ensure_future(stream.read())
            await asyncio.sleep(0.4)
            assert not nxt.done()
            await control.arequest(env.driver.server.control_path, {"pause_health": {"paused": False}})
            last: Any = await asyncio.wait_for(nxt, 1)
            assert len(last.devices) == 4
        finally:
            stream.cancel()


async def test_stop_ends_streams_and_removes_sockets(make_env: Callable[..., Any]) -> None:
    env: Env = await make_env()
    async with channel(env.dra_sock) as chan:
        stream = health_v1_grpc.DRAResourceHealthStub(chan).NodeWatchResources(health_v1.NodeWatchResourcesRequest())
        await asyncio.wait_for(stream.read(), 5)
        await env.driver.stop()
        end = await asyncio.wait_for(stream.read(), 5)
        assert end is grpc.aio.EOF  # type: ignore[attr-defined]
    assert not env.dra_sock.exists() and not env.reg_sock.exists()
    assert not env.driver.server.control_path.exists()


async def test_vanished_sockets_are_served_again(make_env: Callable[..., Any]) -> None:
    env: Env = await make_env()
    env.driver.server.watch_interval = 0.05
    await env.driver.server.stop()
    await env.driver.server.start()
    env.reg_sock.unlink()
    env.dra_sock.unlink()
    await eventually(lambda: env.reg_sock.exists() and env.dra_sock.exists(), what="sockets back")
    async with channel(env.reg_sock) as chan:
        info = await reg_grpc.RegistrationStub(chan).GetInfo(reg_pb.InfoRequest(), timeout=5)
    assert info.name == DRIVER


# ---------------------------------------------------------------------------- the program


def test_main_rejects_bad_profile(short_dir: Path) -> None:
    bad = short_dir / "bad.yaml"
    bad.write_text("driverName: x\n")
    out = subprocess.run([sys.executable, "-m", "plugins.fake_dra_driver", "--config", str(bad)],
                         cwd=REPO, capture_output=True, text=True, timeout=30,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 2
    assert f"{bad}.poolName: Required value" in out.stderr


async def test_spawned_like_nodeagent(short_dir: Path) -> None:
    server = FakeAPIServer(MemoryAPI(NODE))
    await server.start()
    root = short_dir / "root"
    profile = short_dir / "p.yaml"
    profile.write_text(yaml.safe_dump(PROFILE))
    # the daemon's variables win over a $KUBECONFIG / $NODE_NAME inherited from its own environment
    env = {**os.environ, "PYTHONPATH": str(REPO), "NODEAGENT_ROOT_DIR": str(root),
           "NODEAGENT_KUBECONFIG": str(server.kubeconfig(short_dir / "kubeconfig")), "NODEAGENT_NODE_NAME": NODE,
           "KUBECONFIG": str(short_dir / "elsewhere"), "NODE_NAME": "not-this-node"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "plugins.fake_dra_driver", "--config", str(profile), cwd=REPO, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        reg = root / "plugins_registry" / f"{DRIVER}-reg.sock"
        await eventually(lambda: reg.exists() and bool(published(server.api)), timeout=15, what="driver up")
        async with channel(reg) as chan:
            info = await reg_grpc.RegistrationStub(chan).GetInfo(reg_pb.InfoRequest(), timeout=5)
        assert info.endpoint == str(root / "plugins" / DRIVER / "dra.sock")
        server.api.put_claim(claim("c1", "uid-1", ["gpu-0"]))
        async with channel(Path(info.endpoint)) as chan:
            resp = await dra_v1_grpc.DRAPluginStub(chan).NodePrepareResources(
                dra_v1.NodePrepareResourcesRequest(claims=[dra_v1.Claim(namespace="default", uid="uid-1",
                                                                        name="c1")]), timeout=45)
        assert list(resp.claims["uid-1"].devices[0].cdi_device_ids) == ["gpu.example.com/gpu=uid-1-gpu-0"]
        assert (short_dir / "cdi" / f"{DRIVER}-uid-1.json").exists()  # default CDI dir: ROOT/../cdi
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 15) == 0
        assert not reg.exists()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await server.stop()


async def test_crash_on_prepare_fault(short_dir: Path) -> None:
    server = FakeAPIServer(MemoryAPI("node-z"))
    await server.start()
    profile = short_dir / "p.yaml"
    profile.write_text(yaml.safe_dump({**PROFILE, "faults": {"crashOnPrepare": True}}))
    root = short_dir / "root"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "plugins.fake_dra_driver", "--config", str(profile), "--root-dir", str(root),
        "--kubeconfig", str(server.kubeconfig(short_dir / "kubeconfig")), "--node-name", "node-z", cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        sock = root / "plugins" / DRIVER / "dra.sock"
        await eventually(lambda: sock.exists() and bool(published(server.api, "node-z")), timeout=15,
                         what="driver up")
        async with channel(sock) as chan:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await dra_v1_grpc.DRAPluginStub(chan).NodePrepareResources(
                    dra_v1.NodePrepareResourcesRequest(claims=[dra_v1.Claim(namespace="d", uid="u", name="c")]),
                    timeout=10)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert await asyncio.wait_for(proc.wait(), 10) == 70
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await server.stop()
