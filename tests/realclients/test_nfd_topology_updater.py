"""Node Feature Discovery's nfd-topology-updater, built unchanged from its published module, against a daemon.

The updater is the node agent that turns pod-resources into NodeResourceTopology objects for
topology-aware schedulers. It reads: the kubelet configuration (topology manager policy and scope) from
a file, the kubelet's HTTPS /configz or kube-apiserver's node proxy; GetAllocatableResources and List
from pod-resources; the machine's NUMA layout from sysfs (ghw, and /sys/bus/node for memory); and it
re-reads when the kubelet rewrites cpu_manager_state, memory_manager_state or
device-plugins/kubelet_internal_checkpoint (or every -sleep-interval). Its objects are compared with
what nodeagent answers on pod-resources: per NUMA zone, the allocatable CPUs and the ones left after
exclusive allocations. The CRD comes from NFD's own module (deployment/base/noderesourcetopologies-crd).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import is_root
from tests.integration.daemon_helpers import Daemon, free_port, running_daemon, wait_for
from tests.realclients import programs
from tests.realclients.helpers import Running, allocatable, pod_resources, running

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

NODE = "test-node"
# static CPU manager (exclusive CPUs are what the updater subtracts), a topology policy it reports
KUBELET = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "topologyManagerPolicy": "single-numa-node",
           "topologyManagerScope": "container"}
HOST_MACHINE = {"nodeProfile": None}  # the daemon probes this host: the updater's sysfs is the host's too


def nrt_crd() -> str:
    module = programs.NFD_TOPOLOGY_UPDATER
    version = module.requirement("sigs.k8s.io/node-feature-discovery")
    src = programs.module_source("sigs.k8s.io/node-feature-discovery", version, module)
    return (src / "deployment" / "base" / "noderesourcetopologies-crd" / "noderesourcetopologies.yaml").read_text()


def bearer_token(d: Daemon) -> str:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    return str(cfg["users"][0]["user"]["token"])


def api_server(d: Daemon) -> str:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    return str(cfg["clusters"][0]["cluster"]["server"])


@contextmanager
def updater(binary: Path, d: Daemon, config_uri: str, interval: str, sysfs: Path | None = None) -> Iterator[Running]:
    """The updater beside the daemon; with sysfs, in a private mount namespace where that tree is /sys."""
    token = d.base / "token"
    token.write_text(bearer_token(d))
    argv = [str(binary), "-kubeconfig", str(d.kubeconfig), "-kubelet-config-uri", config_uri,
            "-api-auth-token-file", str(token), "-podresources-socket", str(d.pod_resources),
            "-kubelet-state-dir", str(d.root), "-sleep-interval", interval, "-port", str(free_port()),
            "-config", str(d.base / "no-nfd-topology-updater.conf"), "-v", "2"]
    if sysfs is not None:
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-ec", 'mount --bind "$0" /sys && exec "$@"',
                str(sysfs), *argv]
    with running(argv, d.base / "nfd.log", env={"NODE_NAME": NODE, "KUBERNETES_NAMESPACE": "default"}) as proc:
        yield proc


def nrt(d: Daemon, node: str = NODE) -> dict[str, Any] | None:
    out = d.kubectl("get", "noderesourcetopologies", node, "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 else None


def zone_cpu(obj: dict[str, Any]) -> dict[str, dict[str, str]]:
    """zone name -> the cpu resource's capacity/allocatable/available."""
    return {z["name"]: {k: str(r[k]) for k in ("capacity", "allocatable", "available")}
            for z in obj.get("zones") or [] for r in z.get("resources") or [] if r["name"] == "cpu"}


def host_numa_cpus(sysfs: Path = Path("/sys")) -> dict[str, set[int]]:
    """node-N -> its CPU ids, from a sysfs tree (what the updater's ghw reads)."""
    out: dict[str, set[int]] = {}
    for node in sorted((sysfs / "devices" / "system" / "node").glob("node[0-9]*")):
        ids: set[int] = set()
        for part in (node / "cpulist").read_text().strip().split(","):
            if part:
                lo, _, hi = part.partition("-")
                ids.update(range(int(lo), int(hi or lo) + 1))
        out[f"node-{node.name[4:]}"] = ids
    return out


