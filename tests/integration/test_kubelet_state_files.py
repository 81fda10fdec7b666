"""The kubelet's state files, checked by the v1.37.2 kubelet's own code, and kept in step by the daemon.

tests/fixtures/kubelet-checkpoints (built through the Go module proxy; skipped without Go or the
proxy) reads each file with the kubelet's packages (checksums verified, the cpu and memory state
restored as a restarting kubelet restores it), then lets them write the file again: the bytes
must equal nodeagent's. The daemon test runs the static cpu and memory managers, the fake device
plugin and the fake DRA driver, and watches the four files follow admissions and removals.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodeagent.kubeletstate import formats
from tests.integration import gotools
from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.integration.dra_helpers import POD, TRAINER, class_and_template
from tests.integration.test_devices_e2e import GPU, apply, registered, settled
from tests.integration.test_devices_e2e import agent as device_agent
from tests.integration.test_memory_e2e import KUBELET as MEMORY_KUBELET
from tests.integration.test_memory_e2e import guaranteed
from tests.unit.kubeletstate.states import STATES, write

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "tests" / "fixtures" / "kubelet-checkpoints"
NAMES = {formats.CPU_FILE: "cpu_manager_state", formats.MEMORY_FILE: "memory_manager_state",
         formats.DEVICES_FILE: "device-plugins/kubelet_internal_checkpoint", formats.DRA_FILE: "dra_manager_state"}
# States where an older kubelet's legacy (v2 cpu / v1 memory) checksum holds: with no entries the
# 1.37 kubelet hashes an empty map, which that reader decodes as nil (upstream's own behaviour,
# the same bytes the kubelet writes: the rewrite comparison below proves it).
LEGACY_OK = {"cpu-static", "memory-static"}


@pytest.fixture(scope="module")
def kubelet_reader() -> Path:
    return gotools.build_cached(MODULE, "kubelet-checkpoints")


def read_with_kubelet(binary: Path, root: Path) -> dict[str, Any]:
    out = subprocess.run([str(binary), str(root)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


@pytest.mark.parametrize("name", sorted(STATES))
def test_the_kubelet_reads_and_writes_the_same_bytes(kubelet_reader: Path, short_dir: Path, name: str) -> None:
    path = write(short_dir, name)
    (got,) = read_with_kubelet(kubelet_reader, short_dir).values()
    assert "error" not in got, got["error"]
    assert got["rewritten"] == path.read_text()
    if STATES[name][0] in (formats.CPU_FILE, formats.MEMORY_FILE):
        assert got["legacyChecksumOK"] is (name in LEGACY_OK)


@pytest.mark.parametrize("name", ["cpu-static", "memory-static", "devices", "dra"])
def test_a_wrong_checksum_is_refused_by_the_kubelet(kubelet_reader: Path, short_dir: Path, name: str) -> None:
    """The reader really checks: one character of the data changed (its last mention: in the cpu and
    memory files that is the v4/v3 `data` the 1.37 kubelet verifies) and the kubelet refuses the file."""
    path = write(short_dir, name)
    text = path.read_text()
    old, new = ("gpu-0", "gpu-7") if "gpu-0" in text else ("8,11", "8,12") if "8,11" in text else ("1073741824",
                                                                                                  "1073741825")
    at = text.rindex(old)
    path.write_text(text[:at] + new + text[at + len(old):])
    (got,) = read_with_kubelet(kubelet_reader, short_dir).values()
    assert any(word in got.get("error", "").lower() for word in ("checksum", "corrupt")), got


def files(d: Daemon) -> dict[str, Any]:
    out = {}
    for name, rel in NAMES.items():
        path = d.root / rel
        if path.exists():
            out[name] = json.loads(path.read_text())
    return out


def data(d: Daemon, name: str) -> Any:
    doc = files(d).get(name)
    if doc is None:
        return None
    return json.loads(doc["data"]) if "data" in doc else (json.loads(doc["Data"]) if name == formats.DRA_FILE
                                                          else doc["Data"])


def uid(d: Daemon, path: str) -> str:
    return str(d.api_get(path)["metadata"]["uid"])


def agent(base: Path) -> dict[str, Any]:
    out = device_agent(base)
    out["plugins"].append({
        "name": "fake-dra",
        "command": [sys.executable, "-m", "plugins.fake_dra_driver", "--config",
                    str(REPO / "configs/plugins/fake-dra.yaml"), "--cdi-dir", str(base / "cdi")],
        "env": {"PYTHONPATH": str(REPO)},
    })
    return out


def test_the_daemon_keeps_the_files_in_step(short_dir: Path) -> None:
    with running_daemon(short_dir, MEMORY_KUBELET, agent(short_dir)) as d:
        # At start, as the kubelet's managers write them: the cpu, memory and DRA checkpoints.
        wait_for(lambda: {formats.CPU_FILE, formats.MEMORY_FILE, formats.DRA_FILE} <= set(files(d)),
                 what="state files at start")
        cpu = data(d, formats.CPU_FILE)
        assert cpu["policyName"] == "static" and cpu["defaultCpuSet"] and "entries" not in cpu
        assert sorted(data(d, formats.MEMORY_FILE)["machineState"]) == ["0", "1"]
        assert data(d, formats.DRA_FILE)["ClaimInfoStateList"] == []
        registered(d)
        wait_for(lambda: (data(d, formats.DEVICES_FILE) or {}).get("RegisteredDevices", {}).get(GPU),
                 what="registered devices checkpointed")

        apply(d, guaranteed("aligned", "2", "1Gi", 1))
        assert settled(d, "aligned")["status"]["phase"] == "Running"
        pod = uid(d, "/api/v1/namespaces/default/pods/aligned")
        cpus = wait_for(lambda: (data(d, formats.CPU_FILE).get("entries") or {}).get(pod), what="cpu entry")
        assert set(cpus) == {"main"}
        default = data(d, formats.CPU_FILE)["defaultCpuSet"]
        assert cpus["main"] not in default
        blocks = wait_for(lambda: (data(d, formats.MEMORY_FILE).get("entries") or {}).get(pod), what="memory entry")
        assert blocks["main"] == [{"numaAffinity": [0], "type": "memory", "size": 1 << 30}]
        devices = wait_for(lambda: [e for e in data(d, formats.DEVICES_FILE)["PodDeviceEntries"] or []
                                    if e["PodUID"] == pod], what="device entry")
        assert [(e["ContainerName"], e["ResourceName"], list(e["DeviceIDs"])) for e in devices] == [
            ("main", GPU, ["0"])]
        assert registered_not_held(d, devices[0]["DeviceIDs"]["0"])

        # A DRA claim prepared for a pod: in dra_manager_state with its CDI ids.
        d.kubectl("apply", "-f", "-", input=class_and_template())
        d.kubectl("apply", "-f", "-", input=POD)
        wait_for(lambda: d.api_get(TRAINER)["status"].get("phase") == "Running", timeout=20, what="trainer")
        trainer = uid(d, TRAINER)
        (claim,) = wait_for(lambda: [c for c in data(d, formats.DRA_FILE)["ClaimInfoStateList"]
                                     if trainer in c["PodUIDs"] and c["DriverState"]["gpu.example.com"]["Devices"]],
                            what="claim checkpointed")
        (device,) = claim["DriverState"]["gpu.example.com"]["Devices"]
        assert device["CDIDeviceIDs"] and device["PoolName"] == "pool-a"

        # Every file, as it is now, is one the kubelet reads and writes back byte for byte.
        binary = _reader_or_none()
        if binary is not None:
            checked = read_with_kubelet(binary, d.root)
            assert set(checked) == set(NAMES.values())
            for rel in NAMES.values():
                assert "error" not in checked[rel], (rel, checked[rel])
                assert checked[rel]["rewritten"] == (d.root / rel).read_text(), rel

        # Removals reach the files too; the device checkpoint keeps a gone pod's devices until the next
        # UpdateAllocatedDevices (here the next device pod's Allocate), as the kubelet's podDevices does.
        d.kubectl("delete", "pod", "aligned", "trainer", "--wait=false")
        wait_for(lambda: pod not in (data(d, formats.CPU_FILE).get("entries") or {})
                 and pod not in (data(d, formats.MEMORY_FILE).get("entries") or {})
                 and data(d, formats.DRA_FILE)["ClaimInfoStateList"] == [], timeout=20, what="entries removed")
        assert any(e["PodUID"] == pod for e in data(d, formats.DEVICES_FILE)["PodDeviceEntries"] or [])
        apply(d, guaranteed("next", "1", "1Gi", 1))
        assert settled(d, "next")["status"]["phase"] == "Running"
        following = uid(d, "/api/v1/namespaces/default/pods/next")
        wait_for(lambda: {e["PodUID"] for e in data(d, formats.DEVICES_FILE)["PodDeviceEntries"] or []} == {following},
                 timeout=20, what="the gone pod's devices forgotten at the next Allocate")
        assert not list(d.root.glob(".*")) and not list((d.root / "device-plugins").glob(".*"))


def registered_not_held(d: Daemon, held: list[str]) -> bool:
    """kubelet_internal_checkpoint's RegisteredDevices lists every healthy device, held ones too."""
    return set(held) <= set(data(d, formats.DEVICES_FILE)["RegisteredDevices"][GPU])


def _reader_or_none() -> Path | None:
    try:
        return gotools.build_cached(MODULE, "kubelet-checkpoints")
    except pytest.skip.Exception:
        return None

