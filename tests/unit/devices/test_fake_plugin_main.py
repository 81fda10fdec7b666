"""Where the fake device plugin looks for kubelet.sock: flag, profile, the daemon's environment, default."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeagent.errors import ConfigError
from plugins.fake_device_plugin.main import ENV_DEVICE_PLUGINS_DIR, device_plugins_dir
from plugins.fake_device_plugin.plugin import FakeDevicePlugin
from plugins.fake_device_plugin.profile import DEFAULT_DIR, parse_profile

BASE = {"resourceName": "example.com/gpu", "devices": [{"id": "gpu-0"}]}
ENV = {ENV_DEVICE_PLUGINS_DIR: "/run/na/device-plugins"}


def test_flag_beats_profile_beats_environment() -> None:
    with_dir = parse_profile({**BASE, "devicePluginsDir": "/p/dp"})
    without = parse_profile(BASE)
    assert device_plugins_dir(Path("/flag"), with_dir, ENV) == Path("/flag")
    assert device_plugins_dir(None, with_dir, ENV) == Path("/p/dp")
    assert device_plugins_dir(None, without, ENV) == Path("/run/na/device-plugins")
    assert device_plugins_dir(None, without, {}) is None
    assert device_plugins_dir(None, without, {ENV_DEVICE_PLUGINS_DIR: ""}) is None


def test_plugin_default_dir_and_sockets() -> None:
    plugin = FakeDevicePlugin(parse_profile(BASE))
    assert plugin.dir == DEFAULT_DIR
    assert plugin.kubelet_socket == DEFAULT_DIR / "kubelet.sock"
    plugin = FakeDevicePlugin(parse_profile(BASE), device_plugins_dir=Path("/x"))
    assert plugin.socket_path == Path("/x/example.com-gpu.sock")


def test_empty_profile_dir_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"profile\.devicePluginsDir: must not be empty"):
        parse_profile({**BASE, "devicePluginsDir": ""})
