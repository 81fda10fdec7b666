"""kubernetes-sigs/dra-example-driver, built unchanged from its published module, against a nodeagent daemon.

The community's reference DRA driver (its kubelet plugin on the upstream kubeletplugin helper, and its
controller for binding conditions) runs beside `nodeagent run` with the daemon's kubeconfig and the
kubelet's plugin folders under the daemon's root dir, exactly as its DaemonSet runs beside a kubelet.
The scenarios of its demo specs (demo/examples in its module) are written here as the project's own
manifests, one namespace each, and checked through kubectl, pod-resources (grpcurl) and the CDI specs
the driver writes: what a container would get is the environment its CDI devices inject, which is what
the demo pods print with `export`.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, free_port, running_daemon, wait_for
from tests.integration.dra_helpers import KUBELET
from tests.realclients.helpers import Running, container_env, pod_resources, running

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

NODE = "test-node"
GPU = "gpu.example.com"


@dataclass
class ExampleDriver:
    """The example driver's kubelet plugin running beside one daemon."""

    daemon: Daemon
    process: Running
    cdi: Path
    name: str
    pod_uid: str

    def log(self) -> str:
        return self.process.log()

    def diagnose(self) -> str:
        return (f"--- driver log ---\n{self.log()[-4000:]}\n--- daemon log ---\n"
                f"{(self.daemon.base / 'daemon.log').read_text(errors='replace')[-4000:]}")


def plugin_argv(binary: Path, d: Daemon, cdi: Path, profile: str, pod_uid: str, *extra: str) -> list[str]:
    """The kubelet plugin's command line, as its Helm chart passes it (flags instead of the env it also reads)."""
    return [str(binary), "--kubeconfig", str(d.kubeconfig), "--node-name", NODE,
            "--kubelet-registrar-directory-path", str(d.root / "plugins_registry"),
            "--kubelet-plugins-directory-path", str(d.root / "plugins"),
            "--cdi-root", str(cdi), "--device-profile", profile, "--pod-uid", pod_uid, *extra]


@contextmanager
def example_driver(binary: Path, d: Daemon, profile: str = "gpu", *extra: str,
                   pod_uid: str | None = None) -> Iterator[ExampleDriver]:
    cdi = d.base / "cdi"
    pod_uid = pod_uid or str(uuid.uuid4())
    argv = plugin_argv(binary, d, cdi, profile, pod_uid, *extra)
    with running(argv, d.base / f"driver-{profile}.log", env={"NODE_NAME": NODE}) as proc:
        yield ExampleDriver(d, proc, cdi, f"{profile}.example.com", pod_uid)


def driver_slices(d: Daemon, driver: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = d.kubectl_json("get", "resourceslices")["items"]
    return [s for s in items if s["spec"]["driver"] == driver]


def wait_published(drv: ExampleDriver, devices: int, timeout: float = 60) -> list[dict[str, Any]]:
    def ready() -> list[dict[str, Any]] | None:
        slices = driver_slices(drv.daemon, drv.name)
        return slices if sum(len(s["spec"].get("devices") or []) for s in slices) == devices else None
    try:
        result: list[dict[str, Any]] = wait_for(ready, timeout=timeout,
                                                what=f"{drv.name} slices with {devices} devices")
    except AssertionError as err:
        raise AssertionError(f"{err}\n{drv.diagnose()}") from None
    return result


def device_class(driver: str = GPU, extended: str | None = None) -> str:
    """The DeviceClass the driver's Helm chart installs (selecting the driver's devices)."""
    ext = f"\n  extendedResourceName: {extended}" if extended else ""
    return f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {driver}}}
spec:
  selectors:
  - cel: {{expression: "device.driver == '{driver}'"}}{ext}
