"""Plugin watcher + DRA registry against an in-test DRA driver over real unix sockets.

The watcher runs on a FakeClock and the tests drive its passes (`sync` + `wait_idle`),
so backoff is checked exactly; one test runs the real polling loop on RealClock.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.dra.registry import DRARegistry
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.watcher import PluginWatcher, scan
from nodeagent.util.clock import FakeClock, RealClock
from tests.rpc.dra_fake import FakeDRADriver, stop_rig
from tests.waiting import eventually

pytestmark = pytest.mark.rpc

DRIVER = "gpu.example.com"


class Env:
    def __init__(self, root: Path, clock: FakeClock, registry: CollectorRegistry) -> None:
        self.root = root
        self.reg_dir = root / "plugins_registry"
        self.clock = clock
        self.registry = registry
        self.dra = DRARegistry(clock, Instruments(registry))
        self.watcher = PluginWatcher(self.reg_dir, {"DRAPlugin": self.dra}, clock, registry=registry)
        self.events: list[tuple[str, bool]] = []
        self.drivers: list[FakeDRADriver] = []

        async def on_driver(name: str, registered: bool) -> None:
            self.events.append((name, registered))

        self.dra.on_driver(on_driver)

    def driver(self, name: str = DRIVER, reg: str | None = None, dra: str = "dra.sock", **kw: object) -> FakeDRADriver:
        d = FakeDRADriver(
            name=name,
            reg_path=self.reg_dir / (reg or f"{name}-reg.sock"),
            dra_path=self.root / "plugins" / name / dra,
            **kw,  # type: ignore[arg-type]
        )
        self.drivers.append(d)
        return d

    async def pass_(self) -> None:
        await self.watcher.sync()
        await self.watcher.wait_idle()

    def total(self, path: Path, state: str) -> float | None:
        return self.registry.get_sample_value(
            "plugin_manager_total_plugins", {"socket_path": str(path), "state": state}
        )


@pytest.fixture
async def env(short_dir: Path, fake_clock: FakeClock, registry: CollectorRegistry) -> AsyncIterator[Env]:
    e = Env(short_dir, fake_clock, registry)
    yield e
    await stop_rig(e.watcher, e.dra, e.drivers)


async def notified(d: FakeDRADriver) -> tuple[bool, str]:
    return await asyncio.wait_for(d.notifications.get(), 5)


async def test_preexisting_socket_registered_and_notified(env: Env) -> None:
    d = env.driver()
    await d.start()
    await env.watcher.start()  # the first pass handles sockets already there
    await env.watcher.wait_idle()
    assert await notified(d) == (True, "")
    assert env.dra.is_registered(DRIVER)
    info = env.dra.drivers()[DRIVER]
    assert info.endpoint == str(d.dra_path)
    assert info.plugin_version == "v1.DRAPlugin"
    assert info.health_version == "v1.DRAResourceHealth"
    assert env.events == [(DRIVER, True)]
    assert env.total(d.reg_path, "desired_state_of_world") == 1.0
    assert env.total(d.reg_path, "actual_state_of_world") == 1.0
    # A further pass changes nothing: no second GetInfo.
    await env.pass_()
    assert d.getinfo_calls == 1


def _quoted(*items: str) -> str:
    return "[" + " ".join(f'"{i}"' for i in items) + "]"


BAD_INFO: list[tuple[str, dict[str, object], Callable[[FakeDRADriver], str]]] = [
    (
        "no versions",
        {"versions": ()},
        lambda d: "RegisterPlugin error -- plugin validation failed with err: invalid supported gRPC versions of "
        f"DRA driver plugin {DRIVER} at endpoint {d.dra_path}: "
        "empty list of supported gRPC services (aka supported versions)",
    ),
    (
        "unknown versions",
        {"versions": ("v1alpha3.NodeService", "v1alpha1.DRAResourceHealth")},
        lambda d: "RegisterPlugin error -- plugin validation failed with err: invalid supported gRPC versions of "
        f"DRA driver plugin {DRIVER} at endpoint {d.dra_path}: none of services supported by the plugin "
        f"({_quoted('v1alpha3.NodeService', 'v1alpha1.DRAResourceHealth')}) are supported by the kubelet "
        f"({_quoted('v1.DRAPlugin', 'v1beta1.DRAPlugin')})",
    ),
    (
        "wrong type",
        {"plugin_type": "CSIPlugin"},
        lambda d: f"RegisterPlugin error -- no handler registered for plugin type: CSIPlugin at socket {d.reg_path}",
    ),
    (
        "no name",
        {"name": ""},
        lambda d: "RegisterPlugin error -- plugin validation failed with err: invalid DRA driver plugin at "
        f"endpoint {d.dra_path}: DRA driver name is empty",
    ),
]


@pytest.mark.parametrize(("case", "kw", "text"), BAD_INFO, ids=[c[0] for c in BAD_INFO])
async def test_bad_info_rejected_with_kubelet_text(
    env: Env, case: str, kw: dict[str, object], text: Callable[[FakeDRADriver], str]
) -> None:
    name = str(kw.pop("name", DRIVER))
    d = env.driver(name=name, reg="bad-reg.sock", dra="dra.sock", **kw)
    await d.start()
    await env.watcher.start()
    await env.watcher.wait_idle()
    assert await notified(d) == (False, text(d))
    assert env.dra.drivers() == {}
    assert env.events == []
    assert env.total(d.reg_path, "desired_state_of_world") == 1.0
    assert env.total(d.reg_path, "actual_state_of_world") is None
    # Rejected plugins are retried with backoff (as the kubelet does): not before 0.5 s...
    await env.pass_()
    assert d.getinfo_calls == 1
    env.clock.advance(0.5)
    await env.pass_()
    assert d.getinfo_calls == 2
    assert await notified(d) == (False, text(d))


async def test_getinfo_failing_then_succeeding_backs_off(env: Env) -> None:
    d = env.driver(getinfo_failures=2)
    await d.start()
    await env.watcher.start()
    await env.watcher.wait_idle()
    assert d.getinfo_calls == 1 and not env.dra.is_registered(DRIVER)
    assert d.notifications.empty()  # nothing to notify when GetInfo itself failed
    await env.pass_()
    assert d.getinfo_calls == 1  # still backing off (0.5 s)
    env.clock.advance(0.5)
    await env.pass_()
    assert d.getinfo_calls == 2  # failed again: next delay 1 s
    env.clock.advance(0.5)
    await env.pass_()
    assert d.getinfo_calls == 2
    env.clock.advance(0.5)
    await env.pass_()
    assert d.getinfo_calls == 3
    assert await notified(d) == (True, "")
    assert env.dra.is_registered(DRIVER)


async def test_stale_socket_fails_fast_and_retries(env: Env) -> None:
    env.reg_dir.mkdir(parents=True)
    path = env.reg_dir / "stale-reg.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))  # bound, never listening: connection refused
    try:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await env.watcher.start()
        await env.watcher.wait_idle()
        assert loop.time() - start < 2.0
        assert env.watcher.registered() == {}
        assert env.total(path, "desired_state_of_world") == 1.0
    finally:
        sock.close()


async def test_socket_removed_deregisters_and_recreated_registers_again(env: Env) -> None:
    d = env.driver()
    await d.start()
    await env.watcher.start()
    await env.watcher.wait_idle()
    assert await notified(d) == (True, "")
    await d.stop_registration()  # removes the registration socket
    await env.pass_()
    assert env.events == [(DRIVER, True), (DRIVER, False)]
    assert not env.dra.is_registered(DRIVER)
    assert env.total(d.reg_path, "actual_state_of_world") is None
    assert env.total(d.reg_path, "desired_state_of_world") is None
    await d.start_registration()
    await env.pass_()
    assert await notified(d) == (True, "")
    assert env.events[-1] == (DRIVER, True)
    assert env.dra.is_registered(DRIVER)


async def test_empty_endpoint_means_registration_socket(env: Env) -> None:
    d = env.driver(endpoint="")
    await d.start()
    await env.watcher.start()
    await env.watcher.wait_idle()
    assert await notified(d) == (True, "")
    assert env.dra.drivers()[DRIVER].endpoint == str(d.reg_path)


async def test_two_plugins_per_driver_and_duplicate_endpoint(env: Env) -> None:
    old = env.driver(reg="old-reg.sock", dra="old.sock")
    await old.start()
    await env.watcher.start()
    await env.watcher.wait_idle()
    assert await notified(old) == (True, "")
    new = env.driver(reg="new-reg.sock", dra="new.sock")
    await new.start()
    await env.pass_()
    assert await notified(new) == (True, "")
    # Both connect lazily; once connected the newest one serves the driver.
    await eventually(lambda: env.dra.drivers()[DRIVER].endpoint == str(new.dra_path), what="newest plugin chosen")
    # A third registration socket claiming the new plugin's endpoint is refused by the handler.
    dup = env.driver(reg="dup-reg.sock", dra="new.sock")
    await dup.start_registration()
    await env.pass_()
    assert await notified(dup) == (
        False,
        "RegisterPlugin error -- plugin registration failed with err: "
        f"endpoint {new.dra_path} already registered for DRA driver plugin {DRIVER}",
    )
    # Not retried (the kubelet keeps it in its actual world), and its removal leaves the others alone.
    env.clock.advance(5)
    await env.pass_()
    assert dup.getinfo_calls == 1
    await dup.stop_registration()
    await env.pass_()
    assert env.dra.drivers()[DRIVER].endpoint == str(new.dra_path)
    # Removing the newest falls back to the old plugin; the driver stays registered.
    await new.stop_registration()
    await env.pass_()
    assert env.dra.drivers()[DRIVER].endpoint == str(old.dra_path)
    assert env.events == [(DRIVER, True), (DRIVER, True)]


async def test_scan_sockets_only_skips_dot_names_and_recurses(short_dir: Path) -> None:
    root = short_dir / "reg"
    (root / "sub").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "file.sock").write_text("not a socket")
    socks = []
    for rel in ["a.sock", "sub/b.sock", ".c.sock", ".hidden/d.sock"]:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(root / rel))
        socks.append(s)
    try:
        assert sorted(scan(root)) == [str(root / "a.sock"), str(root / "sub" / "b.sock")]
    finally:
        for s in socks:
            s.close()


async def test_real_polling_loop(short_dir: Path, registry: CollectorRegistry) -> None:
    clock = RealClock()
    dra = DRARegistry(clock, Instruments(registry))
    watcher = PluginWatcher(short_dir / "plugins_registry", {"DRAPlugin": dra}, clock, registry=registry)
    d = FakeDRADriver(DRIVER, short_dir / "plugins_registry" / "sub" / "drv-reg.sock", short_dir / "dra.sock")
    await watcher.start()  # creates the directory
    try:
        await d.start()
        assert await notified(d) == (True, "")
        await eventually(lambda: dra.is_registered(DRIVER), what="registered")
        await d.stop_registration()
        await eventually(lambda: not dra.is_registered(DRIVER), what="deregistered")
    finally:
        await watcher.stop()
        await dra.close()
        await d.stop()