def expected_cpu(d: Daemon, numa: dict[str, set[int]], exclusive: set[int]) -> dict[str, dict[str, str]]:
    """Per zone from pod-resources: allocatable = GetAllocatableResources' CPUs there, available = those not
    held exclusively by a container (List)."""
    alloc = {int(c) for c in allocatable(d).get("cpu_ids") or []}
    return {zone: {"capacity": str(len(cpus)), "allocatable": str(len(alloc & cpus)),
                   "available": str(len((alloc - exclusive) & cpus))} for zone, cpus in numa.items()}


def guaranteed_pod(name: str, cpus: int) -> str:
    res = {"cpu": str(cpus), "memory": "100Mi"}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [
        {"name": "c", "image": "pause", "resources": {"requests": res, "limits": res}}]}})


def exclusive_cpus(d: Daemon, pod: str) -> set[int]:
    return {int(c) for ctr in pod_resources(d, pod)["containers"] for c in ctr.get("cpu_ids") or []}


def wait_matching(d: Daemon, proc: Running, numa: dict[str, set[int]], exclusive: set[int],
                  timeout: float = 60, node: str = NODE) -> dict[str, Any]:
    want = expected_cpu(d, numa, exclusive)
    try:
        found: dict[str, Any] = wait_for(lambda: (o := nrt(d, node)) and zone_cpu(o) == want and o, timeout=timeout,
                                         what=f"NodeResourceTopology zones {want}")
    except AssertionError as err:
        raise AssertionError(f"{err}\n--- updater log ---\n{proc.log()}") from None
    return found


def test_nodes_resource_topology_agrees_with_pod_resources(nfd_topology_updater: Path, short_dir: Path) -> None:
    """File config (the daemon's own config file), interval updates, the host's machine on both sides."""
    with running_daemon(short_dir, KUBELET, HOST_MACHINE) as d:
        d.kubectl("apply", "-f", "-", input=nrt_crd())
        with updater(nfd_topology_updater, d, f"file://{d.config}", "1s") as proc:
            numa = host_numa_cpus()
            obj = wait_matching(d, proc, numa, set())
            attrs = {a["name"]: a["value"] for a in obj.get("attributes") or []}
            assert attrs["topologyManagerPolicy"] == "single-numa-node", attrs
            assert attrs["topologyManagerScope"] == "container", attrs
            assert [o["kind"] for o in obj["metadata"].get("ownerReferences") or []] == ["Namespace"]
            d.kubectl("apply", "-f", "-", input=guaranteed_pod("pinned", 1))
            wait_for(lambda: d.kubectl_json("get", "pod", "pinned")["status"].get("phase") == "Running",
                     timeout=30, what="Guaranteed pod Running")
            held = exclusive_cpus(d, "pinned")
            assert len(held) == 1, held
            wait_matching(d, proc, numa, held)


def test_updates_follow_the_kubelet_state_files(nfd_topology_updater: Path, short_dir: Path) -> None:
    """-sleep-interval 0: the updater publishes only when a kubelet state file changes, as NFD deploys it
    beside kubelets that write them; an exclusive CPU allocation must therefore produce an object."""
    with running_daemon(short_dir, KUBELET, HOST_MACHINE) as d:
        d.kubectl("apply", "-f", "-", input=nrt_crd())
        with updater(nfd_topology_updater, d, f"file://{d.config}", "0") as proc:
            d.kubectl("apply", "-f", "-", input=guaranteed_pod("pinned", 1))
            wait_for(lambda: d.kubectl_json("get", "pod", "pinned")["status"].get("phase") == "Running",
                     timeout=30, what="Guaranteed pod Running")
            assert (d.root / "cpu_manager_state").is_file()
            wait_matching(d, proc, host_numa_cpus(), exclusive_cpus(d, "pinned"), timeout=30)


def kubelet_port_config(port: int) -> dict[str, Any]:
    """The kubelet endpoint on its own port; no `address`: it binds the node's InternalIPs (where
    kube-apiserver's node proxy dials) and 127.0.0.1."""
    return {**KUBELET, "port": port}