"""


def namespace(name: str, labels: dict[str, str] | None = None) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}})


def pod(ns: str, name: str, containers: dict[str, list[str]], claims: dict[str, dict[str, str]],
        limits: dict[str, str] | None = None) -> str:
    """A pod whose containers use the named pod claims (claims: pod claim name -> its source)."""
    spec: dict[str, Any] = {
        "containers": [{"name": c, "image": "ubuntu:22.04", "command": ["bash", "-c"],
                        "args": ["export; trap 'exit 0' TERM; sleep 9999 & wait"],
                        "resources": {"claims": [{"name": n} for n in used],
                                      **({"limits": limits} if limits else {})}}
                       for c, used in containers.items()],
        "resourceClaims": [{"name": n, **src} for n, src in claims.items()],
    }
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": ns, "name": name}, "spec": spec})


def template(ns: str, name: str, requests: list[dict[str, Any]], config: list[dict[str, Any]] | None = None,
             kind: str = "ResourceClaimTemplate") -> str:
    devices: dict[str, Any] = {"requests": requests, **({"config": config} if config else {})}
    spec = {"spec": {"devices": devices}} if kind == "ResourceClaimTemplate" else {"devices": devices}
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": kind,
                       "metadata": {"namespace": ns, "name": name}, "spec": spec})


def gpu_request(name: str, **exactly: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": GPU, **exactly}}


def apply(d: Daemon, *docs: str) -> None:
    """kubectl apply of the documents (each JSON or YAML), as one YAML stream."""
    objs = [o for doc in docs for o in yaml.safe_load_all(doc) if o]
    d.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objs))


def running_pod(drv: ExampleDriver, ns: str, name: str, timeout: float = 45) -> dict[str, Any]:
    try:
        result: dict[str, Any] = wait_for(
            lambda: (p := drv.daemon.kubectl_json("get", "pod", "-n", ns, name))["status"].get("phase") == "Running"
            and p, timeout=timeout, what=f"pod {ns}/{name} Running")
    except AssertionError as err:
        events = drv.daemon.kubectl("get", "events", "-n", ns, check=False).stdout
        raise AssertionError(f"{err}\n--- events ---\n{events}\n{drv.diagnose()}") from None
    return result


def allocated(d: Daemon, ns: str, claim: str) -> list[dict[str, Any]]:
    """The claim's allocation results."""
    c = d.kubectl_json("get", "resourceclaim", "-n", ns, claim)
    return list(((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or [])


def pod_claim(p: dict[str, Any], pod_claim_name: str) -> str:
    """The ResourceClaim behind one of the pod's claims (generated from a template, or named)."""
    for s in p["status"].get("resourceClaimStatuses") or []:
        if s["name"] == pod_claim_name:
            return str(s["resourceClaimName"])
    for rc in p["spec"]["resourceClaims"]:
        if rc["name"] == pod_claim_name and rc.get("resourceClaimName"):
            return str(rc["resourceClaimName"])
    raise AssertionError(f"pod {p['metadata']['name']} has no claim {pod_claim_name}: {p['status']}")


def env_of(drv: ExampleDriver, ns: str, name: str, container: str) -> dict[str, str]:
    return container_env(pod_resources(drv.daemon, name, ns), container, [drv.cdi])


def gpu_envs(env: dict[str, str]) -> dict[str, str]:
    """GPU_DEVICE_<n>=gpu-<n> entries: the devices a container sees."""
    return {k: v for k, v in env.items() if re.fullmatch(r"GPU_DEVICE_[0-9A-Z_]+", k) and v.startswith("gpu-")}


def delete_namespace_objects(d: Daemon, ns: str) -> None:
    """Delete the scenario's pods (their devices are unprepared) and claims, then the namespace."""
    d.kubectl("delete", "pods", "--all", "-n", ns, "--wait=true", "--timeout=60s", check=False)
    d.kubectl("delete", "resourceclaims,resourceclaimtemplates", "--all", "-n", ns, "--wait=true",
              "--timeout=30s", check=False)
    d.kubectl("delete", "namespace", ns, "--wait=false", check=False)


@pytest.fixture(scope="module")
def gpu_node(dra_example_driver: Path) -> Iterator[ExampleDriver]:
    """One daemon with the example driver's gpu profile (8 GPUs, its default) and its DeviceClass."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="na-rc-", dir="/tmp"))
    try:
        with running_daemon(base, KUBELET) as d, example_driver(dra_example_driver, d) as drv:
            wait_published(drv, 8)
            apply(d, device_class(extended=None))
            yield drv
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --- registration, slices -------------------------------------------------------------------------------------


def test_registers_with_rolling_update_socket_names_and_publishes_its_slice(gpu_node: ExampleDriver) -> None:
    drv, d = gpu_node, gpu_node.daemon
    # the helper's rolling-update mode (--pod-uid) puts the pod UID into both socket names
    regs = [p.name for p in (d.root / "plugins_registry").iterdir()]
    assert any(drv.pod_uid in r and r.startswith(GPU) for r in regs), regs
    assert any(drv.pod_uid in p.name for p in (d.root / "plugins" / GPU).glob("*.sock")), \
        list((d.root / "plugins" / GPU).iterdir())
    (slice_,) = driver_slices(d, GPU)
    assert slice_["spec"]["nodeName"] == NODE and slice_["spec"]["pool"]["name"] == NODE
    assert [o["kind"] for o in slice_["metadata"]["ownerReferences"]] == ["Node"]
    devices = {dev["name"]: dev for dev in slice_["spec"]["devices"]}
    assert sorted(devices) == [f"gpu-{i}" for i in range(8)]
    for dev in devices.values():
        assert dev["attributes"]["model"] == {"string": "LATEST-GPU-MODEL"}
        assert dev["attributes"]["driverVersion"] == {"version": "1.0.0"}
        assert dev["capacity"]["memory"]["value"] == "80Gi"


def test_slice_fields_survive_and_the_driver_logs_no_dropped_fields(gpu_node: ExampleDriver) -> None:
    """The driver publishes allowMultipleAllocations: false on every device; the API must keep it (a real
    kube-apiserver does), otherwise the helper's slice controller logs a DroppedFieldsError on each write."""
    (slice_,) = driver_slices(gpu_node.daemon, GPU)
    assert all(dev.get("allowMultipleAllocations") is False for dev in slice_["spec"]["devices"]), slice_
    assert "DroppedFields" not in gpu_node.process.full_log() and "dropped" not in gpu_node.process.full_log()


# --- the demo specs' scenarios (gpu profile) -------------------------------------------------------------------


def test_two_pods_one_gpu_each_from_a_template(gpu_node: ExampleDriver) -> None:
    """basic-resourceclaimtemplate: two pods, one container each, one distinct GPU each."""
    drv, d, ns = gpu_node, gpu_node.daemon, "basic-resourceclaimtemplate"
    one = {"gpu": {"resourceClaimTemplateName": "single-gpu"}}
    apply(d, namespace(ns), template(ns, "single-gpu", [gpu_request("gpu")]),
          pod(ns, "pod0", {"ctr0": ["gpu"]}, one), pod(ns, "pod1", {"ctr0": ["gpu"]}, one))
    try:
        seen = []
        for name in ("pod0", "pod1"):
            p = running_pod(drv, ns, name)
            (result,) = allocated(d, ns, pod_claim(p, "gpu"))
            env = env_of(drv, ns, name, "ctr0")
            assert gpu_envs(env) == {f"GPU_DEVICE_{result['device'][4:]}": result["device"]}, env
            assert env["KUBERNETES_NODE_NAME"] == NODE and env["DRA_RESOURCE_DRIVER_NAME"] == GPU
            assert env["DRA_ADMIN_ACCESS"] == "false"
            seen.append(result["device"])
        assert len(set(seen)) == 2, seen
    finally:
        delete_namespace_objects(d, ns)


def test_one_claim_shared_by_two_containers(gpu_node: ExampleDriver) -> None:
    """basic-shared-claim-across-containers: both containers see the same GPU."""
    drv, d, ns = gpu_node, gpu_node.daemon, "basic-shared-claim-across-containers"
    apply(d, namespace(ns), template(ns, "single-gpu", [gpu_request("gpu")]),
          pod(ns, "pod0", {"ctr0": ["shared-gpu"], "ctr1": ["shared-gpu"]},
              {"shared-gpu": {"resourceClaimTemplateName": "single-gpu"}}))
    try:
        running_pod(drv, ns, "pod0")
        envs = [gpu_envs(env_of(drv, ns, "pod0", c)) for c in ("ctr0", "ctr1")]
        assert envs[0] == envs[1] and len(envs[0]) == 1, envs
    finally:
        delete_namespace_objects(d, ns)


def shared_claim_pods(ns: str) -> list[str]:
    return [namespace(ns), template(ns, "single-gpu", [gpu_request("gpu")], kind="ResourceClaim"),
            pod(ns, "pod0", {"ctr0": ["shared-gpu"]}, {"shared-gpu": {"resourceClaimName": "single-gpu"}}),
            pod(ns, "pod1", {"ctr0": ["shared-gpu"]}, {"shared-gpu": {"resourceClaimName": "single-gpu"}})]


def test_one_standalone_claim_shared_by_two_pods(gpu_node: ExampleDriver) -> None:
    """basic-shared-claim-across-pods: both pods see the claim's one GPU; the claim reserves both."""
    drv, d, ns = gpu_node, gpu_node.daemon, "basic-shared-claim-across-pods"
    apply(d, *shared_claim_pods(ns))
    try:
        uids = {running_pod(drv, ns, n)["metadata"]["uid"] for n in ("pod0", "pod1")}
        (result,) = allocated(d, ns, "single-gpu")
        claim = d.kubectl_json("get", "resourceclaim", "-n", ns, "single-gpu")
        assert {r["uid"] for r in claim["status"]["reservedFor"]} == uids
        for name in ("pod0", "pod1"):
            assert gpu_envs(env_of(drv, ns, name, "ctr0")) == {f"GPU_DEVICE_{result['device'][4:]}": result["device"]}
    finally:
        delete_namespace_objects(d, ns)


def test_standalone_claim_with_device_status_is_deallocated_after_its_last_pod(
        dra_example_driver: Path, short_dir: Path) -> None:
    """With --gpu-device-status the driver writes the claim's status.devices; once the claim's last pod is
    gone the claim controller must still deallocate it (kube-controller-manager does), freeing the GPU."""
    with running_daemon(short_dir, KUBELET) as d, example_driver(dra_example_driver, d, "gpu", "--num-devices",
                                                                  "1", "--gpu-device-status") as drv:
        wait_published(drv, 1)
        ns = "shared-pods-status"
        apply(d, device_class(), *shared_claim_pods(ns))
        for name in ("pod0", "pod1"):
            running_pod(drv, ns, name)
        wait_for(lambda: (d.kubectl_json("get", "resourceclaim", "-n", ns, "single-gpu")["status"]
                          .get("devices") or [{}])[0].get("data"), timeout=30, what="status.devices written")
        d.kubectl("delete", "pods", "--all", "-n", ns, "--wait=true", "--timeout=60s")
        wait_for(lambda: not allocated(d, ns, "single-gpu"), timeout=30, what="claim deallocated")
        # the only GPU is free again: a new pod with its own claim runs
        apply(d, template(ns, "other", [gpu_request("gpu")], kind="ResourceClaim"),
              pod(ns, "pod2", {"ctr0": ["g"]}, {"g": {"resourceClaimName": "other"}}))
        running_pod(drv, ns, "pod2")


def test_multiple_requests_in_one_claim(gpu_node: ExampleDriver) -> None:
    """basic-multiple-requests: one claim with two requests gives the container two distinct GPUs."""
    drv, d, ns = gpu_node, gpu_node.daemon, "basic-multiple-requests"
    apply(d, namespace(ns), template(ns, "multiple-gpus", [gpu_request("gpu-1"), gpu_request("gpu-2")]),
          pod(ns, "pod0", {"ctr0": ["gpus"]}, {"gpus": {"resourceClaimTemplateName": "multiple-gpus"}}))
    try:
        p = running_pod(drv, ns, "pod0")
        results = allocated(d, ns, pod_claim(p, "gpus"))
        assert sorted(r["request"] for r in results) == ["gpu-1", "gpu-2"]
        assert sorted(gpu_envs(env_of(drv, ns, "pod0", "ctr0")).values()) == sorted(r["device"] for r in results)
    finally:
        delete_namespace_objects(d, ns)


def test_opaque_config_reaches_the_driver(gpu_node: ExampleDriver) -> None:
    """basic-resourceclaim-opaque-config: each request's GpuConfig (time slicing / space partitioning) is
    applied by the driver to that request's device only."""
    drv, d, ns = gpu_node, gpu_node.daemon, "basic-resourceclaim-opaque-config"

    def cfg(request: str, sharing: dict[str, Any]) -> dict[str, Any]:
        return {"requests": [request], "opaque": {"driver": GPU, "parameters": {
            "apiVersion": "gpu.resource.example.com/v1alpha1", "kind": "GpuConfig", "sharing": sharing}}}
    config = [cfg("ts-gpu", {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}),
              cfg("sp-gpu", {"strategy": "SpacePartitioning", "spacePartitioningConfig": {"partitionCount": 10}})]
    apply(d, namespace(ns), template(ns, "multiple-gpus", [gpu_request("ts-gpu"), gpu_request("sp-gpu")], config),
          pod(ns, "pod0", {"ctr0": ["gpus"]}, {"gpus": {"resourceClaimTemplateName": "multiple-gpus"}}))
    try:
        p = running_pod(drv, ns, "pod0")
        by_request = {r["request"]: r["device"][4:] for r in allocated(d, ns, pod_claim(p, "gpus"))}
        env = env_of(drv, ns, "pod0", "ctr0")
        ts, sp = by_request["ts-gpu"], by_request["sp-gpu"]
        assert env[f"GPU_DEVICE_{ts}_SHARING_STRATEGY"] == "TimeSlicing"
        assert env[f"GPU_DEVICE_{ts}_TIMESLICE_INTERVAL"] == "Long"
        assert env[f"GPU_DEVICE_{sp}_SHARING_STRATEGY"] == "SpacePartitioning"
        assert env[f"GPU_DEVICE_{sp}_PARTITION_COUNT"] == "10"
    finally:
        delete_namespace_objects(d, ns)


def test_admin_access_sees_devices_in_use(gpu_node: ExampleDriver) -> None:
    """admin-access: in a namespace labelled for admin access, a claim for All GPUs with adminAccess is
    allocated even while another pod holds one of them, and the driver marks the access in the env."""
    drv, d = gpu_node, gpu_node.daemon
    user, admin = "admin-access-user", "admin-access"
    apply(d, namespace(user), template(user, "single-gpu", [gpu_request("gpu")]),
          pod(user, "pod0", {"ctr0": ["gpu"]}, {"gpu": {"resourceClaimTemplateName": "single-gpu"}}),
          namespace(admin, {"resource.kubernetes.io/admin-access": "true"}),
          template(admin, "multiple-gpus-admin", [gpu_request("admin-gpu", allocationMode="All", adminAccess=True)]),
          pod(admin, "pod0", {"ctr0": ["admin-gpus"]}, {"admin-gpus": {"resourceClaimTemplateName":
                                                                         "multiple-gpus-admin"}}))
    try:
        running_pod(drv, user, "pod0")
        p = running_pod(drv, admin, "pod0")
        results = allocated(d, admin, pod_claim(p, "admin-gpus"))
        assert len(results) == 8 and all(r.get("adminAccess") for r in results), results
        env = env_of(drv, admin, "pod0", "ctr0")
        assert env["DRA_ADMIN_ACCESS"] == "true" and len(gpu_envs(env)) == 8, env
    finally:
        delete_namespace_objects(d, admin)
        delete_namespace_objects(d, user)


def test_cel_selector_picks_the_device(gpu_node: ExampleDriver) -> None:
    """cel-selector: a selector on the device's attributes decides which GPU the claim gets."""
    drv, d, ns = gpu_node, gpu_node.daemon, "cel-selector"
    sel = [{"cel": {"expression": f"device.attributes['{GPU}'].index == 5"}}]
    apply(d, namespace(ns), template(ns, "gpu-five", [gpu_request("gpu", selectors=sel)]),
          pod(ns, "pod0", {"ctr0": ["gpu"]}, {"gpu": {"resourceClaimTemplateName": "gpu-five"}}))
    try:
        p = running_pod(drv, ns, "pod0")
        (result,) = allocated(d, ns, pod_claim(p, "gpu"))
        assert result["device"] == "gpu-5"
        assert gpu_envs(env_of(drv, ns, "pod0", "ctr0")) == {"GPU_DEVICE_5": "gpu-5"}
    finally:
        delete_namespace_objects(d, ns)


def test_prioritized_alternatives_fall_back(gpu_node: ExampleDriver) -> None:
    """prioritized-alternatives: the first alternative asks for more memory than any GPU has, so the
    claim gets the second one, and the result names the subrequest."""
    drv, d, ns = gpu_node, gpu_node.daemon, "prioritized-alternatives"
    big = {"name": "big", "deviceClassName": GPU, "selectors": [
        {"cel": {"expression": f"device.capacity['{GPU}'].memory.compareTo(quantity('160Gi')) >= 0"}}]}
    small = {"name": "small", "deviceClassName": GPU, "count": 2}
    apply(d, namespace(ns), template(ns, "prioritized", [{"name": "gpu", "firstAvailable": [big, small]}]),
          pod(ns, "pod0", {"ctr0": ["gpu"]}, {"gpu": {"resourceClaimTemplateName": "prioritized"}}))
    try:
        p = running_pod(drv, ns, "pod0")
        results = allocated(d, ns, pod_claim(p, "gpu"))
        assert [r["request"] for r in results] == ["gpu/small", "gpu/small"], results
        assert len(gpu_envs(env_of(drv, ns, "pod0", "ctr0"))) == 2
    finally:
        delete_namespace_objects(d, ns)


def test_extended_resource_request_is_backed_by_a_claim(gpu_node: ExampleDriver) -> None:
    """extended-resource-request: a pod asking for the class's implicit extended resource
    (deviceclass.resource.kubernetes.io/gpu.example.com) gets a GPU through a claim the scheduler makes."""
    drv, d, ns = gpu_node, gpu_node.daemon, "extended-resource-request"
    ext = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": ns, "name": "pod0"}, "spec": {
        "containers": [{"name": "ctr0", "image": "ubuntu:22.04", "command": ["bash", "-c"], "args": ["export"],
                        "resources": {"limits": {f"deviceclass.resource.kubernetes.io/{GPU}": "1"}}}]}}
    apply(d, namespace(ns), json.dumps(ext))
    try:
        p = running_pod(drv, ns, "pod0")
        status = p["status"].get("extendedResourceClaimStatus") or {}
        assert status.get("resourceClaimName"), p["status"]
        (result,) = allocated(d, ns, status["resourceClaimName"])
        assert gpu_envs(env_of(drv, ns, "pod0", "ctr0")) == {f"GPU_DEVICE_{result['device'][4:]}": result["device"]}
    finally:
        delete_namespace_objects(d, ns)


