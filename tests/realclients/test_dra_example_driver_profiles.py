"""dra-example-driver's cpu and net device profiles (consumable capacity), unchanged, against a nodeagent daemon.

The same kubelet plugin binary as test_dra_example_driver.py, started with `--device-profile cpu` and
`--device-profile net` as its Helm chart starts it (`deviceProfile=cpu|net`): the demo specs written for those
profiles (demo/examples/native-resource-request, demo/examples/net-consumable-capacity) as the project's own
manifests, checked through the claims' allocation results (one device shared, each request its own share and
consumed capacity), the environment the driver's CDI devices give each container (what the demo pods print
with `export`), and `nodeagent conformance dra-driver` against each profile.

The cpu profile also publishes nodeAllocatableResourceMappings (KEP-5517, gate DRANodeAllocatableResources,
alpha and off by default in v1.37, refused by nodeagent): as a v1.37 kube-apiserver with its default gates
does, the API drops the field, the driver's slice controller says so (DroppedFieldsError), and the claims
work without it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.daemon_helpers import running_daemon, wait_for
from tests.integration.dra_helpers import KUBELET
from tests.realclients.test_dra_example_driver import (
    ExampleDriver,
    allocated,
    apply,
    delete_namespace_objects,
    device_class,
    driver_slices,
    env_of,
    example_driver,
    namespace,
    pod,
    pod_claim,
    running_pod,
    template,
    wait_published,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CPU = "cpu.example.com"
NET = "net.example.com"



def profile_node(binary: Path, profile: str, *extra: str, devices: int, driver: str) -> Iterator[ExampleDriver]:
    """One daemon with the example driver in `profile` and the DeviceClass its chart installs."""
    base = Path(tempfile.mkdtemp(prefix=f"na-{profile}-", dir="/tmp"))
    try:
        with running_daemon(base, KUBELET) as d, example_driver(binary, d, profile, *extra) as drv:
            assert drv.name == driver
            wait_published(drv, devices)
            apply(d, device_class(driver))
            yield drv
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def cpu_node(dra_example_driver: Path) -> Iterator[ExampleDriver]:
    """The native-resource-request demo's driver: one NUMA-node device with 2 CPUs of consumable capacity."""
    yield from profile_node(dra_example_driver, "cpu", "--cpu-numa-nodes", "1", "--cpus-per-numa-node", "2",
                            devices=1, driver=CPU)


@pytest.fixture(scope="module")
def net_node(dra_example_driver: Path) -> Iterator[ExampleDriver]:
    """The net-consumable-capacity demo's driver: one NIC with 100G of ingress and egress bandwidth."""
    yield from profile_node(dra_example_driver, "net", "--num-devices", "1", devices=1, driver=NET)


def capacity_request(driver: str, name: str, requests: dict[str, str] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": driver}
    if requests:
        exactly["capacity"] = {"requests": requests}
    return {"name": name, "exactly": exactly}


def shares(results: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, str]]]:
    """(request, device, consumedCapacity) of each result, each with a share id of its own."""
    assert all(r.get("shareID") for r in results) and len({r["shareID"] for r in results}) == len(results), results
    return sorted((r["request"], r["device"], r.get("consumedCapacity") or {}) for r in results)


# --- cpu ----------------------------------------------------------------------------------------------------


def test_cpu_slice_and_the_dropped_node_allocatable_mapping(cpu_node: ExampleDriver) -> None:
    (slice_,) = driver_slices(cpu_node.daemon, CPU)
    (dev,) = slice_["spec"]["devices"]
    assert dev["name"] == "numa-0" and dev["allowMultipleAllocations"] is True
    assert dev["attributes"] == {"numaNodeID": {"int": 0}}
    assert dev["capacity"] == {f"{CPU}/cpu": {"value": "2"}}
    # DRANodeAllocatableResources is off (v1.37's default; nodeagent refuses it): the field is dropped
    assert "nodeAllocatableResourceMappings" not in dev
    assert "some fields were dropped by the apiserver" in cpu_node.process.full_log()


