"""The published programs against the daemon `make run` starts (configs/demo.yaml), not only the tier's own.

`make run` runs `nodeagent run --config configs/demo.yaml`: node demo-node with its own fake device plugin and
fake DRA driver (gpu.example.com), the examples applied, virtual and classic-DRA nodes beside it. The same
config is copied with its ports made free and its ../.run folder under a temporary directory (as
test_clean_shutdown's demo_copy does), and started the same way; then, beside the demo's own plugins:
- the upstream sample device plugin (root: a private mount namespace over /var/lib/kubelet/device-plugins)
  registers example.com/resource and a pod gets both its devices;
- dra-example-driver's kubelet plugin with its net profile (net.example.com: the demo's fake DRA driver
  already is gpu.example.com, as two drivers of one name cannot be on one node) publishes its NIC and a
  pod of its net-consumable-capacity demo runs with the rates in its environment;
- nfd-topology-updater as the README points it at demo-node (root: the node's sysfs view over /sys in a
  private mount namespace; the kubelet config from the node's kubelet endpoint; updates on the kubelet's
  state files only): its NodeResourceTopology zones are the demo's two simulated NUMA nodes and agree with
  pod-resources before and after a Guaranteed pod takes exclusive CPUs.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.daemon_helpers import Daemon, free_port, wait_for
from tests.integration.test_clean_shutdown import demo_copy
from tests.realclients import test_device_plugins
from tests.realclients import test_nfd_topology_updater as nfd
from tests.realclients.helpers import container_env, pod_resources, running
from tests.realclients.test_device_plugins import in_private_mounts

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

mount_namespaces = test_device_plugins.mount_namespaces  # the fixture: root and a private mount namespace
private_mounts = nfd.private_mounts  # the fixture: root, unshare and a mount in a private namespace

NODE = "demo-node"
NET = "net.example.com"


class DemoDaemon(Daemon):
    """The demo config's layout: ROOT and the kubeconfig under ../.run of the config's folder."""

    @property
    def root(self) -> Path:
        return self.base / ".run" / "kubelet"

    @property
    def kubeconfig(self) -> Path:
        return self.base / ".run" / "kubeconfig"


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoDaemon]:
    base = Path(tempfile.mkdtemp(prefix="na-d", dir="/tmp"))
    config = demo_copy(base)
    log = (base / "daemon.log").open("wb")
    # as `make run`: the console script's command line, from the checkout (the plugins' relative paths)
    proc = subprocess.Popen([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(config),
                             "--log-format", "full"], cwd=base, stdout=log, stderr=subprocess.STDOUT)
    d = DemoDaemon(base, config, proc, 0)
    try:
        wait_for(lambda: d.kubeconfig.exists() and b"example applied" in (base / "daemon.log").read_bytes(),
                 timeout=120, what="the demo daemon serving with its examples applied")
        # its spawned fake device plugin registers on its own time (the first example can be applied before):
        # the tests check that the demo's own resources stay beside theirs, so they start once it is there
        wait_for(lambda: allocatable(d, "example.com/gpu") == "4", timeout=60,
                 what="example.com/gpu: 4 on demo-node (the demo's fake device plugin)")
        yield d
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        shutil.rmtree(base, ignore_errors=True)


def allocatable(d: Daemon, resource: str) -> str | None:
    value = d.kubectl_json("get", "node", NODE)["status"].get("allocatable", {}).get(resource)
    return str(value) if value is not None else None


def running_pod(d: Daemon, name: str, diagnose: str = "") -> None:
    try:
        wait_for(lambda: d.kubectl_json("get", "pod", name)["status"].get("phase") == "Running", timeout=60,
                 what=f"pod {name} Running")
    except AssertionError as err:
        raise AssertionError(f"{err}\n{d.kubectl('get', 'pod', name, '-o', 'yaml').stdout}\n{diagnose}\n"
                             f"--- daemon log ---\n{(d.base / 'daemon.log').read_text(errors='replace')[-3000:]}"
                             ) from None


@pytest.mark.usefixtures("mount_namespaces")
def test_the_sample_device_plugin_beside_the_demos_own(demo: DemoDaemon, sample_device_plugin: Path) -> None:
    d = demo
    with running(in_private_mounts(str(d.root / "device-plugins"), sample_device_plugin),
                 d.base / "sample-plugin.log") as plugin:
        wait_for(lambda: allocatable(d, "example.com/resource") == "2", timeout=60,
                 what="example.com/resource: 2 on demo-node")
        assert allocatable(d, "example.com/gpu") == "4"  # the demo's fake device plugin is still there
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sample"}, "spec": {
            "nodeSelector": {"kubernetes.io/hostname": NODE},
            "containers": [{"name": "c", "image": "pause", "resources": {"limits": {"example.com/resource": "2"}}}]}}
        d.kubectl("apply", "-f", "-", input=json.dumps(pod))
        running_pod(d, "sample", plugin.log())
        (ctr,) = pod_resources(d, "sample")["containers"]
        assert sorted(i for dev in ctr["devices"] for i in dev["device_ids"]) == ["Dev-1", "Dev-2"]
        d.kubectl("delete", "pod", "sample", "--wait=true", "--timeout=60s")


def test_the_example_driver_beside_the_demos_fake_driver(demo: DemoDaemon, dra_example_driver: Path) -> None:
    d = demo
    cdi = d.base / "cdi-example"
    argv = [str(dra_example_driver), "--kubeconfig", str(d.kubeconfig), "--node-name", NODE,
            "--kubelet-registrar-directory-path", str(d.root / "plugins_registry"),
            "--kubelet-plugins-directory-path", str(d.root / "plugins"), "--cdi-root", str(cdi),
            "--device-profile", "net", "--num-devices", "1"]
    # no --pod-uid: the rolling-update socket names (with the pod's UID) would pass the 107-byte limit of a
    # unix socket path under the demo's ROOT in a temporary folder
    with running(argv, d.base / "example-driver.log", env={"NODE_NAME": NODE}) as drv:
        try:
            wait_for(lambda: any(s["spec"]["driver"] == NET and s["spec"].get("nodeName") == NODE
                                 for s in d.kubectl_json("get", "resourceslices")["items"]),
                     timeout=60, what="the example driver's slice on demo-node")
        except AssertionError as err:
            raise AssertionError(f"{err}\n--- driver log ---\n{drv.log()}\n--- daemon log ---\n"
                                 f"{(d.base / 'daemon.log').read_text(errors='replace')[-3000:]}") from None
        classes = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": NET},
                   "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{NET}'"}}]}}
        template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                    "metadata": {"name": "nic-10g-in-5g-out"}, "spec": {"spec": {"devices": {"requests": [
                        {"name": "nic", "exactly": {"deviceClassName": NET, "capacity": {"requests": {
                            "ingressBandwidth": "10G", "egressBandwidth": "5G"}}}}]}}}}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "net-pod"}, "spec": {
            "nodeSelector": {"kubernetes.io/hostname": NODE},
            "containers": [{"name": "ctr0", "image": "ubuntu:22.04", "resources": {"claims": [{"name": "nic"}]}}],
            "resourceClaims": [{"name": "nic", "resourceClaimTemplateName": "nic-10g-in-5g-out"}]}}
        for doc in (classes, template, pod):
            d.kubectl("apply", "-f", "-", input=json.dumps(doc))
        running_pod(d, "net-pod", drv.log())
        env = container_env(pod_resources(d, "net-pod"), "ctr0", [cdi])
        assert env["NET_DEVICE_0_INGRESS_RATE"] == "10000000000" and env["NET_DEVICE_0_EGRESS_RATE"] == "5000000000"
        assert env["KUBERNETES_NODE_NAME"] == NODE and env["DRA_RESOURCE_DRIVER_NAME"] == NET
        d.kubectl("delete", "pod", "net-pod", "--wait=true", "--timeout=60s")


def exclusive_cpus_of_all(d: Daemon) -> set[int]:
    """Every CPU a container holds exclusively on the node (pod-resources List): the demo's own pods too."""
    out = d.grpcurl(d.pod_resources, "v1.PodResourcesLister/List")
    assert out.returncode == 0, out.stderr
    return {int(c) for pod in json.loads(out.stdout or "{}").get("pod_resources") or []
            for ctr in pod.get("containers") or [] for c in ctr.get("cpu_ids") or []}