def test_device_taint_rule_keeps_new_pods_off_the_device(gpu_node: ExampleDriver) -> None:
    """device-taint-pod-noschedule: a DeviceTaintRule with NoSchedule on gpu-0..gpu-6 leaves a pod that
    already runs alone, and a new pod gets the one untainted GPU."""
    drv, d, ns = gpu_node, gpu_node.daemon, "device-taints"
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "rc-noschedule"},
            "spec": {"deviceSelector": {"driver": GPU},
                     "taint": {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}}}
    one = {"gpu": {"resourceClaimTemplateName": "single-gpu"}}
    apply(d, namespace(ns), template(ns, "single-gpu", [gpu_request("gpu")]), pod(ns, "pod0", {"ctr0": ["gpu"]}, one))
    try:
        running_pod(drv, ns, "pod0")
        d.kubectl("apply", "-f", "-", input=json.dumps(rule))
        apply(d, pod(ns, "pod1", {"ctr0": ["gpu"]}, one))
        time.sleep(3)
        assert d.kubectl_json("get", "pod", "-n", ns, "pod1")["status"].get("phase") == "Pending"
        assert d.kubectl_json("get", "pod", "-n", ns, "pod0")["status"].get("phase") == "Running"
    finally:
        d.kubectl("delete", "devicetaintrule", "rc-noschedule", check=False)
        delete_namespace_objects(d, ns)


