"""The fake DRA driver's profile: the shipped file parses, errors name the field path."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeagent.errors import ConfigError
from plugins.fake_dra_driver.profile import load_profile, parse_profile

REPO = Path(__file__).resolve().parents[3]
BASE: dict[str, Any] = {
    "driverName": "gpu.example.com",
    "poolName": "pool-a",
    "devices": [{"name": "gpu-0", "model": "A100", "uuid": "GPU-0", "pcieRoot": "pci0000:00", "numa": 0,
                 "memory": "40Gi"}],
}


def test_shipped_profile() -> None:
    p = load_profile(REPO / "configs" / "plugins" / "fake-dra.yaml")
    assert p.driver == "gpu.example.com"
    assert [d.name for d in p.devices] == [f"gpu-{i}" for i in range(8)]
    assert p.cdi.kind == "gpu.example.com/gpu"
    assert p.health_check_timeout_seconds == 30
    assert p.devices[4].slice_json() == {
        "name": "gpu-4",
        "attributes": {"model": {"string": "H100"}, "uuid": {"string": "GPU-5c1a0f7e-0000-4000-8000-000000000004"},
                       "pcieRoot": {"string": "pci0000:40"}, "numa": {"int": 1}},
        "capacity": {"memory": {"value": "80Gi"}},
    }


def test_defaults_and_extras() -> None:
    doc = copy.deepcopy(BASE)
    doc["devices"][0]["attributes"] = {"driverVersion": {"version": "1.2.3"}, "mig": True, "cores": 108}
    doc["devices"][0]["capacity"] = {"cores": 108}
    doc["healthCheckTimeoutSeconds"] = 6
    p = parse_profile(doc)
    assert p.health_resend_seconds == 2.0
    assert p.cdi.env == ("FAKE_DRA_DEVICE_{index}={device}",)
    assert p.devices[0].slice_json()["attributes"]["mig"] == {"bool": True}
    assert p.devices[0].slice_json()["capacity"]["cores"] == {"value": "108"}


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    node: Any = doc
    keys = dotted.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node.setdefault(k, {})
    if isinstance(node, list):
        node[int(keys[-1])] = value
    else:
        node[keys[-1]] = value


@pytest.mark.parametrize(
    ("key", "value", "error"),
    [
        ("driverName", "Not_A_Domain", "profile.driverName: Invalid value"),
        ("poolName", "", "profile.poolName: Required value"),
        ("devices", [], "profile.devices: at least one device is required"),
        ("devices.0.name", "GPU 0", "profile.devices[0].name: Invalid value"),
        ("devices.0.memory", "lots", "profile.devices[0].memory: Invalid value"),
        ("devices.0.numa", "zero", "profile.devices[0].numa: expected int"),
        ("devices.0.health", "sick", "profile.devices[0].health: health must be one of"),
        ("devices.0.colour", "red", "profile.devices[0].colour: unknown field"),
        ("devices.0.attributes", {"x": [1]}, "profile.devices[0].attributes[x]: expected"),
        ("cdi.kind", "gpu", "profile.cdi.kind:"),
        ("cdi.env", ["no equals"], "profile.cdi.env[0]:"),
        ("cdi.deviceNodes", [{"path": "dev/x"}], "profile.cdi.deviceNodes[0].path: must be an absolute path"),
        ("cdi.dir", "relative", "profile.cdi.dir: must be an absolute path"),
        ("healthCheckTimeoutSeconds", -1, "profile.healthCheckTimeoutSeconds: must be zero or more"),
        ("healthResendSeconds", 0, "profile.healthResendSeconds: must be positive"),
        ("services", ["v1.DRAResourceHealth"], "profile.services: must include"),
        ("services", ["v2.DRAPlugin"], 'profile.services[0]: unknown service "v2.DRAPlugin"'),
        ("faults.prepareFailureMode", "sometimes", "profile.faults.prepareFailureMode:"),
        ("faults.prepareFailures", -2, "profile.faults.prepareFailures: must be zero or more"),
        ("faults.crashOnPrepare", "yes", "profile.faults.crashOnPrepare: expected bool"),
        ("extra", 1, "profile.extra: unknown field"),
    ],
)
def test_errors_name_the_field(key: str, value: Any, error: str) -> None:
    doc = copy.deepcopy(BASE)
    _set(doc, key, value)
    with pytest.raises(ConfigError) as info:
        parse_profile(doc)
    assert str(info.value).startswith(error), str(info.value)


def test_duplicate_device(tmp_path: Path) -> None:
    doc = copy.deepcopy(BASE)
    doc["devices"].append({"name": "gpu-0"})
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=rf'{path}.devices\[1\].name: duplicate device name "gpu-0"'):
        load_profile(path)


def test_unreadable_and_invalid(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="No such file"):
        load_profile(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_profile(bad)