@pytest.mark.usefixtures("private_mounts")
def test_nfd_topology_updater_as_the_readme_points_it(demo: DemoDaemon, nfd_topology_updater: Path) -> None:
    d = demo
    numa = {"node-0": {0, 1, 2, 3}, "node-1": {4, 5, 6, 7}}  # configs/demo.yaml's nodeProfile.numaNodes
    view = d.base / ".run" / "state" / "host" / "sys"  # sysfsDir's default, STATE_DIR/host/sys
    assert (view / "devices" / "system" / "node" / "node1" / "cpulist").is_file()
    port = d.kubectl_json("get", "node", NODE)["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    d.kubectl("apply", "-f", "-", input=nfd.nrt_crd())
    token = d.base / "token"
    token.write_text(nfd.bearer_token(d))
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-ec", 'mount --bind "$0" /sys && exec "$@"',
            str(view), str(nfd_topology_updater), "-kubeconfig", str(d.kubeconfig),
            "-kubelet-config-uri", f"https://127.0.0.1:{port}/configz", "-api-auth-token-file", str(token),
            "-podresources-socket", str(d.pod_resources), "-kubelet-state-dir", str(d.root),
            "-sleep-interval", "0", "-port", str(free_port()), "-config", str(d.base / "no-nfd.conf"), "-v", "2"]
    with running(argv, d.base / "nfd.log", env={"NODE_NAME": NODE, "KUBERNETES_NAMESPACE": "default"}) as proc:
        pod = json.loads(nfd.guaranteed_pod("nfd-pinned", 1))
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": NODE}
        d.kubectl("apply", "-f", "-", input=json.dumps(pod))  # a state-file change: the updater's first publish
        running_pod(d, "nfd-pinned", proc.log())
        held = nfd.exclusive_cpus(d, "nfd-pinned")
        assert len(held) == 1, held
        obj = nfd.wait_matching(d, proc, numa, exclusive_cpus_of_all(d), timeout=60, node=NODE)
        attrs = {a["name"]: a["value"] for a in obj.get("attributes") or []}
        assert attrs["topologyManagerPolicy"] == "best-effort", attrs  # demo.yaml's, read through /configz
        assert zone_names(obj) == ["node-0", "node-1"]
        d.kubectl("delete", "pod", "nfd-pinned", "--wait=true", "--timeout=60s")
        nfd.wait_matching(d, proc, numa, exclusive_cpus_of_all(d), timeout=60, node=NODE)


def zone_names(obj: dict[str, object]) -> list[str]:
    zones = obj.get("zones")
    assert isinstance(zones, list), obj
    return sorted(str(z["name"]) for z in zones)