# --- other driver settings --------------------------------------------------------------------------------------


def test_partitionable_devices(dra_example_driver: Path, short_dir: Path) -> None:
    """partitionable-devices: --gpu-partitions 2 publishes shared counters and partitions; two partitions of
    one GPU fit together, while the full GPU and a partition of it never do."""
    with running_daemon(short_dir, KUBELET) as d, example_driver(dra_example_driver, d, "gpu", "--num-devices",
                                                                  "1", "--gpu-partitions", "2") as drv:
        slices = wait_published(drv, 3)
        assert any(s["spec"].get("sharedCounters") for s in driver_slices(d, GPU)), slices
        ns = "partitionable"
        part = [gpu_request("gpu", selectors=[{"cel": {"expression": f"device.attributes['{GPU}'].partition >= 0"}}])]
        one = {"gpu": {"resourceClaimTemplateName": "partition"}}
        apply(d, device_class(), namespace(ns), template(ns, "partition", part),
              pod(ns, "pod0", {"ctr0": ["gpu"]}, one), pod(ns, "pod1", {"ctr0": ["gpu"]}, one))
        devices = sorted(allocated(d, ns, pod_claim(running_pod(drv, ns, n), "gpu"))[0]["device"]
                         for n in ("pod0", "pod1"))
        assert devices == ["gpu-0-partition-0", "gpu-0-partition-1"]
        full = [gpu_request("gpu", selectors=[{"cel": {"expression": f"device.attributes['{GPU}'].full == true"}}])]
        apply(d, template(ns, "full", full), pod(ns, "pod2", {"ctr0": ["gpu"]},
                                                 {"gpu": {"resourceClaimTemplateName": "full"}}))
        time.sleep(3)
        assert d.kubectl_json("get", "pod", "-n", ns, "pod2")["status"].get("phase") == "Pending"


