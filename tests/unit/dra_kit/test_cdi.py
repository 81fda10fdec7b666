"""CDI spec builder and writer: valid documents, atomic per-claim files, ids, removal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from plugins.dra_kit import cdi


def test_spec_document_shape() -> None:
    doc = cdi.spec_document(
        "gpu.example.com/gpu",
        [cdi.CDIDevice("uid1-gpu-0", env=("GPU_DEVICE_0=gpu-0",),
                       device_nodes=(cdi.DeviceNode("/dev/fake-gpu0", "/dev/null"),))],
        common_env=("DRA_CLAIM_UID=uid1",),
    )
    assert doc == {
        "cdiVersion": "0.6.0",
        "kind": "gpu.example.com/gpu",
        "devices": [{
            "name": "uid1-gpu-0",
            "containerEdits": {
                "env": ["GPU_DEVICE_0=gpu-0"],
                "deviceNodes": [{"path": "/dev/fake-gpu0", "hostPath": "/dev/null", "permissions": "rw"}],
            },
        }],
        "containerEdits": {"env": ["DRA_CLAIM_UID=uid1"]},
    }


@pytest.mark.parametrize("kind", ["gpu", "/gpu", "gpu.example.com/", "bad_vendor!/gpu", "a/b/c"])
def test_bad_kind(kind: str) -> None:
    with pytest.raises(ValueError, match="CDI kind"):
        cdi.check_kind(kind)


@pytest.mark.parametrize(
    ("device", "match"),
    [
        (cdi.CDIDevice("x"), "no container edits"),
        (cdi.CDIDevice("-bad", env=("A=1",)), "CDI device name"),
        (cdi.CDIDevice("ok", env=("1A=1",)), "NAME=VALUE"),
    ],
)
def test_bad_devices(device: cdi.CDIDevice, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        cdi.spec_document("example.com/gpu", [device])


def test_writer_writes_removes_and_lists(tmp_path: Path) -> None:
    w = cdi.CDIWriter(tmp_path / "cdi", "gpu.example.com/gpu", "gpu.example.com")
    ids = w.write("u-1", [cdi.CDIDevice(w.device_name("u-1", "gpu-3"), env=("A=1",))])
    assert ids == ["gpu.example.com/gpu=u-1-gpu-3"]
    path = tmp_path / "cdi" / "gpu.example.com-u-1.json"
    assert json.loads(path.read_text())["devices"][0]["name"] == "u-1-gpu-3"
    assert w.claims() == ["u-1"]
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left
    assert w.remove("u-1") is True
    assert w.remove("u-1") is False
    assert w.claims() == []


def test_write_atomic_replaces_and_cleans_up_on_error(tmp_path: Path) -> None:
    target = tmp_path / "spec.json"
    cdi.write_atomic(target, b"one")
    cdi.write_atomic(target, b"two")
    assert target.read_bytes() == b"two"
    assert oct(target.stat().st_mode & 0o777) == oct(0o644 & ~_umask())
    blocker = tmp_path / "dir.json"
    blocker.mkdir()
    with pytest.raises(OSError):
        cdi.write_atomic(blocker, b"x")  # os.replace onto a directory fails
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.json", "spec.json"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