def test_reads_the_kubelet_config_from_the_kubelet_endpoint(nfd_topology_updater: Path, short_dir: Path) -> None:
    """NFD's default: https://NODE_ADDRESS:10250/configz with a service-account token (here port `port`)."""
    port = free_port()
    with running_daemon(short_dir, kubelet_port_config(port), HOST_MACHINE) as d:
        d.kubectl("apply", "-f", "-", input=nrt_crd())
        with updater(nfd_topology_updater, d, f"https://127.0.0.1:{port}/configz", "1s") as proc:
            obj = wait_matching(d, proc, host_numa_cpus(), set())
            attrs = {a["name"]: a["value"] for a in obj.get("attributes") or []}
            assert attrs["topologyManagerPolicy"] == "single-numa-node", attrs


def test_reads_the_kubelet_config_through_the_node_proxy(nfd_topology_updater: Path, short_dir: Path) -> None:
    """-kubelet-config-uri pointed at kube-apiserver's /api/v1/nodes/NAME/proxy/configz."""
    port = free_port()
    with running_daemon(short_dir, kubelet_port_config(port), HOST_MACHINE) as d:
        d.kubectl("apply", "-f", "-", input=nrt_crd())
        uri = f"{api_server(d)}/api/v1/nodes/{NODE}/proxy/configz"
        with updater(nfd_topology_updater, d, uri, "1s") as proc:
            obj = wait_matching(d, proc, host_numa_cpus(), set())
            attrs = {a["name"]: a["value"] for a in obj.get("attributes") or []}
            assert attrs["topologyManagerScope"] == "container", attrs


@pytest.fixture
def private_mounts() -> None:
    if not is_root() or shutil.which("unshare") is None:
        pytest.skip("showing the updater the simulated machine's sysfs view as /sys needs a private mount "
                    "namespace: root and unshare (util-linux)")
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-ec",
                            "mount -t tmpfs nodeagent-probe /mnt"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount in a private mount namespace here: {probe.stderr.strip()}")


def test_simulated_machine_through_the_sysfs_view(nfd_topology_updater: Path, private_mounts: None,
                                                   short_dir: Path) -> None:
    """The daemon simulates 8 CPUs on 2 NUMA nodes (0-3, 4-7), not this host: with the node's sysfs view
    (sysfsDir, default STATE_DIR/host/sys) mounted over /sys, as the README shows, the updater's zones are
    those two nodes and agree with pod-resources; a 4-CPU Guaranteed pod under single-numa-node takes
    all of node 1 (node 0 has only 3 allocatable: CPU 0 is reserved), state-file events only."""
    numa = {"node-0": {0, 1, 2, 3}, "node-1": {4, 5, 6, 7}}  # write_config's nodeProfile.numaNodes
    with running_daemon(short_dir, KUBELET) as d:
        d.kubectl("apply", "-f", "-", input=nrt_crd())
        view = d.base / "state" / "host" / "sys"
        wait_for(lambda: (view / "devices" / "system" / "node" / "node1" / "cpulist").is_file(), timeout=15,
                 what="the sysfs view")
        with updater(nfd_topology_updater, d, f"file://{d.config}", "0", sysfs=view) as proc:
            d.kubectl("apply", "-f", "-", input=guaranteed_pod("pinned", 4))
            wait_for(lambda: d.kubectl_json("get", "pod", "pinned")["status"].get("phase") == "Running",
                     timeout=30, what="Guaranteed pod Running")
            held = exclusive_cpus(d, "pinned")
            assert held == numa["node-1"], held
            obj = wait_matching(d, proc, numa, held, timeout=30)
            assert zone_cpu(obj)["node-1"]["available"] == "0" and zone_cpu(obj)["node-0"]["allocatable"] == "3"
            costs = {z["name"]: {c["name"]: c["value"] for c in z.get("costs") or []} for z in obj["zones"]}
            assert costs["node-0"]["node-0"] < costs["node-0"]["node-1"], costs