def test_binding_conditions_met_by_the_controller(dra_example_driver: Path, short_dir: Path) -> None:
    """binding-conditions: devices carry bindingConditions; the pod binds only once the driver's controller
    (its BindingConditions plugin) has set the condition in the claim's status.devices."""
    controller = dra_example_driver.parent / "dra-example-controller"
    with running_daemon(short_dir, KUBELET) as d, example_driver(dra_example_driver, d, "gpu", "--num-devices",
                                                                  "2", "--binding-conditions") as drv:
        (slice_,) = wait_published(drv, 2)
        assert all(dev.get("bindingConditions") == ["BindingConditions"] for dev in slice_["spec"]["devices"])
        ns = "binding-conditions"
        apply(d, device_class(), namespace(ns), template(ns, "single-gpu", [gpu_request("gpu")]))
        with running([str(controller), "--kubeconfig", str(d.kubeconfig), "--driver-name", GPU,
                      "--enable-plugin", "BindingConditions"], short_dir / "controller.log") as ctl:
            apply(d, pod(ns, "pod0", {"ctr0": ["gpu"]}, {"gpu": {"resourceClaimTemplateName": "single-gpu"}}))
            try:
                p = running_pod(drv, ns, "pod0", timeout=60)
            except AssertionError as err:
                raise AssertionError(f"{err}\n--- controller log ---\n{ctl.log()}") from None
        claim = d.kubectl_json("get", "resourceclaim", "-n", ns, pod_claim(p, "gpu"))
        (status,) = claim["status"]["devices"]
        assert [(c["type"], c["status"]) for c in status["conditions"]] == [("BindingConditions", "True")]
        assert claim["status"]["allocation"]["devices"]["results"][0]["bindingConditions"] == ["BindingConditions"]


