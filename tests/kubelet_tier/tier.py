"""The kubelet tier itself: one kube-apiserver (with scheduler and controller-manager), a real-kubelet
node and a nodeagent node joined to it, the same plugins in front of both through recording proxies,
and the scenario runner that does each step on both nodes and compares what they show.

A scenario (scenarios/*.yaml) names its KubeletConfiguration overrides, its pods, and steps:

  create: [pod, ...]                       the pods, once per node (namespace <scenario>-k / -n)
  wait: {pods: [...], until: Running|Ready|Succeeded|Failed|Gone|Waiting/REASON, timeout: S}
                                           (Waiting/REASON: a container waiting with that reason)
  delete: {pods: [...], gracePeriodSeconds: N}
  device: {health: {device: gpu-1, health: Unhealthy}} | {restart: true} | {allocateError: text}
          | {preStartError: text} ("" clears either error)
                                           the device plugin of both nodes (its control socket)
  driver: {set_faults: {...}} | {set_health: {device: "{pool}/gpu-0", ...}}
                                           the DRA driver of both nodes (its control socket); {pool} is
                                           the node's pool (each node's driver publishes its own)
  deleteClaim: {name: NAME}                 delete a ResourceClaim of the scenario (both namespaces)
  restartNode: {}                          stop and start both nodes (kubelet and nodeagent)
  staticPod: {write: [pod, ...]} | {remove: [pod, ...]}
                                           a pod of the scenario's `staticPods` written to (removed from)
                                           each node's ROOT/manifests, which the scenario's
                                           KubeletConfiguration names as staticPodPath: "{root}/manifests"
                                           ({root}: each node's own root); waits and observations name
                                           its mirror pod (NAME-NODE)
  sleep: S
  compare: [node, pods, events, podresources, allocatable, calls, checkpoints] (or `all`)

Pods are pinned with spec.nodeName (the scheduler is not asked) unless the scenario says
`pin: selector` (DRA pods: the scheduler allocates their claims), then with a nodeSelector on
kubernetes.io/hostname. Scenarios that share a KubeletConfiguration run on the same two nodes; a new
configuration restarts both nodes from fresh state (the kubelet refuses a CPU manager policy other than
its checkpoint's, nodeagent too).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import yaml
from google.protobuf import json_format

from nodeagent.apis.podresources.v1 import api_pb2 as pr_pb2
from nodeagent.apis.podresources.v1 import api_pb2_grpc as pr_grpc
from plugins.common.control import request as control_request
from tests.integration.kubeapiserver import KubeAPIServer, running_kube_apiserver
from tests.integration.kubeapiserver_pki import kubeconfig, write_kubeconfig
from tests.kubelet_tier import compare, runtime
from tests.kubelet_tier.nanode import NodeAgentNode
from tests.kubelet_tier.realnode import HOST_IP, RealKubeletNode, sweep_leftovers

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE / "scenarios"
PROFILES = HERE / "profiles"
KUBELET_NODE, NA_NODE = "kt-kubelet", "kt-nodeagent"
SIDES = ("kubelet", "nodeagent")
DRA_DRIVER = "gpu.example.com"
DRA_PROFILE = HERE.parents[1] / "configs" / "plugins" / "fake-dra.yaml"  # the project's own profile

# The KubeletConfiguration both nodes get; scenarios add to it. Values are the kubelet's defaults
# where that matters to the comparison, written out so both sides read the same document.
STATIC_PODS = "manifests"  # under each node's root: where a scenario's staticPodPath "{root}/manifests" points

BASE_KUBELET_CONFIG: dict[str, Any] = {
    "cgroupDriver": "cgroupfs",
    "failSwapOn": False,
    "maxPods": 110,
    "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True}},
    "authorization": {"mode": "Webhook"},
    "nodeStatusUpdateFrequency": "2s",
    "nodeStatusReportFrequency": "10s",
    "syncFrequency": "5s",
    "fileCheckFrequency": "5s",
    "evictionPressureTransitionPeriod": "5s",
    "imageGCHighThresholdPercent": 100,
    "imageGCLowThresholdPercent": 99,
    "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                     "nodefs.inodesFree": "1%"},
    "containerLogMaxSize": "1Mi",
    "clusterDNS": ["10.96.0.10"],
    "clusterDomain": "cluster.local",
}


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


@dataclass
class Scenario:
    name: str
    description: str
    kubelet: dict[str, Any]
    pods: dict[str, dict[str, Any]]
    steps: list[dict[str, Any]]
    pin: str = "nodeName"
    profile: str = "fake-gpu.yaml"
    skip: str = ""  # why the scenario does not run yet (printed as the skip reason)
    objects: list[dict[str, Any]] = field(default_factory=list)  # namespaced, made in both namespaces
    cluster_objects: list[dict[str, Any]] = field(default_factory=list)  # made once (DeviceClasses)
    # static pods by name: written to ROOT/manifests of each node by the staticPod step (the scenario's
    # KubeletConfiguration sets staticPodPath: "{root}/manifests"); their mirror pods are NAME-NODE
    static_pods: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Scenario:
        doc = yaml.safe_load(path.read_text())
        pods = {}
        for pod in doc.get("pods", []):
            pods[pod["metadata"]["name"]] = pod
        return cls(name=path.stem, description=doc.get("description", ""), kubelet=doc.get("kubelet") or {},
                   pods=pods, steps=doc["steps"], pin=doc.get("pin", "nodeName"),
                   profile=doc.get("profile", "fake-gpu.yaml"), skip=doc.get("skip", ""),
                   objects=doc.get("objects") or [],
                   cluster_objects=doc.get("clusterObjects") or [],
                   static_pods={p["metadata"]["name"]: p for p in doc.get("staticPods") or []})

    @property
    def config(self) -> dict[str, Any]:
        return deep_merge(BASE_KUBELET_CONFIG, self.kubelet)

    def config_key(self) -> str:
        return json.dumps([self.config, self.profile], sort_keys=True)


def all_scenarios() -> list[Scenario]:
    return [Scenario.load(p) for p in sorted(SCENARIOS.glob("*.yaml"))]


class Api:
    """The admin's plain HTTPS client of the tier's kube-apiserver (no process per request)."""

    def __init__(self, server: KubeAPIServer) -> None:
        self._server = server
        ctx = ssl.create_default_context(cafile=str(server.pki.ca_cert))
        ctx.load_cert_chain(server.base / "pki" / "admin.crt", server.base / "pki" / "admin.key")
        self._ctx = ctx

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self._server.url + path, data=data, method=method,
                                     headers={"Accept": "application/json", "Content-Type": content_type})
        with urllib.request.urlopen(req, context=self._ctx, timeout=15) as resp:
            return json.loads(resp.read() or b"null")

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def maybe(self, path: str) -> Any:
        try:
            return self.get(path)
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return None
            raise


@dataclass
class Side:
    """One node of the tier with what the scenario runner needs of it."""

    name: str  # "kubelet" | "nodeagent"
    node: str
    root: Path  # the node's kubelet root dir (host path)
    calls: Path  # the device-plugin proxy's record
    dra_calls: Path
    plugin_dir: Path  # the device plugin's own folder (behind the proxy)
    suffix: str  # namespace suffix
    kubeconfig: Path = Path()  # the node's credentials on the host side (its DRA driver's)
    plugin: subprocess.Popen[bytes] | None = None
    proxy: subprocess.Popen[bytes] | None = None
    driver: subprocess.Popen[bytes] | None = None
    dra_proxy: subprocess.Popen[bytes] | None = None
    call_mark: int = 0
    dra_mark: int = 0

    @property
    def driver_root(self) -> Path:
        """The DRA driver's own root (its sockets; the proxy serves the node's)."""
        return self.plugin_dir.parent / "dra" / "kubelet"

    def namespace(self, scenario: str) -> str:
        return f"{scenario}-{self.suffix}"[:63]

    @property
    def pool(self) -> str:
        """The DRA driver's pool on this node: the node's name, as node-local drivers name theirs. A
        pool name is unique per driver in the cluster: the scheduler tracks allocated devices as
        driver/pool/device, so two nodes publishing the same pool share its devices (a device given
        on one node is taken on the other)."""
        return self.node

    @property
    def dra_profile(self) -> Path:
        return self.calls.parent / "fake-dra.yaml"

    @property
    def podresources_sock(self) -> Path:
        return self.root / "pod-resources" / "kubelet.sock"


@dataclass
class Outcome:
    """What one scenario found: unregistered differences fail it; registered ones are reported."""

    scenario: str
    failures: list[compare.Difference] = field(default_factory=list)
    ignored: list[tuple[compare.Difference, compare.Entry]] = field(default_factory=list)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)  # nodeagent's log lines of requests the API refused (403)


class Tier:
    def __init__(self, binary: Path, base: Path) -> None:
        self.binary = binary
        self.base = base
        self.register = compare.load_register()
        self._stack = contextlib.ExitStack()
        self.server: KubeAPIServer
        self.api: Api
        self.real: RealKubeletNode
        self.na: NodeAgentNode
        self.sides: dict[str, Side] = {}
        self._config_key = ""
        self._config: dict[str, Any] = {}
        self._profile = ""

    # ------------------------------------------------------------------ set-up

    def start(self) -> None:
        sweep_leftovers()
        archive = runtime.build_pause_image(self.base / "image")
        bin_dir, conf_dir = runtime.install_cni(self.base / "k", sys.executable)
        containerd = runtime.containerd_config(self.base / "k", bin_dir, conf_dir)
        self.server = self._stack.enter_context(running_kube_apiserver(
            self.binary, self.base / "cp", ["--bind-address=0.0.0.0"], scheduler=True, controller_manager=True))
        self.api = Api(self.server)
        real_kc = self.base / "k" / "kubelet.kubeconfig"
        cfg = kubeconfig(f"https://{HOST_IP}:{self.server.port}", self.server.pki, f"system:node:{KUBELET_NODE}",
                         ["system:nodes"])
        cfg["clusters"][0]["cluster"]["tls-server-name"] = "kubernetes"
        write_kubeconfig(real_kc, cfg)
        self.real = RealKubeletNode(KUBELET_NODE, self.base / "k", self.binary, real_kc)
        self._stack.callback(self.real.stop)
        self.real.start_runtime(archive, containerd)
        self.na = NodeAgentNode(NA_NODE, self.base / "n", self.server.node_kubeconfig(NA_NODE))
        self._stack.callback(self.na.close)
        self.sides = {
            "kubelet": Side("kubelet", KUBELET_NODE, self.real.root, self.base / "k" / "calls.jsonl",
                            self.base / "k" / "dra-calls.jsonl", self.base / "k" / "dp", "k",
                            self.server.node_kubeconfig(KUBELET_NODE)),
            "nodeagent": Side("nodeagent", NA_NODE, self.na.root, self.base / "n" / "calls.jsonl",
                              self.base / "n" / "dra-calls.jsonl", self.base / "n" / "dp", "n",
                              self.server.node_kubeconfig(NA_NODE)),
        }
        self._stack.callback(self._stop_plugins)

    def close(self) -> None:
        self._stack.close()

    def _start_plugins(self, profile: str) -> None:
        for side in self.sides.values():
            side.plugin_dir.mkdir(parents=True, exist_ok=True)
            real_dir = side.root / "device-plugins"
            real_dir.mkdir(parents=True, exist_ok=True)
            log = (side.calls.parent / "proxy.log").open("ab")
            side.proxy = subprocess.Popen(
                [sys.executable, "-m", "tests.kubelet_tier.recorder", "--mode", "device-plugin",
                 "--real", str(real_dir), "--priv", str(side.plugin_dir), "--log", str(side.calls)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            log.close()
            deadline = time.monotonic() + 30
            while not (side.plugin_dir / "kubelet.sock").exists():
                assert side.proxy.poll() is None and time.monotonic() < deadline, "recording proxy did not start"
                time.sleep(0.1)
            self._start_device_plugin(side, profile)
            self._start_dra(side)

    def _start_dra(self, side: Side) -> None:
        side.driver_root.mkdir(parents=True, exist_ok=True)
        log = (side.calls.parent / "dra-proxy.log").open("ab")
        side.dra_proxy = subprocess.Popen(
            [sys.executable, "-m", "tests.kubelet_tier.recorder", "--mode", "dra", "--driver", DRA_DRIVER,
             "--real", str(side.root), "--priv", str(side.driver_root), "--log", str(side.dra_calls)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self._start_driver(side)

    def _start_driver(self, side: Side) -> None:
        profile = yaml.safe_load(DRA_PROFILE.read_text())
        profile["poolName"] = side.pool
        side.dra_profile.write_text(yaml.safe_dump(profile, sort_keys=False))
        log = (side.calls.parent / "dra-driver.log").open("ab")
        side.driver = subprocess.Popen(
            [sys.executable, "-m", "plugins.fake_dra_driver", "--config", str(side.dra_profile),
             "--root-dir", str(side.driver_root), "--kubeconfig", str(side.kubeconfig), "--node-name", side.node],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def _start_device_plugin(self, side: Side, profile: str) -> None:
        log = (side.calls.parent / "device-plugin.log").open("ab")
        side.plugin = subprocess.Popen(
            [sys.executable, "-m", "plugins.fake_device_plugin", "--config", str(PROFILES / profile),
             "--device-plugins-dir", str(side.plugin_dir), "--watch-interval", "0.5"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def _stop_plugins(self) -> None:
        for side in self.sides.values():
            for proc in (side.plugin, side.proxy, side.driver, side.dra_proxy):
                if proc is not None and proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.wait(10)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
            side.plugin = side.proxy = side.driver = side.dra_proxy = None

    def use_config(self, scenario: Scenario) -> None:
        """Both nodes on the scenario's KubeletConfiguration; fresh nodes when it changed."""
        key = scenario.config_key()
        if key == self._config_key and self.real.kubelet_running() and self.na.running():
            return
        self._stop_nodes()
        self._stop_plugins()
        for sub in ("cpu_manager_state", "memory_manager_state", "dra_manager_state",
                    "device-plugins/kubelet_internal_checkpoint"):
            (self.real.root / sub).unlink(missing_ok=True)
        self.na.wipe()
        self._config_key, self._config, self._profile = key, scenario.config, scenario.profile
        self._start_nodes()
        self._start_plugins(scenario.profile)
        self.wait_registered()

    def _start_nodes(self) -> None:
        self.real.start_kubelet(self._config)
        self.na.start(self._config)
        for side in self.sides.values():
            self.wait(lambda s=side: self._node_ready(s.node), 120, f"node {side.node} Ready",  # type: ignore[misc]  # default args bind the loop variables
                      lambda: self._node_logs())

    def _stop_nodes(self) -> None:
        self.real.stop_kubelet()
        self.na.stop()

    def restart_nodes(self) -> None:
        self._stop_nodes()
        self._start_nodes()
        self.wait_registered()

    def _node_logs(self) -> str:
        return (f"--- kubelet log ---\n{self.real.kubelet_log.read_text(errors='replace')[-4000:]}\n"
                f"--- nodeagent log ---\n{self.na.log.read_text(errors='replace')[-3000:]}")

    def _node_ready(self, node: str) -> bool:
        obj = self.api.maybe(f"/api/v1/nodes/{node}")
        conds = {c["type"]: c["status"] for c in (obj or {}).get("status", {}).get("conditions", [])}
        return conds.get("Ready") == "True"

    def wait_registered(self) -> None:
        """Both nodes show the device plugin's resource with its devices (allocatable, not only capacity)."""
        def registered(node: str) -> bool:
            obj = self.api.get(f"/api/v1/nodes/{node}")
            return any(k.startswith("example.com/") and v != "0" for k, v in obj["status"]["allocatable"].items())
        def sliced(node: str) -> bool:
            slices = self.api.get("/apis/resource.k8s.io/v1/resourceslices")["items"]
            return any(s["spec"].get("nodeName") == node and s["spec"]["driver"] == DRA_DRIVER for s in slices)

        def dra_registered(side: Side) -> bool:
            return any(r["method"].endswith("/NotifyRegistrationStatus") for r in _records(side.dra_calls, 0))

        for side in self.sides.values():
            self.wait(lambda s=side: registered(s.node), 60, f"device plugin registered on {side.node}",  # type: ignore[misc]  # default args bind the loop variables
                      lambda: self._node_logs())
            self.wait(lambda s=side: dra_registered(s), 60, f"DRA driver registered with {side.node}",  # type: ignore[misc]  # default args bind the loop variables
                      lambda: self._node_logs())
            self.wait(lambda s=side: sliced(s.node), 60, f"DRA driver's ResourceSlice for {side.node}",  # type: ignore[misc]  # default args bind the loop variables
                      lambda: self._node_logs())

    @staticmethod
    def wait(pred: Callable[[], Any], timeout: float, what: str, detail: Callable[[], str] | None = None) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = pred()
                if last:
                    return last
            except (OSError, urllib.error.URLError, KeyError) as err:
                last = err
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})"
                             + (f"\n{detail()}" if detail else ""))

    # ------------------------------------------------------------------ scenarios

    def run(self, scenario: Scenario) -> Outcome:
        # the node's log from before its (re)start for this scenario's configuration: a refused request is
        # logged at its first failure and then only every 20th (nodeapi/reflector.py)
        log_mark = self.na.log.stat().st_size if self.na.log.exists() else 0
        self.use_config(scenario)
        outcome = Outcome(scenario.name)
        names = self._names(scenario)
        for obj in scenario.cluster_objects:
            if self.api.maybe(f"{_collection(obj, None)}/{obj['metadata']['name']}") is None:
                self.api.call("POST", _collection(obj, None), obj)
        for side in self.sides.values():
            ns = side.namespace(scenario.name)
            self.api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": ns}})
            self.wait(lambda n=ns: self.api.maybe(f"/api/v1/namespaces/{n}/serviceaccounts/default"), 30,  # type: ignore[misc]  # default args bind the loop variables
                      f"the default ServiceAccount of {ns}")
            for obj in scenario.objects:
                self.api.call("POST", _collection(obj, ns), {**obj, "metadata": {**obj["metadata"], "namespace": ns}})
            side.call_mark = _last_seq(side.calls)
            side.dra_mark = _last_seq(side.dra_calls)
        try:
            for step in scenario.steps:
                self._step(scenario, step, names, outcome)
        finally:
            self._cleanup(scenario)
        outcome.refused = refused_requests(self.na.log, log_mark)
        return outcome

    def _node_ips(self) -> dict[str, str]:
        """Each node's InternalIP -> NODE_IP: the two nodes cannot share an address (by construction)."""
        out = {}
        for side in self.sides.values():
            node = self.api.get(f"/api/v1/nodes/{side.node}")
            for addr in node["status"].get("addresses", []):
                if addr["type"] == "InternalIP":
                    out[addr["address"]] = "NODE_IP"
        return out

    def _names(self, scenario: Scenario) -> compare.Names:
        return compare.Names({
            **self._node_ips(),
            self.sides["kubelet"].namespace(scenario.name): "NAMESPACE",
            self.sides["nodeagent"].namespace(scenario.name): "NAMESPACE",
            KUBELET_NODE: "NODE", NA_NODE: "NODE",
            str(self.real.root): "ROOT", str(self.na.root): "ROOT",
        })

    def _learn(self, scenario: Scenario, names: compare.Names) -> None:
        """Names each node's objects got by chance, mapped to their role on both nodes (compare.roles)."""
        for side in self.sides.values():
            ns = side.namespace(scenario.name)
            pods: list[Any] = []
            claims: list[Any] = []
            with contextlib.suppress(urllib.error.HTTPError):
                pods = self.api.get(f"/api/v1/namespaces/{ns}/pods")["items"]
            with contextlib.suppress(urllib.error.HTTPError):
                claims = self.api.get(f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims")["items"]
            names.add(compare.roles(pods, claims))

    def _pod_manifest(self, scenario: Scenario, name: str, side: Side) -> dict[str, Any]:
        pod = copy.deepcopy(scenario.pods[name])
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        pod["metadata"]["namespace"] = side.namespace(scenario.name)
        spec = pod["spec"]
        spec.setdefault("automountServiceAccountToken", False)
        spec.setdefault("terminationGracePeriodSeconds", 5)
        if scenario.pin == "selector":
            spec.setdefault("nodeSelector", {})["kubernetes.io/hostname"] = side.node
        else:
            spec["nodeName"] = side.node
        for c in [*spec.get("initContainers", []), *spec.get("containers", [])]:
            c.setdefault("image", runtime.PAUSE_IMAGE)
            c.setdefault("imagePullPolicy", "Never")
        return pod

    def _step(self, scenario: Scenario, step: dict[str, Any], names: compare.Names, outcome: Outcome) -> None:
        (kind, arg), = step.items()
        if kind == "create":
            for pod in arg:
                for side in self.sides.values():
                    self.api.call("POST", f"/api/v1/namespaces/{side.namespace(scenario.name)}/pods",
                                  self._pod_manifest(scenario, pod, side))
        elif kind == "wait":
            for pod in arg["pods"]:
                for side in self.sides.values():
                    began = time.monotonic()
                    self.wait(lambda p=pod, s=side: self._pod_is(scenario, s, p, arg["until"]),  # type: ignore[misc]  # default args bind the loop variables
                              float(arg.get("timeout", 60)), f"pod {pod} {arg['until']} on {side.node}",
                              lambda p=pod, s=side: json.dumps(self._pod(scenario, s, p), indent=1)[-3000:]  # type: ignore[misc]  # default args bind the loop variables
                              + "\n" + self._node_logs())
                    outcome.timings.setdefault(f"{pod} {arg['until']}", {})[side.name] = round(
                        time.monotonic() - began, 1)
            self._learn(scenario, names)
        elif kind == "delete":
            body = {"apiVersion": "v1", "kind": "DeleteOptions"}
            if "gracePeriodSeconds" in arg:
                body["gracePeriodSeconds"] = arg["gracePeriodSeconds"]
            for pod in arg["pods"]:
                for side in self.sides.values():
                    self.api.call("DELETE", f"/api/v1/namespaces/{side.namespace(scenario.name)}/pods/{pod}", body)
        elif kind == "device":
            for side in self.sides.values():
                self._device(side, arg)
        elif kind == "driver":
            for side in self.sides.values():
                ctl = side.driver_root / "plugins" / DRA_DRIVER / "dra.sock.ctl"
                for command, value in arg.items():
                    if isinstance(value, dict) and isinstance(value.get("device"), str):
                        value = {**value, "device": value["device"].replace("{pool}", side.pool)}
                    reply = control_request(ctl, {command: value})
                    assert reply.get("ok"), reply
        elif kind == "deleteClaim":
            for side in self.sides.values():
                with contextlib.suppress(urllib.error.HTTPError):
                    self.api.call("DELETE", f"/apis/resource.k8s.io/v1/namespaces/{side.namespace(scenario.name)}"
                                            f"/resourceclaims/{arg['name']}")
        elif kind == "staticPod":
            for side in self.sides.values():
                folder = side.root / STATIC_PODS
                folder.mkdir(parents=True, exist_ok=True)
                for pod in arg.get("write", []):
                    manifest = self._static_manifest(scenario, pod, side)
                    (folder / f".{pod}.yaml").write_text(yaml.safe_dump(manifest))
                    (folder / f".{pod}.yaml").rename(folder / f"{pod}.yaml")  # whole, as an editor's save
                for pod in arg.get("remove", []):
                    (folder / f"{pod}.yaml").unlink(missing_ok=True)
        elif kind == "restartNode":
            self.restart_nodes()
        elif kind == "sleep":
            time.sleep(float(arg))
        elif kind == "compare":
            kinds = ["node", "pods", "events", "podresources", "allocatable", "calls", "checkpoints"] \
                if arg == "all" else list(arg)
            self._settle(scenario)
            self._learn(scenario, names)
            diffs = []
            for what in kinds:
                obs = {s.name: getattr(self, f"_observe_{what}")(scenario, s, names) for s in self.sides.values()}
                diffs += compare.diff(obs["kubelet"], obs["nodeagent"], what)
            outcome.failures += compare.unregistered(diffs, self.register, scenario.name)
            outcome.ignored += compare.registered(diffs, self.register, scenario.name)
        else:
            raise AssertionError(f"scenario {scenario.name}: unknown step {kind}")

    def _static_manifest(self, scenario: Scenario, name: str, side: Side) -> dict[str, Any]:
        pod = copy.deepcopy(scenario.static_pods[name])
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        pod["metadata"]["namespace"] = side.namespace(scenario.name)
        spec = pod["spec"]
        spec.setdefault("terminationGracePeriodSeconds", 5)
        for c in [*spec.get("initContainers", []), *spec.get("containers", [])]:
            c.setdefault("image", runtime.PAUSE_IMAGE)
            c.setdefault("imagePullPolicy", "Never")
        return pod

    @staticmethod
    def _api_name(scenario: Scenario, side: Side, pod: str) -> str:
        """A pod's name in the API: a static pod's mirror pod carries the node's name."""
        return f"{pod}-{side.node}" if pod in scenario.static_pods else pod

    def _device(self, side: Side, arg: Mapping[str, Any]) -> None:
        if "health" in arg:
            ctl = side.plugin_dir / f"{_socket_name(self._profile)}.ctl"
            reply = control_request(ctl, {"set_health": arg["health"]})
            assert reply.get("ok"), reply
        if arg.get("restart"):
            assert side.plugin is not None
            side.plugin.send_signal(signal.SIGTERM)
            side.plugin.wait(15)
            self._start_device_plugin(side, self._profile)
        if "allocateError" in arg:
            ctl = side.plugin_dir / f"{_socket_name(self._profile)}.ctl"
            reply = control_request(ctl, {"set_allocate_error": arg["allocateError"]})
            assert reply.get("ok"), reply
        if "preStartError" in arg:
            ctl = side.plugin_dir / f"{_socket_name(self._profile)}.ctl"
            reply = control_request(ctl, {"set_pre_start_error": arg["preStartError"]})
            assert reply.get("ok"), reply

    def _pod(self, scenario: Scenario, side: Side, pod: str) -> Any:
        return self.api.maybe(f"/api/v1/namespaces/{side.namespace(scenario.name)}/pods/"
                              f"{self._api_name(scenario, side, pod)}")

    def _pod_is(self, scenario: Scenario, side: Side, pod: str, until: str) -> bool:
        obj = self._pod(scenario, side, pod)
        if until == "Gone":
            return obj is None
        if obj is None:
            return False
        status = obj.get("status", {})
        if until.startswith("Waiting/"):  # a container (or init container) waiting with that reason
            return any((cs.get("state") or {}).get("waiting", {}).get("reason") == until.split("/", 1)[1]
                       for cs in [*status.get("initContainerStatuses", []), *status.get("containerStatuses", [])])
        if until == "Ready":
            return any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", []))
        return bool(status.get("phase") == until)

    def _settle(self, scenario: Scenario) -> None:
        """Wait until both nodes' pod statuses stop changing (2 s unchanged, at most 20 s)."""
        def snapshot() -> str:
            out = []
            for side in self.sides.values():
                items = self.api.get(f"/api/v1/namespaces/{side.namespace(scenario.name)}/pods")["items"]
                out.append(json.dumps(sorted((p["metadata"]["name"], p.get("status")) for p in items), sort_keys=True))
            return "".join(out)
        deadline = time.monotonic() + 20
        last, since = snapshot(), time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - since < 2:
            time.sleep(0.5)
            now = snapshot()
            if now != last:
                last, since = now, time.monotonic()

    def _cleanup(self, scenario: Scenario) -> None:
        for side in self.sides.values():
            for pod in scenario.static_pods:  # the node deletes their mirror pods
                (side.root / STATIC_PODS / f"{pod}.yaml").unlink(missing_ok=True)
            ns = side.namespace(scenario.name)
            with contextlib.suppress(urllib.error.HTTPError):
                for pod in self.api.get(f"/api/v1/namespaces/{ns}/pods")["items"]:
                    with contextlib.suppress(urllib.error.HTTPError):
                        self.api.call("DELETE", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                                      {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
            with contextlib.suppress(urllib.error.HTTPError):
                self.api.call("DELETE", f"/api/v1/namespaces/{ns}")
        for side in self.sides.values():
            ns = side.namespace(scenario.name)
            with contextlib.suppress(AssertionError):
                self.wait(lambda n=ns: not self._active_pods(n), 30, f"pods of {ns} gone from {side.node}")  # type: ignore[misc]  # default args bind the loop variables
            # the kubelet unprepares a deleted pod's claims when its containers are removed, after the
            # pod left the API: wait for that here, so the next scenario's record holds its own calls
            with contextlib.suppress(AssertionError):
                self.wait(lambda s=side, n=ns: not self._prepared_claims(s, n), 30,  # type: ignore[misc]  # default args bind the loop variables
                          f"claims of {ns} unprepared on {side.node}")

    @staticmethod
    def _prepared_claims(side: Side, namespace: str) -> list[str]:
        """The claims of `namespace` in the node's DRA checkpoint (the kubelet's format, both nodes)."""
        try:
            data = json.loads(json.loads((side.root / "dra_manager_state").read_text())["Data"])
        except (OSError, ValueError, KeyError, TypeError):
            return []
        return [str(c.get("ClaimName")) for c in data.get("ClaimInfoStateList") or []
                if c.get("Namespace") == namespace]

    def _active_pods(self, ns: str) -> list[str]:
        try:
            return [p["metadata"]["name"] for p in self.api.get(f"/api/v1/namespaces/{ns}/pods")["items"]]
        except urllib.error.HTTPError:
            return []

    # ------------------------------------------------------------------ observations

    def _observe_node(self, scenario: Scenario, side: Side, names: compare.Names) -> Any:
        node = self.api.get(f"/api/v1/nodes/{side.node}")
        status = dict(node["status"])
        status.pop("images", None)  # the runtime's image store: compared through the register's reason
        return names({"labels": node["metadata"].get("labels", {}),
                      "annotations": node["metadata"].get("annotations", {}),
                      "taints": node["spec"].get("taints", []), "status": status})

    def _observe_pods(self, scenario: Scenario, side: Side, names: compare.Names) -> Any:
        out = {}
        for pod in self.api.get(f"/api/v1/namespaces/{side.namespace(scenario.name)}/pods")["items"]:
            meta = pod["metadata"]
            status = dict(pod.get("status", {}))
            # each node gives pods addresses from its own network: whether there is one is compared
            if status.get("podIP"):
                status["podIP"] = "POD_IP"
                status["podIPs"] = [{"ip": "POD_IP"} for _ in status.get("podIPs", [])]
            observed = {"status": compare.health_sorted(status),
                        "deletionTimestamp": "set" if meta.get("deletionTimestamp") else "unset",
                        "finalizers": meta.get("finalizers", [])}
            annotations = meta.get("annotations") or {}
            if "kubernetes.io/config.mirror" in annotations:
                # a mirror pod: what the node put on it. The values of config.hash and config.mirror are
                # the kubelet's hash of its Go pod object (not reproducible outside it): keys compared
                observed["annotationKeys"] = sorted(annotations)
                observed["ownerReferences"] = [{k: r.get(k) for k in ("apiVersion", "kind", "name", "controller")}
                                               for r in meta.get("ownerReferences") or []]
                observed["labels"] = meta.get("labels") or {}
            out[names.text(meta["name"])] = names(observed)
        return out

    def _observe_events(self, scenario: Scenario, side: Side, names: compare.Names) -> Any:
        items = self.api.get(f"/api/v1/namespaces/{side.namespace(scenario.name)}/events")["items"]
        return compare.events(items, names)

    def _podresources(self, side: Side, call: str, request: Any) -> Any:
        with grpc.insecure_channel(f"unix://{side.podresources_sock}") as channel:
            stub = pr_grpc.PodResourcesListerStub(channel)
            answer = getattr(stub, call)(request, timeout=10)
        return json_format.MessageToDict(answer, preserving_proto_field_name=True)

    def _observe_podresources(self, scenario: Scenario, side: Side, names: compare.Names) -> Any:
        # names mapped before the lists are sorted by content (claim names and uids are in it)
        ns = side.namespace(scenario.name)
        mapped = names.text(ns)
        listed = compare.podresources(names(self._podresources(side, "List", pr_pb2.ListPodResourcesRequest())),
                                      [mapped])
        got = {}
        for pod in scenario.pods:
            try:
                answer = self._podresources(side, "Get", pr_pb2.GetPodResourcesRequest(pod_name=pod, pod_namespace=ns))
                got[pod] = compare.podresources({"pod_resources": [names(answer.get("pod_resources", {}))]},
                                                [mapped])
            except grpc.RpcError as err:
                got[pod] = {"error": err.code().name}
        return names({"List": listed, "Get": got})

    def _observe_allocatable(self, scenario: Scenario, side: Side, names: compare.Names) -> Any:
        answer = self._podresources(side, "GetAllocatableResources", pr_pb2.AllocatableResourcesRequest())
        return names(compare.podresources({"pod_resources": [{"name": "node", "namespace": "n",
                                                              "containers": [{"name": "all", **answer}]}]}, ["n"]))

    def _observe_calls(self, scenario: Scenario, side: Side, names: compare.Names) -> Any:
        # names mapped before the ids are sorted (claim uids and names are in the DRA calls); the DRA
        # calls about another scenario's claims are that scenario's (a late unprepare of its pods)
        ns = side.namespace(scenario.name)
        dra = [r for r in _records(side.dra_calls, side.dra_mark)
               if all(c.get("namespace") == ns for c in (r.get("request") or {}).get("claims") or ())]
        return {"devicePlugin": normalise_calls(names(_records(side.calls, side.call_mark)),
                                                names(_records_until(side.calls, side.call_mark))),
                "dra": normalise_calls(names(dra), names(_records_until(side.dra_calls, side.dra_mark)))}

    def _observe_checkpoints(self, scenario: Scenario, side: Side, names: compare.Names) -> Any:
        out = {}
        for sub in ("cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint",
                    "dra_manager_state"):
            path = side.root / sub
            if path.exists():
                try:
                    doc = json.loads(path.read_text())
                except ValueError:
                    doc = {"unparsable": True}
                doc.pop("checksum", None)
                out[sub] = doc
            else:
                out[sub] = "absent"
        out = names(out)
        mine = names.text(side.namespace(scenario.name))
        dra = out.get("dra_manager_state")
        if isinstance(dra, dict) and isinstance(dra.get("Data"), str):
            # the DRA manager's checkpoint holds its state as JSON text: compared by content, this
            # scenario's claims in name order (the kubelet writes its claim info cache, a map, in
            # iteration order)
            with contextlib.suppress(ValueError):
                data = json.loads(dra["Data"])
                data["ClaimInfoStateList"] = sorted(
                    (c for c in data.get("ClaimInfoStateList") or [] if c.get("Namespace") == mine),
                    key=lambda c: (str(c.get("Namespace")), str(c.get("ClaimName"))))
                dra["Data"] = data
        devices = out.get("device-plugins/kubelet_internal_checkpoint")
        if isinstance(devices, dict) and isinstance(devices.get("Data"), dict):
            # This scenario's pods only (their uids are mapped: POD_UID(pod)). Both nodes drop a gone
            # pod's devices from the file only after their next UpdateAllocatedDevices (an Allocate, a
            # topology hint, a pod-resources List), so an earlier scenario's pods may linger in it;
            # an empty list is written null (a nil slice) or [].
            entries = devices["Data"].get("PodDeviceEntries") or []
            # Sorted: the kubelet writes them in its podDevices map's iteration order (toCheckpointData
            # ranges over a Go map), so two runs of one kubelet differ in order (seen: 05 and 16 swapped).
            devices["Data"]["PodDeviceEntries"] = sorted(
                (e for e in entries if str(e.get("PodUID", "")).startswith("POD_UID(")),
                key=lambda e: (str(e.get("PodUID")), str(e.get("ContainerName")), str(e.get("ResourceName"))))
        return out


# The Node authorizer's refusal while its graph has not seen a pod's binding yet: registered (timing, either
# node; DIVERGENCES.yaml, FailedPrepareDynamicResources), so not counted as a refused request here.
GRAPH_LAG = "no relationship found between node"


# An authorizer's refusal names the user (`... is forbidden: User "system:node:NAME" cannot list ...`); other
# 403s do not (admission's "unable to create new content in namespace X because it is being terminated",
# which a kubelet meets too while a scenario's namespace goes away).
REFUSED_USER = 'is forbidden: User "'


def refused_requests(log: Path, mark: int) -> list[str]:
    """The nodeagent node's log lines, after byte `mark`, about a request the API server's authorizer
    refused (403).

    The node joins with a kubelet's identity (system:node:NAME), which kube-apiserver's Node authorizer
    limits to what a kubelet asks; a refusal is a request the kubelet does not make (a cluster-wide list
    of ResourceClaims was one, logged all through 50-static-pod)."""
    try:
        with log.open("rb") as f:
            f.seek(mark)
            text = f.read().decode(errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if REFUSED_USER in line and GRAPH_LAG not in line]


def _collection(obj: Mapping[str, Any], namespace: str | None) -> str:
    """The REST collection of an object (plural = lowercased kind + s or es, true of every kind the scenarios use)."""
    api = obj["apiVersion"]
    prefix = f"/api/{api}" if "/" not in api else f"/apis/{api}"
    ns = f"/namespaces/{namespace}" if namespace else ""
    kind = obj["kind"].lower()
    return f"{prefix}{ns}/{kind}{'es' if kind.endswith('s') else 's'}"


def _socket_name(profile: str) -> str:
    return str(yaml.safe_load((PROFILES / profile).read_text())["socketName"])


def _records(path: Path, after: int) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            rec = json.loads(line)
            if rec["seq"] > after:
                out.append(rec)
    return sorted(out, key=lambda r: int(r["seq"]))


def _records_until(path: Path, mark: int) -> list[dict[str, Any]]:
    """The records up to `mark` (what a stream delivered before the scenario)."""
    return [r for r in _records(path, 0) if int(r["seq"]) <= mark]


def _last_seq(path: Path) -> int:
    recs = _records(path, 0)
    return int(recs[-1]["seq"]) if recs else 0


def normalise_calls(records: list[dict[str, Any]], before: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The node's calls to the plugin in order (requests with sorted ids, answers' codes), and what each
    stream delivered, as separate sequences (their interleaving with the calls is timing).

    A stream message equal to the one before it on the same method (`before` holds what came before the
    scenario) is left out: a plugin sends its whole state again on a timer of its own (the DRA driver
    every 10 s, because the kubelet marks a device Unknown when it hears nothing within its
    health_check_timeout_seconds), so how many such resends fall into a scenario depends on when each
    node opened its stream, not on the node. A change, and a stream opened, ended or failed, still counts."""
    last: dict[str, Any] = {}
    for rec in before:
        if rec.get("stream") == "message":
            last[rec["method"].rsplit("/", 1)[-1]] = compare.stable(compare._sorted_ids(rec.get("response")))
    calls: list[Any] = []
    streams: dict[str, list[Any]] = {}
    for rec in records:
        method = rec["method"].rsplit("/", 1)[-1]
        if "stream" in rec:
            if rec["stream"] == "message":
                content = compare.stable(compare._sorted_ids(rec.get("response")))
                if method in last and last[method] == content:
                    continue
                last[method] = content
            streams.setdefault(method, []).append(
                {"event": rec["stream"], **({"response": compare._sorted_ids(rec["response"])} if "response" in rec
                                            else {})})
        elif "event" in rec:
            continue
        else:
            calls.append({"method": method, "request": compare._sorted_ids(rec.get("request")),
                          "code": rec.get("code")})
    return {"calls": calls, "streams": streams}


@contextlib.contextmanager
def running_tier(binary: Path) -> Iterator[Tier]:
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="na-kt-", dir="/tmp"))
    tier = Tier(binary, base)
    try:
        tier.start()
        yield tier
    finally:
        tier.close()
        if os.environ.get("NODEAGENT_KUBELET_TIER_KEEP", "") != "1":  # 1: keep logs and records to read
            shutil.rmtree(base, ignore_errors=True)
