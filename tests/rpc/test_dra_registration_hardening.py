"""Hostile DRA registrations over real unix sockets: names and endpoints the node refuses.

A plugin names its driver and its endpoint itself. The node refuses a driver name that is not
a DNS subdomain (at most 253 characters), an endpoint that is one of the node's own sockets
(directly or through a symlink) or outside the plugin directories, and tells the plugin why
through NotifyRegistrationStatus(false, error); the texts stay one line and bounded.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.dra.registry import DRARegistry
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.watcher import PluginWatcher
from nodeagent.util.clock import FakeClock
from tests.rpc.dra_fake import FakeDRADriver, stop_rig

pytestmark = pytest.mark.rpc

DRIVER = "gpu.example.com"
PREFIX = "RegisterPlugin error -- plugin validation failed with err: "


class Env:
    def __init__(self, root: Path, clock: FakeClock, registry: CollectorRegistry) -> None:
        self.root = root
        self.clock = clock
        self.reg_dir = root / "plugins_registry"
        self.admin = root / "admin.sock"
        self.dra = DRARegistry(clock, Instruments(registry), allowed_dirs=(root / "plugins", self.reg_dir),
                               own_sockets=(self.admin,))
        self.watcher = PluginWatcher(self.reg_dir, {"DRAPlugin": self.dra}, clock, registry=registry)
        self.drivers: list[FakeDRADriver] = []

    def driver(self, name: str = DRIVER, endpoint: str | None = None) -> FakeDRADriver:
        d = FakeDRADriver(name=name, reg_path=self.reg_dir / f"d{len(self.drivers)}-reg.sock",
                          dra_path=self.root / "plugins" / f"d{len(self.drivers)}" / "dra.sock", endpoint=endpoint)
        self.drivers.append(d)
        return d

    async def _notification(self, d: FakeDRADriver) -> tuple[bool, str]:
        """The driver's RegisterPlugin notification. A GetInfo past its 1 s deadline on a loaded machine
        (seen in a parallel run) is retried after the watcher's backoff, which sleeps on the fake clock:
        move the clock to a retry due within 2 s while the notification has not come."""
        get = asyncio.ensure_future(d.notifications.get())
        while not get.done():
            await asyncio.wait({get}, timeout=0.2)
            due = [t for t in self.clock.deadlines if t - self.clock.monotonic() <= 2.0]
            if not get.done() and due:
                self.clock.advance(due[0] - self.clock.monotonic())
        result: tuple[bool, str] = get.result()
        return result

    async def refused(self, d: FakeDRADriver) -> str:
        await d.start()
        await self.watcher.start()
        await self.watcher.wait_idle()
        ok, error = await asyncio.wait_for(self._notification(d), 10)
        assert not ok
        assert self.dra.drivers() == {}
        assert error.startswith(PREFIX), error
        assert "\n" not in error
        return error[len(PREFIX):]


@pytest.fixture
async def env(short_dir: Path, fake_clock: FakeClock, registry: CollectorRegistry) -> AsyncIterator[Env]:
    e = Env(short_dir, fake_clock, registry)
    yield e
    await stop_rig(e.watcher, e.dra, e.drivers)


async def test_driver_name_over_253_characters(env: Env) -> None:
    d = env.driver(name="a" * 10_000)
    err = await env.refused(d)
    assert f"invalid DRA driver plugin at endpoint {d.dra_path}: DRA driver name " in err
    assert err.endswith("is not a DNS subdomain: must be no more than 253 characters")
    assert len(err) < 600  # the name is cut, not echoed whole


async def test_driver_name_not_a_dns_subdomain_is_quoted(env: Env) -> None:
    err = await env.refused(env.driver(name="Bad_Name\nINFO forged line"))
    assert '"Bad_Name\\nINFO forged line" is not a DNS subdomain: a lowercase RFC 1123 subdomain' in err


async def test_endpoint_that_is_the_admin_socket(env: Env) -> None:
    env.admin.touch()
    err = await env.refused(env.driver(endpoint=str(env.admin)))
    assert err == (f"invalid endpoint of DRA driver plugin {DRIVER} at endpoint {env.admin}: "
                   "the endpoint is a socket the node serves itself")


async def test_endpoint_linking_to_the_admin_socket(env: Env) -> None:
    env.admin.touch()
    link = env.root / "plugins" / "evil" / "dra.sock"
    link.parent.mkdir(parents=True)
    os.symlink(env.admin, link)
    err = await env.refused(env.driver(endpoint=str(link)))
    assert err.endswith("the endpoint is a socket the node serves itself")


async def test_endpoint_outside_the_plugin_directories(env: Env) -> None:
    err = await env.refused(env.driver(endpoint="/run/containerd/containerd.sock"))
    assert err == (f"invalid endpoint of DRA driver plugin {DRIVER} at endpoint /run/containerd/containerd.sock: "
                   f"the endpoint must be a socket under {env.root / 'plugins'}, {env.reg_dir}")


async def test_relative_endpoint(env: Env) -> None:
    err = await env.refused(env.driver(endpoint="dra.sock"))
    assert err.endswith("the endpoint must be an absolute path")


async def test_endpoint_in_the_plugins_directory_registers(env: Env) -> None:
    d = env.driver()
    await d.start()
    await env.watcher.start()
    await env.watcher.wait_idle()
    assert await asyncio.wait_for(d.notifications.get(), 5) == (True, "")
    assert env.dra.is_registered(DRIVER)