# --- restarts and the conformance suite -------------------------------------------------------------------------


def test_slices_republished_after_a_driver_restart_then_a_kubelet_restart(
        dra_example_driver: Path, short_dir: Path) -> None:
    """The driver is restarted (new pod UID, as a rolling update does), then the kubelet: the restarted node
    deletes the node's slices and the driver must publish them again, as it does against a kubelet (24 s)."""
    # the API server keeps its address across the restart, as a cluster's does while a kubelet restarts
    agent = {"controlPlane": {"apiServer": {"bindAddress": f"127.0.0.1:{free_port()}"}}}
    with running_daemon(short_dir, KUBELET, agent) as d:
        with example_driver(dra_example_driver, d, "gpu", "--num-devices", "2") as drv:
            wait_published(drv, 2)
        with example_driver(dra_example_driver, d, "gpu", "--num-devices", "2") as drv:
            wait_published(drv, 2)
            d.stop()
            with running_daemon(short_dir, KUBELET, agent) as d2:
                drv.daemon = d2
                started = time.monotonic()
                wait_published(drv, 2, timeout=90)
                assert time.monotonic() - started < 90
                assert drv.process.proc.poll() is None


def test_conformance_dra_driver_passes(dra_example_driver: Path, short_dir: Path) -> None:
    """`nodeagent conformance dra-driver` against the example driver, which the kubelet serves fine: every
    case passes (health cases skipped: the driver has no way to change a device's health from outside)."""
    from tests.integration.test_conformance import conformance, junit

    command = (f"{dra_example_driver} --kubeconfig {{kubeconfig}} --node-name {{node}} "
               "--kubelet-registrar-directory-path {registry} --kubelet-plugins-directory-path {plugins} "
               "--cdi-root {cdi} --num-devices 4")
    report = short_dir / "dra.xml"
    # slices/republished waits for the helper's 30 s SyncDelay, as for the project's own helper driver
    out = conformance("dra-driver", "--driver-command", command, "--skip", "^health/|slices/republished",
                      "--junit", str(report), timeout=280)
    results = junit(report) if report.exists() else {}
    assert out.returncode == 0, out.stdout + out.stderr
    assert results and all(o in ("PASS", "SKIP") for o, _ in results.values()), results
    assert results["unprepare/releases"][0] == "PASS" and results["restart/prepared-claims-survive"][0] == "PASS"
