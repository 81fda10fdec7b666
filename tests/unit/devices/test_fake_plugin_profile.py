"""The fake device plugin's pure parts: profile parsing (with field paths) and its preferred allocation."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeagent.errors import ConfigError
from plugins.fake_device_plugin.plugin import _pack
from plugins.fake_device_plugin.profile import load_profile, parse_profile

REPO = Path(__file__).resolve().parents[3]


def test_shipped_profile() -> None:
    p = load_profile(REPO / "configs" / "plugins" / "fake-gpu.yaml")
    assert p.resource_name == "example.com/gpu" and p.socket_name == "fake-gpu.sock"
    assert [(d.id, d.numa_node) for d in p.devices] == [
        ("gpu-0", 0), ("gpu-1", 0), ("gpu-2", 1), ("gpu-3", 1)]
    alloc = p.allocate.render(["gpu-1", "gpu-2"], {"gpu-1": 1, "gpu-2": 2})
    assert alloc.envs["FAKE_GPU_DEVICES"] == "gpu-1,gpu-2"
    assert alloc.cdi_devices == ("example.com/gpu=gpu-1", "example.com/gpu=gpu-2")
    assert [d.container_path for d in alloc.devices] == ["/dev/fake-gpu1", "/dev/fake-gpu2"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"resourceName": "gpu"}, 'profile.resourceName: "gpu" is not a valid extended resource name'),
        ({"resourceName": "a.b/c", "bogus": 1}, "profile.bogus: unknown field"),
        ({"resourceName": "a.b/c", "devices": [{"id": "x"}, {"id": "x"}]},
         'profile.devices[1].id: duplicate device id "x"'),
        ({"resourceName": "a.b/c", "socketName": "kubelet.sock"}, "profile.socketName"),
        ({"resourceName": "a.b/c", "preStartRequired": "yes"}, "profile.preStartRequired: expected bool"),
    ],
)
def test_profile_errors_name_the_field(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_profile(doc)
    assert message in str(info.value)


def test_pack_prefers_numa_of_must_include_then_fullest_node() -> None:
    numa: dict[str, int | None] = {"a": 0, "b": 0, "c": 1, "d": 1, "e": 1}
    assert _pack(["a", "b", "c", "d", "e"], ["c"], 2, numa) == ["c", "d"]
    assert _pack(["a", "b", "c", "d", "e"], [], 3, numa) == ["c", "d", "e"]
    assert _pack(["a", "c"], [], 2, numa) == ["a", "c"]