def test_native_resource_request_two_cpu_shares_of_one_numa_node(cpu_node: ExampleDriver) -> None:
    """native-resource-request: two 1-CPU requests of one claim, both satisfied by numa-0 with distinct shares;
    the device's capacity is then used up, so a pod asking for one more CPU of it stays Pending."""
    drv, d, ns = cpu_node, cpu_node.daemon, "native-resource-request"
    one_cpu = {f"{CPU}/cpu": "1"}
    apply(d, namespace(ns), template(ns, "two-cpus", [capacity_request(CPU, "cpu0", one_cpu),
                                                      capacity_request(CPU, "cpu1", one_cpu)]),
          pod(ns, "pod0", {"ctr0": ["cpus"]}, {"cpus": {"resourceClaimTemplateName": "two-cpus"}}))
    try:
        p = running_pod(drv, ns, "pod0")
        results = allocated(d, ns, pod_claim(p, "cpus"))
        assert shares(results) == [("cpu0", "numa-0", one_cpu), ("cpu1", "numa-0", one_cpu)]
        env = env_of(drv, ns, "pod0", "ctr0")
        assert env["CPU_DEVICE_0"] == "numa-0" and env["CPU_DEVICE_0_CONSUMED_CPU"] == "1", env
        assert env["DRA_RESOURCE_DRIVER_NAME"] == CPU
        apply(d, template(ns, "one-more", [capacity_request(CPU, "cpu", one_cpu)]),
              pod(ns, "pod1", {"ctr0": ["cpu"]}, {"cpu": {"resourceClaimTemplateName": "one-more"}}))
        wait_for(lambda: any(c.get("reason") == "Unschedulable" for c in
                             d.kubectl_json("get", "pod", "-n", ns, "pod1")["status"].get("conditions") or []),
                 timeout=30, what="pod1 unschedulable: numa-0's capacity is used up")
        assert d.kubectl_json("get", "pod", "-n", ns, "pod1")["status"].get("phase") == "Pending"
        d.kubectl("delete", "pod", "-n", ns, "pod0", "--wait=true", "--timeout=60s")
        running_pod(drv, ns, "pod1", timeout=60)  # the shares freed, the pending pod gets one
    finally:
        delete_namespace_objects(d, ns)


# --- net ----------------------------------------------------------------------------------------------------


def test_net_slice_publishes_bandwidth_capacity_with_its_request_policy(net_node: ExampleDriver) -> None:
    (slice_,) = driver_slices(net_node.daemon, NET)
    (dev,) = slice_["spec"]["devices"]
    assert dev["name"] == "nic-0" and dev["allowMultipleAllocations"] is True
    assert dev["capacity"]["vfs"] == {"value": "100", "requestPolicy": {"default": "1", "validValues": ["1"]}}
    for key in ("ingressBandwidth", "egressBandwidth"):
        assert dev["capacity"][key] == {"value": "100G", "requestPolicy": {
            "default": "1G", "validRange": {"min": "100M", "max": "100G", "step": "1M"}}}
    assert "dropped" not in net_node.process.full_log()


