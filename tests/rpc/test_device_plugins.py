"""Device manager against the fake device plugin over real unix sockets.

The plugin runs in-process (same event loop) for most cases and as a subprocess
(`python -m plugins.fake_device_plugin`) for crash/restart. Grace periods use FakeClock.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from prometheus_client import CollectorRegistry

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.config import Config, KubeletConfig, NodeAgentConfig
from nodeagent.conformance.device_plugin_harness import DPContext, DPOptions
from nodeagent.devices.subsystem import DeviceSubsystem
from nodeagent.errors import FailedPrecondition, NotFound
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import Container, Pod, ResourceHealth, ResourceStatus
from nodeagent.rpc.server import channel
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock
from plugins.fake_device_plugin.plugin import FakeDevicePlugin
from plugins.fake_device_plugin.profile import Profile, parse_profile
from tests.waiting import eventually

pytestmark = pytest.mark.rpc

REPO = Path(__file__).resolve().parents[2]
GPU = "example.com/gpu"

PROFILE: dict[str, Any] = {
    "resourceName": GPU,
    "socketName": "fake-gpu.sock",
    "getPreferredAllocation": True,
    "devices": [
        {"id": "gpu-0", "numaNode": 0},
        {"id": "gpu-1", "numaNode": 0},
        {"id": "gpu-2", "numaNode": 1},
        {"id": "gpu-3", "numaNode": 1},
    ],
    "allocate": {
        "envs": {"FAKE_GPU_DEVICES": "{ids}"},
        "deviceNodes": [{"containerPath": "/dev/fake-gpu{index}", "hostPath": "/dev/null"}],
        "mounts": [{"containerPath": "/usr/local/fake-gpu", "hostPath": "/opt/fake-gpu", "readOnly": True}],
        "cdiKind": GPU,
    },
    "watchIntervalSeconds": 0.05,
}


def profile(**changes: Any) -> Profile:
    return parse_profile({**PROFILE, **changes})


def gpu_pod(uid: str, count: int = 1, *, init: int = 0) -> Pod:
    return Pod(
        uid=uid,
        name=f"pod-{uid}",
        containers=(Container("main", limits={GPU: count}, requests={GPU: count}),),
        init_containers=(Container("init", limits={GPU: init}, requests={GPU: init}),) if init else (),
    )


class Node:
    """A device subsystem on a short root dir, with recorded health callbacks and events."""

    def __init__(self, root: Path, clock: FakeClock, db: StateDB, *, allocate_timeout: float = 1.0,
                 policy: str = "none") -> None:
        self.cfg = Config(
            kubelet=KubeletConfig(topology_manager_policy=policy),
            agent=NodeAgentConfig(node_name="node-a", root_dir=root, state_dir=root / "state",
                                  allocate_timeout=allocate_timeout, device_plugin_grace_period=300.0),
        )
        self.registry = CollectorRegistry()
        self.health: list[tuple[str, str, tuple[ResourceStatus, ...]]] = []
        self.events: list[tuple[str, ...]] = []
        self.devices = DeviceSubsystem(
            self.cfg, db, Instruments(self.registry), clock,
            on_health_change=self._on_health, record=self._record, dial_timeout=1.0,
        )
        self.manager = self.devices.manager

    async def _on_health(self, uid: str, container: str, statuses: tuple[ResourceStatus, ...]) -> None:
        self.health.append((uid, container, statuses))

    def _record(self, *event: str) -> None:
        self.events.append(event)

    def allocatable(self) -> int:
        return self.manager.extended_resources()[1].get(GPU, -1)

    def capacity(self) -> int:
        return self.manager.extended_resources()[0].get(GPU, -1)

    def registrations(self, resource: str = GPU) -> float:
        return self.registry.get_sample_value(
            "kubelet_device_plugin_registration_total", {"resource_name": resource}) or 0.0


@pytest.fixture
async def node(short_dir: Path, fake_clock: FakeClock) -> AsyncIterator[Node]:
    n = Node(short_dir, fake_clock, StateDB(short_dir / "state" / "state.db"))
    await n.devices.start()
    yield n
    await n.devices.stop()


@pytest.fixture
async def plugin(node: Node) -> AsyncIterator[FakeDevicePlugin]:
    p = FakeDevicePlugin(profile(), device_plugins_dir=node.cfg.device_plugins_dir)
    await p.start()
    await eventually(lambda: node.allocatable() == 4)
    yield p
    await p.stop()


async def test_register_allocate_and_describe(node: Node, plugin: FakeDevicePlugin) -> None:
    assert node.registrations() == 1
    assert node.capacity() == 4
    result = await node.manager.admit(gpu_pod("p1", 2), [])
    assert result.admit, result
    devs = node.manager.container_devices("p1", "main")
    # GetPreferredAllocation packs one NUMA node.
    assert [(d.device_id, d.numa_nodes) for d in devs] == [("gpu-0", (0,)), ("gpu-1", (0,))]
    alloc = node.manager.container_allocations("p1", "main")[GPU]
    assert alloc.response.envs == {"FAKE_GPU_DEVICES": "gpu-0,gpu-1"}
    assert alloc.response.cdi_devices == ("example.com/gpu=gpu-0", "example.com/gpu=gpu-1")
    assert [d.container_path for d in alloc.response.devices] == ["/dev/fake-gpu0", "/dev/fake-gpu1"]
    assert alloc.response.mounts[0].read_only
    assert node.registry.get_sample_value(
        "kubelet_device_plugin_alloc_duration_seconds_count", {"resource_name": GPU}) == 1
    assert node.manager.container_resource_statuses("p1", "main") == (
        ResourceStatus(GPU, (ResourceHealth("gpu-0", "Healthy"), ResourceHealth("gpu-1", "Healthy"))),
    )
    # Node allocatable counts healthy devices, not free ones; pod-resources lists all healthy.
    assert node.allocatable() == 4
    assert len(node.manager.allocatable_devices()) == 4
    refused = await node.manager.admit(gpu_pod("p2", 3), [])
    # The kubelet's device manager refusal (its admit handler runs before the fit predicate).
    assert (refused.reason, refused.message) == (
        "UnexpectedAdmissionError",
        f"Allocate failed due to requested number of devices unavailable for {GPU}. Requested: 3, Available: 2, "
        "which is unexpected")
    assert node.manager.container_devices("p2", "main") == []
    assert node.events[0][:5] == ("Node", "", "node-a", "Normal", "DevicePluginRegistered")


async def test_init_container_devices_are_reused(node: Node, plugin: FakeDevicePlugin) -> None:
    assert (await node.manager.admit(gpu_pod("p1", 2, init=2), [])).admit
    init = {d.device_id for d in node.manager.container_devices("p1", "init")}
    main = {d.device_id for d in node.manager.container_devices("p1", "main")}
    assert init == main and len(main) == 2
    assert (await node.manager.admit(gpu_pod("p2", 2), [])).admit


def _bound_not_listening(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return sock


@pytest.mark.parametrize(
    ("version", "endpoint", "resource", "message"),
    [
        ("v1alpha", "fake-gpu.sock", GPU,
         'requested API version "v1alpha" is not supported by kubelet. Supported version is ["v1beta1"]'),
        ("v1beta1", "fake-gpu.sock", "gpu", 'the ResourceName "gpu" is invalid'),
        ("v1beta1", "fake-gpu.sock", "kubernetes.io/gpu", 'the ResourceName "kubernetes.io/gpu" is invalid'),
        ("v1beta1", "missing.sock", GPU, "failed to dial device plugin: dial unix {dir}/missing.sock: "
         "connect: no such file or directory"),
        ("v1beta1", "dead.sock", GPU, "failed to dial device plugin: dial unix {dir}/dead.sock: "
         "connect: connection refused"),
    ],
)
async def test_registration_rejected(node: Node, version: str, endpoint: str, resource: str,
                                     message: str) -> None:
    dead = _bound_not_listening(node.cfg.device_plugins_dir / "dead.sock")
    try:
        async with channel(node.cfg.kubelet_socket) as chan:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await api_pb2_grpc.RegistrationStub(chan).Register(
                    api_pb2.RegisterRequest(version=version, endpoint=endpoint, resource_name=resource))
    finally:
        dead.close()
    assert info.value.code() == grpc.StatusCode.UNKNOWN
    assert info.value.details() == message.format(dir=node.cfg.device_plugins_dir)
    # Counted only with a supported version and a valid resource name (bounded series; the kubelet counts all).
    assert node.registrations(resource) == (1 if version == "v1beta1" and resource == GPU else 0)
    assert node.manager.extended_resources() == ({}, {})


async def test_stream_end_grace_period_and_comeback(node: Node, plugin: FakeDevicePlugin,
                                                    fake_clock: FakeClock) -> None:
    assert (await node.manager.admit(gpu_pod("p1", 1), [])).admit
    await plugin.stop()
    await eventually(lambda: node.allocatable() == 0)
    assert node.capacity() == 4
    assert node.health[-1] == ("p1", "main", (ResourceStatus(GPU, (ResourceHealth("gpu-0", "Unknown"),)),))
    assert (await node.manager.admit(gpu_pod("p2", 1), [])).reason == "UnexpectedAdmissionError"
    await fake_clock.wait_for_sleepers()
    fake_clock.advance(299)
    await asyncio.sleep(0.05)
    assert node.capacity() == 4
    fake_clock.advance(1)
    await eventually(lambda: GPU not in node.manager.extended_resources()[0])
    # The plugin comes back: registers again, everything recovers, the pod keeps its device.
    await plugin.start()
    await eventually(lambda: node.allocatable() == 4)
    assert node.health[-1][2][0].resources == (ResourceHealth("gpu-0", "Healthy"),)
    assert [d.device_id for d in node.manager.container_devices("p1", "main")] == ["gpu-0"]
    assert (await node.manager.admit(gpu_pod("p2", 3), [])).admit
    assert (await node.manager.admit(gpu_pod("p3", 1), [])).reason == "UnexpectedAdmissionError"


async def test_reregistration_replaces_old_endpoint(node: Node, plugin: FakeDevicePlugin) -> None:
    second = FakeDevicePlugin(profile(socketName="fake-gpu-2.sock", devices=[{"id": "gpu-9", "numaNode": 0}]),
                              device_plugins_dir=node.cfg.device_plugins_dir)
    await second.start()
    try:
        await eventually(lambda: node.capacity() == 1)
        assert node.manager.registered_endpoints()[GPU].name == "fake-gpu-2.sock"
        # The old plugin's stream ending must not tear down the new connection.
        await plugin.stop()
        await asyncio.sleep(0.1)
        assert node.allocatable() == 1
        assert (await node.manager.admit(gpu_pod("p1", 1), [])).admit
        assert [d.device_id for d in node.manager.container_devices("p1", "main")] == ["gpu-9"]
    finally:
        await second.stop()


async def test_health_flapping_through_control_socket(node: Node, plugin: FakeDevicePlugin) -> None:
    assert (await node.manager.admit(gpu_pod("p1", 2), [])).admit
    for _ in range(3):
        await node.manager.set_device_health(GPU, "gpu-1", "Unhealthy")
        await eventually(lambda: node.allocatable() == 3)
        assert node.manager.container_resource_statuses("p1", "main")[0].resources[1] == \
            ResourceHealth("gpu-1", "Unhealthy")
        assert node.events[-1][3:5] == ("Warning", "DeviceUnhealthy")
        await node.manager.set_device_health(GPU, "gpu-1", "Healthy")
        await eventually(lambda: node.allocatable() == 4)
        assert node.events[-1][3:5] == ("Normal", "DeviceHealthy")
    assert [d.device_id for d in node.manager.container_devices("p1", "main")] == ["gpu-0", "gpu-1"]
    assert len(node.health) == 6
    assert {d.device_id for d in node.manager.allocatable_devices()} == {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}
    with pytest.raises(NotFound, match="has no device gpu-7"):
        await node.manager.set_device_health(GPU, "gpu-7", "Unhealthy")
    with pytest.raises(NotFound, match=r"no device plugin registered for resource example\.com/nic"):
        await node.manager.set_device_health("example.com/nic", "x", "Unhealthy")
    os.unlink(plugin.control_path)
    with pytest.raises(FailedPrecondition, match="no control socket"):
        await node.manager.set_device_health(GPU, "gpu-1", "Unhealthy")


@pytest.mark.parametrize("mode", ["error", "timeout"])
async def test_allocate_failure_leaves_nothing(node: Node, plugin: FakeDevicePlugin, mode: str) -> None:
    if mode == "error":
        plugin.allocate_error = "device busy"
    else:
        plugin.allocate_delay = 1.5  # allocate_timeout is 1 s
    result = await node.manager.admit(gpu_pod("p1", 2), [])
    assert not result.admit and result.reason == "UnexpectedAdmissionError"
    expected = "rpc error: code = Internal desc = device busy" if mode == "error" else "no answer within 1s"
    assert expected in result.message
    assert node.manager.pod_allocations("p1") == {}
    assert node.manager.snapshot()[0].allocated == 0
    plugin.allocate_error, plugin.allocate_delay = "", 0.0
    assert (await node.manager.admit(gpu_pod("p2", 4), [])).admit


async def test_manager_restart_restores_and_releases(short_dir: Path, fake_clock: FakeClock) -> None:
    db_path = short_dir / "state" / "state.db"
    first = Node(short_dir, fake_clock, StateDB(db_path))
    await first.devices.start()
    plugin = FakeDevicePlugin(profile(), device_plugins_dir=first.cfg.device_plugins_dir)
    await plugin.start()
    try:
        await eventually(lambda: first.allocatable() == 4)
        assert (await first.manager.admit(gpu_pod("keep", 2), [])).admit
        assert (await first.manager.admit(gpu_pod("gone", 1), [])).admit
        kept = first.manager.container_devices("keep", "main")
        await first.devices.stop()  # the daemon goes down

        second = Node(short_dir, fake_clock, StateDB(db_path))
        assert second.manager.container_devices("keep", "main") == kept
        assert second.manager.reconcile({"keep"}) == ["gone"]
        await second.devices.start()  # kubelet.sock recreated, stale sockets removed
        try:
            assert second.capacity() == 0
            await eventually(lambda: second.allocatable() == 4)  # the plugin re-registered by itself
            assert plugin.registrations == 2
            assert second.manager.container_devices("keep", "main") == kept
            assert (await second.manager.admit(gpu_pod("new", 2), [])).admit
            new = {d.device_id for d in second.manager.container_devices("new", "main")}
            assert new.isdisjoint(d.device_id for d in kept)
        finally:
            await second.devices.stop()
        third = Node(short_dir, fake_clock, StateDB(db_path))
        assert set(third.manager.pod_allocations("keep")) == {"main"}
        assert third.manager.pod_allocations("gone") == {}
    finally:
        await plugin.stop()


async def test_no_deprecation_marker_at_start_restart_or_in_conformance(short_dir: Path,
                                                                        fake_clock: FakeClock) -> None:
    """The v1.37 kubelet never writes device-plugins/DEPRECATION (its GetPluginHandler, which would, is
    called by nothing), and the upstream sample device plugin skips registration when it finds one."""
    node = Node(short_dir, fake_clock, StateDB(short_dir / "state" / "state.db"))
    directory = node.cfg.device_plugins_dir
    await node.devices.start()
    try:
        assert (directory / "kubelet.sock").exists()
        assert not (directory / "DEPRECATION").exists()
        await node.devices.server.stop()  # a simulated kubelet restart, as nodeagent.wiring.faults does it
        await node.manager.restart()
        await node.devices.server.start()
        assert sorted(p.name for p in directory.iterdir() if p.name != "kubelet_internal_checkpoint") == [
            "kubelet.sock"]
    finally:
        await node.devices.stop()
    harness = DPContext(DPOptions(work_dir=short_dir, device_plugins_dir=short_dir / "conf"))
    await harness.serve_kubelet()  # the conformance suite's stand-in kubelet
    try:
        assert sorted(p.name for p in (short_dir / "conf").iterdir()) == ["kubelet.sock"]
    finally:
        await harness.stop_kubelet()


def _spawn_plugin(root: Path, config: Path) -> subprocess.Popen[bytes]:
    with open(root / "plugin.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "plugins.fake_device_plugin", "--config", str(config),
             "--device-plugins-dir", str(root / "device-plugins"), "--watch-interval", "0.05"],
            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL, stderr=log,
        )


async def test_subprocess_plugin_crash_and_restart(node: Node, short_dir: Path) -> None:
    config = short_dir / "gpu.yaml"
    config.write_text(yaml.safe_dump({**PROFILE, "preStartRequired": True}))
    proc = _spawn_plugin(short_dir, config)
    try:
        await eventually(lambda: node.allocatable() == 4, timeout=15)
        assert (await node.manager.admit(gpu_pod("p1", 1), [])).admit
        await node.manager.set_device_health(GPU, "gpu-0", "Unhealthy")
        await eventually(lambda: node.allocatable() == 3)
        proc.send_signal(signal.SIGKILL)
        proc.wait(5)
        await eventually(lambda: node.allocatable() == 0)
        assert node.capacity() == 4
        assert node.health[-1][2][0].resources == (ResourceHealth("gpu-0", "Unknown"),)
        proc = _spawn_plugin(short_dir, config)
        await eventually(lambda: node.allocatable() == 4, timeout=15)
        assert node.health[-1][2][0].resources == (ResourceHealth("gpu-0", "Healthy"),)
        assert (await node.manager.admit(gpu_pod("p2", 3), [])).admit
        assert "gpu-0" not in {d.device_id for d in node.manager.container_devices("p2", "main")}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(5) == 0
        await eventually(lambda: node.allocatable() == 0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


async def _grpcurl(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        str(REPO / ".venv" / "bin" / "grpcurl"), "-plaintext", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 20)
    return proc.returncode or 0, out.decode()


@pytest.mark.skipif(not (REPO / ".venv" / "bin" / "grpcurl").exists(), reason="grpcurl not installed")
async def test_grpcurl_against_real_sockets(node: Node, plugin: FakeDevicePlugin) -> None:
    sock = str(plugin.socket_path)
    rc, out = await _grpcurl("-unix", sock, "list")
    assert rc == 0 and "v1beta1.DevicePlugin" in out
    rc, out = await _grpcurl("-unix", sock, "v1beta1.DevicePlugin/GetDevicePluginOptions")
    assert rc == 0 and 'get_preferred_allocation_available": true' in out
    rc, out = await _grpcurl("-unix", "-d", '{"containerRequests":[{"devicesIds":["gpu-2"]}]}',
                             sock, "v1beta1.DevicePlugin/Allocate")
    assert rc == 0 and '"FAKE_GPU_DEVICES": "gpu-2"' in out and '"name": "example.com/gpu=gpu-2"' in out
    bad = '{"version":"v1","endpoint":"fake-gpu.sock","resourceName":"x/y"}'
    kubelet = str(node.cfg.kubelet_socket)
    rc, out = await _grpcurl("-unix", "-d", bad, kubelet, "v1beta1.Registration/Register")
    assert rc != 0 and 'requested API version "v1" is not supported by kubelet' in out
    rc, out = await _grpcurl("-unix", "-d",
                             '{"version":"v1beta1","endpoint":"fake-gpu.sock","resourceName":"example.com/gpu"}',
                             str(node.cfg.kubelet_socket), "v1beta1.Registration/Register")
    assert rc == 0, out
    await eventually(lambda: node.allocatable() == 4)
    assert node.registrations() == 2 and node.registrations("x/y") == 0  # invalid calls get no series
