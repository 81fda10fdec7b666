"""100 full virtual nodes (NodeAgentConfiguration.nodes) in one daemon process, each with its own sockets
and its own fake device plugin process (spawned per node from the template).

Checks what makes each one an independent kubelet: every node's pod-resources socket answers; every
plugin registered on its own node's kubelet.sock (that node's allocatable shows its GPUs in kubectl and
in GetAllocatableResources on its own socket, no other node's); pods scheduled by the control plane to
each node run there, and each node's pod-resources List shows only its own pod with its own device.
The daemon and all 100 plugins are stopped at the end.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
import yaml

from nodeagent.apis.podresources.v1 import api_pb2, api_pb2_grpc
from tests.integration.daemon_helpers import BIN, Daemon, alive, child_pids, running_daemon, wait_for

N = 100
RESOURCE = "example.com/gpu"
PROFILE = Path(__file__).resolve().parents[2] / "configs" / "plugins" / "fake-gpu.yaml"


def _agent(base: Path) -> dict[str, object]:
    return {
        "nodes": [{
            "name": "vn-{index}",
            "count": N,
            "rootDir": str(base / "n" / "{index}"),
            "stateDir": str(base / "s" / "{node}"),
            "plugins": [{"name": "gpu", "command": [str(BIN / "nodeagent-device-plugin"), "--config", str(PROFILE),
                                                    "--log-level", "WARNING"],
                         "env": {"FAKE_NODE": "{node}"}}],
        }],
    }


def _pod_resources(base: Path, i: int) -> Path:
    return base / "n" / str(i) / "pod-resources" / "kubelet.sock"


def _stub(channels: list[grpc.Channel], path: Path) -> api_pb2_grpc.PodResourcesListerStub:
    channel = grpc.insecure_channel(f"unix://{path}")
    channels.append(channel)
    return api_pb2_grpc.PodResourcesListerStub(channel)


def _allocatable_gpus(stub: api_pb2_grpc.PodResourcesListerStub) -> list[str]:
    resp = stub.GetAllocatableResources(api_pb2.AllocatableResourcesRequest(), timeout=10)
    return sorted(i for d in resp.devices if d.resource_name == RESOURCE for i in d.device_ids)


def _gpu_allocatable(d: Daemon) -> dict[str, str]:
    nodes = d.kubectl_json("get", "nodes", "-o", "json")["items"]
    return {n["metadata"]["name"]: n["status"].get("allocatable", {}).get(RESOURCE, "0") for n in nodes}


def _pods_manifest() -> str:
    res = {RESOURCE: "1"}
    return yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{i}", "namespace": "default"},
         "spec": {"nodeSelector": {"kubernetes.io/hostname": f"vn-{i}"},
                  "containers": [{"name": "c", "image": "busybox", "resources": {"requests": res, "limits": res}}]}}
        for i in range(N)
    ])


# 100 plugin processes start at once: about a minute of CPU on two cores, more beside another test worker.
# The waits say that each step happens, not how fast (bench/nodes.py measures that), so they allow for a
# busy machine.
STEP = 180

pytestmark = pytest.mark.long


@pytest.mark.timeout(900)
@pytest.mark.skipif(not (BIN / "nodeagent-device-plugin").exists(), reason="nodeagent-device-plugin not installed")
def test_100_full_nodes_each_with_its_own_sockets_and_plugin(short_dir: Path) -> None:
    channels: list[grpc.Channel] = []
    with running_daemon(short_dir, {}, _agent(short_dir)) as d:
        try:
            wait_for(lambda: all(_pod_resources(short_dir, i).exists() for i in range(N)), timeout=STEP,
                     what="every node's pod-resources socket")
            stubs = [_stub(channels, _pod_resources(short_dir, i)) for i in range(N)]
            # Every socket answers, and every plugin registered with its own node (4 GPUs each, own socket).
            wait_for(lambda: all(_allocatable_gpus(s) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"] for s in stubs),
                     timeout=STEP, what="every node's plugin registered on its own kubelet.sock")
            for i in range(N):
                plugin_sock = short_dir / "n" / str(i) / "device-plugins" / "fake-gpu.sock"
                assert plugin_sock.exists(), f"node vn-{i} has no plugin socket of its own"
            wait_for(lambda: all(_gpu_allocatable(d).get(f"vn-{i}") == "4" for i in range(N)), timeout=STEP,
                     what="kubectl shows every node's GPUs")
            assert _gpu_allocatable(d).get(d.kubectl_json("get", "nodes", "-o", "json")["items"][0]["metadata"]
                                           ["name"]) is not None
            # Pods land on each node (the control plane's scheduler), run there with a device of that node.
            d.kubectl("apply", "-f", "-", input=_pods_manifest())

            def all_running() -> bool:
                pods = d.kubectl_json("get", "pods", "-o", "json")["items"]
                return bool(sum(p["status"].get("phase") == "Running" for p in pods) == N)

            wait_for(all_running, timeout=STEP, what="every pod Running")
            for p in d.kubectl_json("get", "pods", "-o", "json")["items"]:
                assert p["spec"]["nodeName"] == "vn-" + p["metadata"]["name"].removeprefix("p-")
            # Each node's pod-resources lists only its own pod, with one of its own GPUs.
            for i, stub in enumerate(stubs):
                listed = stub.List(api_pb2.ListPodResourcesRequest(), timeout=10).pod_resources
                assert [(p.namespace, p.name) for p in listed] == [("default", f"p-{i}")], f"node vn-{i}: {listed}"
                devices = [dev for c in listed[0].containers for dev in c.devices]
                assert [dev.resource_name for dev in devices] == [RESOURCE]
                assert len(devices[0].device_ids) == 1 and devices[0].device_ids[0].startswith("gpu-")
        finally:
            for channel in channels:
                channel.close()
        pids = child_pids(d.proc.pid)
    assert pids, "no plugin processes seen"
    wait_for(lambda: not any(alive(p) for p in pids), timeout=60, what="every plugin process stopped")