def test_net_consumable_capacity_two_pods_share_one_nic(net_node: ExampleDriver) -> None:
    """net-consumable-capacity: pod0 asks 10G in / 5G out, pod1 5G / 5G; both get nic-0, each its own share and
    rates in its environment; a pod asking for nothing consumes the policy's defaults (1G each way, one VF)."""
    drv, d, ns = net_node, net_node.daemon, "net-consumable-capacity"
    apply(d, namespace(ns),
          template(ns, "nic-10g-in-5g-out", [capacity_request(NET, "nic", {"ingressBandwidth": "10G",
                                                                          "egressBandwidth": "5G"})]),
          template(ns, "nic-5g-in-5g-out", [capacity_request(NET, "nic", {"ingressBandwidth": "5G",
                                                                         "egressBandwidth": "5G"})]),
          template(ns, "nic-default", [capacity_request(NET, "nic")]),
          pod(ns, "pod0", {"ctr0": ["nic"]}, {"nic": {"resourceClaimTemplateName": "nic-10g-in-5g-out"}}),
          pod(ns, "pod1", {"ctr0": ["nic"]}, {"nic": {"resourceClaimTemplateName": "nic-5g-in-5g-out"}}),
          pod(ns, "pod2", {"ctr0": ["nic"]}, {"nic": {"resourceClaimTemplateName": "nic-default"}}))
    try:
        want = {"pod0": ("10G", "5G", "10000000000", "5000000000"), "pod1": ("5G", "5G", "5000000000", "5000000000"),
                "pod2": ("1G", "1G", "1000000000", "1000000000")}
        share_ids = set()
        for name, (ingress, egress, in_rate, out_rate) in want.items():
            p = running_pod(drv, ns, name)
            (result,) = allocated(d, ns, pod_claim(p, "nic"))
            assert result["device"] == "nic-0" and result.get("shareID"), result
            share_ids.add(result["shareID"])
            assert result["consumedCapacity"] == {"ingressBandwidth": ingress, "egressBandwidth": egress,
                                                  "vfs": "1"}, result
            env = env_of(drv, ns, name, "ctr0")
            assert env["NET_DEVICE_0_INGRESS_RATE"] == in_rate and env["NET_DEVICE_0_EGRESS_RATE"] == out_rate, env
            assert "NET_DEVICE_0_INGRESS_BURST" not in env  # the default NetConfig: no burst limit
        assert len(share_ids) == 3
    finally:
        delete_namespace_objects(d, ns)


def test_net_opaque_config_sets_the_burst(net_node: ExampleDriver) -> None:
    """A NetConfig (net.resource.example.com/v1alpha1) in the claim's config reaches the driver's prepare."""
    drv, d, ns = net_node, net_node.daemon, "net-burst"
    config = [{"requests": ["nic"], "opaque": {"driver": NET, "parameters": {
        "apiVersion": "net.resource.example.com/v1alpha1", "kind": "NetConfig",
        "bwBurst": {"ingressBurst": 4096, "egressBurst": 2048}}}}]
    apply(d, namespace(ns), template(ns, "nic-burst", [capacity_request(NET, "nic", {"ingressBandwidth": "2G"})],
                                     config),
          pod(ns, "pod0", {"ctr0": ["nic"]}, {"nic": {"resourceClaimTemplateName": "nic-burst"}}))
    try:
        running_pod(drv, ns, "pod0")
        env = env_of(drv, ns, "pod0", "ctr0")
        assert env["NET_DEVICE_0_INGRESS_BURST"] == "4096" and env["NET_DEVICE_0_EGRESS_BURST"] == "2048", env
        assert env["NET_DEVICE_0_INGRESS_RATE"] == "2000000000"
    finally:
        delete_namespace_objects(d, ns)


# --- the conformance suite ----------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["cpu", "net"])
def test_conformance_dra_driver_passes_with_the_profile(dra_example_driver: Path, short_dir: Path,
                                                        profile: str) -> None:
    from tests.integration.test_conformance import conformance, junit

    command = (f"{dra_example_driver} --kubeconfig {{kubeconfig}} --node-name {{node}} "
               "--kubelet-registrar-directory-path {registry} --kubelet-plugins-directory-path {plugins} "
               f"--cdi-root {{cdi}} --device-profile {profile} --num-devices 2 --cpu-numa-nodes 2")
    report = short_dir / f"dra-{profile}.xml"
    out = conformance("dra-driver", "--driver-command", command, "--skip", "^health/|slices/republished",
                      "--junit", str(report), timeout=280)
    results = junit(report) if report.exists() else {}
    assert out.returncode == 0, out.stdout + out.stderr
    assert results and all(o in ("PASS", "SKIP") for o, _ in results.values()), json.dumps(results)
    assert results["unprepare/releases"][0] == "PASS"
