"""The shipped configs load (and document every field); bad configs fail with the exact field path."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeagent import config
from nodeagent.config import (
    DEFAULT_FEATURE_GATES,
    KUBELET,
    NODEAGENT,
    Config,
    KubeletConfig,
    NodeAgentConfig,
    NumaNode,
    effective,
    gatelist,
    load,
    parse_documents,
    parse_kubelet,
    with_overrides,
)
from nodeagent.config.agent import parse_agent
from nodeagent.config.model import percentage_fraction
from nodeagent.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
GI = 1 << 30
MI = 1 << 20


def _no_raw_kubelet(k: KubeletConfig) -> KubeletConfig:
    """Without the document and without nodeagent's own switches (NodeAgentConfiguration's, not the
    KubeletConfiguration's, though the effective gate map carries them)."""
    gates = {g: v for g, v in k.feature_gates.items() if g not in gatelist.NODEAGENT_GATES}
    return dataclasses.replace(k, raw={}, feature_gates=gates)


def _no_raw_agent(a: NodeAgentConfig) -> NodeAgentConfig:
    return dataclasses.replace(a, raw={})


# ---------------------------------------------------------------- configs/nodeagent.yaml


def test_documented_config_is_exactly_the_defaults() -> None:
    cfg = load(CONFIGS / "nodeagent.yaml")
    defaults = parse_documents([])
    assert _no_raw_kubelet(cfg.kubelet) == _no_raw_kubelet(defaults.kubelet)
    # nodeName is left commented out: both take the host name.
    assert _no_raw_agent(cfg.agent) == _no_raw_agent(defaults.agent)
    assert cfg.agent.root_dir == Path("/var/lib/kubelet")
    assert cfg.agent.admin_socket == Path("/run/nodeagent/nodeagent.sock")


def test_documented_config_has_two_documents_in_order() -> None:
    docs = list(yaml.safe_load_all((CONFIGS / "nodeagent.yaml").read_text()))
    kinds = [d["kind"] for d in docs if d is not None]
    assert kinds == [KUBELET, NODEAGENT]


def _documented_keys(text: str) -> set[str]:
    """Every `key:` in the file, set or commented out."""
    return set(re.findall(r"^[#\s-]*([A-Za-z][\w.-]*):", text, flags=re.MULTILINE))


def test_documented_config_names_every_parsed_field() -> None:
    text = (CONFIGS / "nodeagent.yaml").read_text()
    keys = _documented_keys(text)
    parsed = set(config._KUBELET_FIELDS) | set(config._AGENT_KEYS)
    nested = {"capacity", "numaNodes", "labels", "id", "cpus", "memory", "name", "command", "env",
              "restart", "qps", "burst"}
    missing = sorted((parsed | nested) - keys)
    assert missing == [], f"fields config.py parses but configs/nodeagent.yaml does not document: {missing}"
    # ...each top-level one in its own paragraph that states the default.
    for key in sorted(parsed - {"apiVersion", "kind"}):
        assert "Default" in _paragraph(text, key), f"{key}: no default documented"


def _paragraph(text: str, key: str) -> str:
    """The lines from the blank line before `key:` (set or commented out) down to it."""
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if re.match(rf"#? ?{re.escape(key)}:", ln))
    start = at
    while start > 0 and lines[start - 1].strip():
        start -= 1
    return "\n".join(lines[start : at + 1])


def test_documented_config_documents_default_feature_gates() -> None:
    docs = [d for d in yaml.safe_load_all((CONFIGS / "nodeagent.yaml").read_text()) if d is not None]
    assert docs[0]["featureGates"] == {g: v for g, v in DEFAULT_FEATURE_GATES.items()
                                       if g not in gatelist.NODEAGENT_GATES}
    assert docs[0]["evictionHard"] == dict(config.DEFAULT_EVICTION_HARD)


# ---------------------------------------------------------------- configs/demo.yaml


def test_demo_config() -> None:
    cfg = load(CONFIGS / "demo.yaml")
    k, a = cfg.kubelet, cfg.agent
    assert a.node_name == "demo-node"
    assert a.root_dir == REPO / ".run" / "kubelet"
    assert a.state_dir == REPO / ".run" / "state"
    assert a.admin_socket == REPO / ".run" / "nodeagent.sock"
    assert cfg.pod_resources_socket == REPO / ".run" / "kubelet" / "pod-resources" / "kubelet.sock"
    assert Path(a.examples_dir) == CONFIGS / "examples"
    assert a.metrics_bind_address == "127.0.0.1:10255"
    assert a.cgroup_backend == "simulated"
    assert dict(a.node_profile.capacity) == {
        "cpu": 8000, "memory": 32 * GI, "ephemeral-storage": 100 * GI, "hugepages-2Mi": GI,
    }
    assert a.node_profile.numa_nodes == (
        NumaNode(id=0, cpus=(0, 1, 2, 3), memory=16 * GI),
        NumaNode(id=1, cpus=(4, 5, 6, 7), memory=16 * GI),
    )
    assert dict(k.kube_reserved) == {"cpu": 500, "memory": GI}
    assert dict(k.system_reserved) == {"cpu": 500, "memory": GI}
    assert k.eviction_hard["memory.available"].resolve(32 * GI) == 100 * MI
    assert k.eviction_hard["nodefs.available"].resolve(100 * GI) == 10737418400  # a float32 10% (the kubelet)
    assert set(k.eviction_hard) == {"memory.available", "nodefs.available"}
    assert k.enforce_node_allocatable == ("pods",)
    assert k.cpu_manager_policy == "static"
    assert k.reserved_system_cpus == (0,)
    assert k.topology_manager_policy == "best-effort"
    assert k.max_pods == 110
    assert k.static_pod_path == ""
    # The demo turns classic DRA on (its built-in CXL controller: NodeAgentConfiguration.classicDRA, carried
    # into the effective gates under the removed gate's name); everything else is default.
    assert dict(k.feature_gates) == {**DEFAULT_FEATURE_GATES, "DRAControlPlaneController": True}
    assert cfg.agent.classic_dra is True
    assert [v.name for v in cfg.agent.virtual_nodes] == ["rack-b-0", "rack-b-1"]  # parsed at load
    assert [c.controller_name for c in cfg.agent.classic_controllers] == ["cxl.example.com"]


def test_demo_example_pods() -> None:
    manifest = pytest.importorskip("nodeagent.objects.pod.manifest")
    qos = pytest.importorskip("nodeagent.pods.qos")
    from nodeagent.objects.pod.model import ANNOTATION_EXIT_CODE, ANNOTATION_FINISH_AFTER
    from nodeagent.util.clock import FakeClock

    classes: dict[str, str] = {}
    pods = {}
    for path in sorted((CONFIGS / "examples").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc.get("kind") != "Pod":
                continue  # the DRA examples' DeviceClass and ResourceClaimTemplate
            pod = manifest.pod_from_manifest(doc, clock=FakeClock())
            pods[pod.name] = pod
            classes[pod.name] = qos.pod_qos(pod)
    assert classes == {
        "besteffort": "BestEffort",
        "burstable": "Burstable",
        "finishes-after-30s": "Burstable",
        "guaranteed": "Guaranteed",
        "gpu-pod": "Guaranteed",
        "dra-pod": "Burstable",
        "cxl-pod": "Burstable",
    }
    # Exclusive cpus need integer cpu requests in a Guaranteed pod.
    assert all(c.requests["cpu"] % 1000 == 0 for c in pods["guaranteed"].containers)
    job = pods["finishes-after-30s"]
    assert job.annotations[ANNOTATION_FINISH_AFTER] == "30"
    assert job.annotations[ANNOTATION_EXIT_CODE] == "0"
    assert job.restart_policy == "Never"


# ---------------------------------------------------------------- bad configs, exact messages


def _parse(kubelet: dict[str, Any], agent: dict[str, Any]) -> Config:
    return parse_documents(
        [{"apiVersion": config.KUBELET_API_VERSION, "kind": KUBELET, **kubelet},
         {"apiVersion": config.NODEAGENT_API_VERSION, "kind": NODEAGENT, "nodeName": "n", **agent}],
        base=Path("/etc/nodeagent"),
    )


K = "KubeletConfiguration"
A = "NodeAgentConfiguration"

BAD: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    # quantities
    ("eviction quantity", {"evictionHard": {"memory.available": "10XB"}}, {},
     f'{K}.evictionHard["memory.available"]: invalid quantity "10XB"'),
    ("negative reservation", {"kubeReserved": {"memory": "-1Gi"}}, {},
     f'{K}.kubeReserved["memory"]: invalid quantity "-1Gi"'),
    ("unreservable resource", {"systemReserved": {"nvidia.com/gpu": "1"}}, {},
     f'{K}.systemReserved["nvidia.com/gpu"]: '
     "unsupported resource (one of cpu, ephemeral-storage, memory, pid)"),
    ("percentage over 100", {"evictionHard": {"nodefs.available": "150%"}}, {},
     f'{K}.evictionHard["nodefs.available"]: percentage "150%" must be between 0% and 100%'),
    ("bad percentage", {"evictionSoft": {"nodefs.available": "x%"}}, {},
     f'{K}.evictionSoft["nodefs.available"]: invalid percentage "x%"'),
    ("capacity quantity", {}, {"nodeProfile": {"capacity": {"memory": "32GiB"}}},
     f'{A}.nodeProfile.capacity["memory"]: invalid quantity "32GiB"'),
    ("numa memory", {}, {"nodeProfile": {"numaNodes": [{"cpus": "0", "memory": "lots"}]}},
     f'{A}.nodeProfile.numaNodes[0].memory: invalid quantity "lots"'),
    # unknown keys and signals
    ("unknown kubelet key", {"evictionHardd": {}}, {}, f"{K}.evictionHardd: unknown field"),
    ("unknown agent key", {}, {"rootdir": "/x"}, f"{A}.rootdir: unknown field"),
    ("unknown nested key", {}, {"nodeProfile": {"numaNodes": [{"cpu": "0"}]}},
     f"{A}.nodeProfile.numaNodes[0].cpu: unknown field"),
    ("unknown plugin key", {}, {"plugins": [{"name": "p", "command": ["x"], "args": []}]},
     f"{A}.plugins[0].args: unknown field"),
    ("unknown podResources key", {}, {"podResources": {"rate": 1}}, f"{A}.podResources.rate: unknown field"),
    ("unknown signal", {"evictionHard": {"memory.free": "1Gi"}}, {},
     f'{K}.evictionHard["memory.free"]: unknown eviction signal (one of '
     + ", ".join(sorted(config.EVICTION_SIGNALS)) + ")"),
    # wrong types
    ("string for integer", {"maxPods": "110"}, {}, f"{K}.maxPods: expected integer, got string"),
    ("boolean for integer", {"maxPods": True}, {}, f"{K}.maxPods: expected integer, got boolean"),
    ("float for integer", {"maxPods": 110.5}, {}, f"{K}.maxPods: expected integer, got number"),
    ("string for boolean", {"cgroupsPerQOS": "yes"}, {}, f"{K}.cgroupsPerQOS: expected boolean, got string"),
    ("array for object", {"kubeReserved": ["cpu"]}, {}, f"{K}.kubeReserved: expected object, got array"),
    ("object for array", {"enforceNodeAllocatable": {"pods": True}}, {},
     f"{K}.enforceNodeAllocatable: expected array, got object"),
    ("feature gate not boolean", {"featureGates": {"KubeletPodResourcesGet": "on"}}, {},
     f'{K}.featureGates["KubeletPodResourcesGet"]: expected boolean, got string'),
    ("agent boolean", {}, {"allocatableIgnoreEviction": 1},
     f"{A}.allocatableIgnoreEviction: expected boolean, got integer"),
    ("plugin command not strings", {}, {"plugins": [{"name": "p", "command": ["x", 3]}]},
     f"{A}.plugins[0].command[1]: expected string, got integer"),
    ("qps not a number", {}, {"podResources": {"qps": "fast"}},
     f"{A}.podResources.qps: expected number, got string"),
    # enums and ranges
    ("cpu manager policy", {"cpuManagerPolicy": "dynamic"}, {},
     f'{K}.cpuManagerPolicy: unsupported value "dynamic" (one of none, static)'),
    ("topology policy", {"topologyManagerPolicy": "numa"}, {},
     f'{K}.topologyManagerPolicy: unsupported value "numa" '
     "(one of best-effort, none, restricted, single-numa-node)"),
    ("topology scope", {"topologyManagerScope": "node"}, {},
     f'{K}.topologyManagerScope: unsupported value "node" (one of container, pod)'),
    ("cgroup driver", {"cgroupDriver": "systemd-cgroup"}, {},
     f'{K}.cgroupDriver: unsupported value "systemd-cgroup" (one of cgroupfs, systemd)'),
    ("enforce value", {"enforceNodeAllocatable": ["podz"]}, {},
     f'{K}.enforceNodeAllocatable[0]: unsupported value "podz" '
     "(one of kube-reserved, none, pods, system-reserved)"),
    ("cgroup backend", {}, {"cgroupBackend": "systemd"},
     f'{A}.cgroupBackend: unsupported value "systemd" (one of cgroupfs, simulated)'),
    ("max pods zero", {"maxPods": 0}, {}, f"{K}.maxPods: must be at least 1, got 0"),
    ("qps zero", {}, {"podResources": {"qps": 0}}, f"{A}.podResources.qps: must be positive"),
    ("burst zero", {}, {"podResources": {"burst": 0}}, f"{A}.podResources.burst: must be at least 1, got 0"),
    ("socket mode not octal", {}, {"socketMode": "0699"}, f'{A}.socketMode: invalid octal mode "0699"'),
    ("socket mode range", {}, {"socketMode": 0o1777}, f"{A}.socketMode: mode 0o1777 out of range"),
    ("socket mode world-writable", {}, {"socketMode": "0666"},
     f"{A}.socketMode: mode 0666 lets every user on the host connect to the sockets "
     "(the admin socket creates and deletes any object); use 0660 or tighter and a group"),
    ("socket mode other-writable only", {}, {"socketMode": "0602"},
     f"{A}.socketMode: mode 0602 lets every user on the host connect to the sockets "
     "(the admin socket creates and deletes any object); use 0660 or tighter and a group"),
    ("metrics address", {}, {"metricsBindAddress": "10255"},
     f'{A}.metricsBindAddress: expected "host:port", got "10255"'),
    ("metrics port", {}, {"metricsBindAddress": "127.0.0.1:70000"},
     f'{A}.metricsBindAddress: expected "host:port", got "127.0.0.1:70000"'),
    ("plugin name", {}, {"plugins": [{"command": ["x"]}]}, f"{A}.plugins[0].name: required"),
    ("plugin command", {}, {"plugins": [{"name": "p", "command": []}]}, f"{A}.plugins[0].command: required"),
    # enforceNodeAllocatable rules (the Node Allocatable design)
    ("kube-reserved needs its cgroup", {"enforceNodeAllocatable": ["pods", "kube-reserved"]}, {},
     f"{K}.enforceNodeAllocatable: kube-reserved is enforced, so kubeReservedCgroup must be set"),
    ("system-reserved needs its cgroup", {"enforceNodeAllocatable": ["system-reserved"]}, {},
     f"{K}.enforceNodeAllocatable: system-reserved is enforced, so systemReservedCgroup must be set"),
    ("no per-QoS cgroups, pods enforced by default", {"cgroupsPerQOS": False}, {},
     f"{K}.enforceNodeAllocatable: must be empty (or [none]) when cgroupsPerQOS is false, "
     "because node allocatable is enforced on the kubepods cgroup"),
    ("none with others", {"enforceNodeAllocatable": ["none", "pods"]}, {},
     f'{K}.enforceNodeAllocatable: "none" cannot be combined with other values'),
    ("soft threshold without grace", {"evictionSoft": {"memory.available": "1Gi"}}, {},
     f'{K}.evictionSoftGracePeriod["memory.available"]: grace period must be specified '
     "for the soft eviction threshold memory.available"),
    # durations
    ("bad duration", {"evictionPressureTransitionPeriod": "5 minutes"}, {},
     f'{K}.evictionPressureTransitionPeriod: invalid duration "5 minutes" (e.g. "30s", "5m0s")'),
    ("duration without unit", {}, {"shutdownTimeout": "10"},
     f'{A}.shutdownTimeout: invalid duration "10" (e.g. "30s", "5m0s")'),
    ("negative duration", {}, {"evictionInterval": -1},
     f"{A}.evictionInterval: duration must be a finite, non-negative number of seconds"),
    ("grace period duration", {"evictionSoft": {"memory.available": "1Gi"},
                               "evictionSoftGracePeriod": {"memory.available": "1x"}}, {},
     f'{K}.evictionSoftGracePeriod["memory.available"]: invalid duration "1x" (e.g. "30s", "5m0s")'),
    # cpu lists
    ("open cpu range", {"reservedSystemCPUs": "0-"}, {},
     f'{K}.reservedSystemCPUs: invalid cpu list "0-" (e.g. "0-1,4")'),
    ("reversed cpu range", {"reservedSystemCPUs": "3-1"}, {},
     f'{K}.reservedSystemCPUs: invalid cpu range "3-1"'),
    ("numa cpu list", {}, {"nodeProfile": {"numaNodes": [{"cpus": "a-b"}]}},
     f'{A}.nodeProfile.numaNodes[0].cpus: invalid cpu list "a-b" (e.g. "0-1,4")'),
    ("numa cpus overlap", {}, {"nodeProfile": {"numaNodes": [{"cpus": "0-3"}, {"cpus": "3-5"}]}},
     f"{A}.nodeProfile.numaNodes[1].cpus: cpus [3] already belong to another node"),
    ("numa ids", {}, {"nodeProfile": {"numaNodes": [{"id": 1, "cpus": "0"}, {"id": 1, "cpus": "1"}]}},
     f"{A}.nodeProfile.numaNodes: NUMA node ids must be unique"),
    # paths and versions
    ("empty path", {}, {"stateDir": ""}, f"{A}.stateDir: must not be empty"),
    ("kubelet apiVersion", {"apiVersion": "kubelet.config.k8s.io/v1"}, {},
     f'{K}.apiVersion: unsupported "kubelet.config.k8s.io/v1" (want kubelet.config.k8s.io/v1beta1)'),
    ("agent apiVersion", {}, {"apiVersion": "nodeagent.dev/v1"},
     f'{A}.apiVersion: unsupported "nodeagent.dev/v1" (want nodeagent.dev/v1alpha1)'),
]


@pytest.mark.parametrize(("kubelet", "agent", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_config_names_the_path(kubelet: dict[str, Any], agent: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _parse(kubelet, agent)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        ([["a"]], "document 0: expected a mapping, got array"),
        ([{"kind": "Foo"}],
         'document 0.kind: unknown kind "Foo" (want KubeletConfiguration or NodeAgentConfiguration)'),
        ([{"kind": KUBELET}, {"kind": KUBELET}], "document 1: a second KubeletConfiguration"),
        ([None, {"kind": NODEAGENT}, {"kind": NODEAGENT}], "document 2: a second NodeAgentConfiguration"),
    ],
)
def test_bad_documents(docs: list[object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_documents(docs)
    assert str(err.value) == message


def test_yaml_file_error_names_the_path(tmp_path: Path) -> None:
    """The issue's example, end to end from a file."""
    path = tmp_path / "bad.yaml"
    path.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "evictionHard:\n  memory.available: 10XB\n---\nkind: NodeAgentConfiguration\nnodeName: n\n"
    )
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(err.value) == 'KubeletConfiguration.evictionHard["memory.available"]: invalid quantity "10XB"'


def test_missing_file_and_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load(tmp_path / "absent.yaml")
    absent = tmp_path / "absent.yaml"
    assert str(err.value) == f"{absent}: cannot read configuration: No such file or directory"
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(bad))}: invalid YAML: "):
        load(bad)


# ---------------------------------------------------------------- accepted values


def test_good_values() -> None:
    cfg = _parse(
        {
            "kubeReserved": {"cpu": "250m", "memory": "1G", "pid": "1000"},
            "evictionHard": {"memory.available": "5%", "nodefs.inodesFree": "1000"},
            "evictionSoft": {"memory.available": "1Gi"},
            "evictionSoftGracePeriod": {"memory.available": "1m30s"},
            "evictionPressureTransitionPeriod": 45,
            "enforceNodeAllocatable": ["pods", "kube-reserved"],
            "kubeReservedCgroup": "/kube.slice",
            "reservedSystemCPUs": "0-1,4, 6",
            "cgroupRoot": "",
            "featureGates": {"DRAPartitionableDevices": False, "PodLevelResources": True},
            "clusterDNS": ["10.0.0.10"],  # a kubelet field with no effect is accepted
        },
        {"socketMode": "0600", "evictionInterval": "1h2m3.5s", "nodeProfile": {"numaNodes": [{"cpus": 3}]}},
    )
    k, a = cfg.kubelet, cfg.agent
    assert dict(k.kube_reserved) == {"cpu": 250, "memory": 10**9, "pid": 1000}
    assert k.eviction_hard["memory.available"].resolve(1000) == 50
    assert k.eviction_hard["nodefs.inodesFree"].quantity == 1000
    assert k.eviction_soft_grace_period == {"memory.available": 90.0}
    assert k.eviction_pressure_transition_period == 45.0
    assert k.reserved_system_cpus == (0, 1, 4, 6)
    assert k.cgroup_root == "/"
    assert k.gate("DRAPartitionableDevices") is False
    assert k.gate("PodLevelResources") is True
    assert k.gate("KubeletPodResourcesGet") is True
    assert a.socket_mode == 0o600
    assert a.eviction_interval == 3723.5
    assert a.node_profile.numa_nodes == (NumaNode(id=0, cpus=(3,), memory=0),)


def test_cgroups_per_qos_false_with_empty_enforcement_is_valid() -> None:
    for value in ([], ["none"]):
        cfg = _parse({"cgroupsPerQOS": False, "enforceNodeAllocatable": value}, {})
        assert cfg.kubelet.cgroups_per_qos is False


def test_unset_eviction_hard_gets_kubelet_defaults() -> None:
    k = _parse({}, {}).kubelet
    assert {s: (t.quantity, t.percentage) for s, t in k.eviction_hard.items()} == {
        "memory.available": (100 * MI, None),
        # the kubelet's parsePercentage keeps them as float32 values
        "nodefs.available": (None, percentage_fraction(10)),
        "nodefs.inodesFree": (None, percentage_fraction(5)),
        "imagefs.available": (None, percentage_fraction(15)),
        "imagefs.inodesFree": (None, percentage_fraction(5)),
    }


# ---------------------------------------------------------------- relative paths


def test_relative_paths_resolve_against_the_config_folder(tmp_path: Path) -> None:
    folder = tmp_path / "etc" / "conf"
    folder.mkdir(parents=True)
    path = folder / "c.yaml"
    path.write_text(
        "kind: NodeAgentConfiguration\nnodeName: n\nrootDir: ../kubelet\nstateDir: state\n"
        "adminSocket: ./run/a.sock\ncgroupfsRoot: /abs/cgroup\nexamplesDir: ex\n"
        "---\nkind: KubeletConfiguration\nstaticPodPath: manifests\n"
    )
    cfg = load(path)
    a = cfg.agent
    assert a.root_dir == tmp_path.resolve() / "etc" / "kubelet"
    assert a.state_dir == folder.resolve() / "state"
    assert a.admin_socket == folder.resolve() / "run" / "a.sock"
    assert a.cgroupfs_root == Path("/abs/cgroup")
    assert a.examples_dir == str(folder.resolve() / "ex")
    assert cfg.kubelet_socket == a.root_dir / "device-plugins" / "kubelet.sock"
    assert cfg.state_db == a.state_dir / "state.db"
    # staticPodPath is the kubelet's plain string: not resolved.
    assert cfg.kubelet.static_pod_path == "manifests"


def test_relative_path_without_a_file_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        parse_documents([{"kind": NODEAGENT, "rootDir": "kubelet"}])
    assert str(err.value) == f'{A}.rootDir: must be an absolute path, got "kubelet"'


# ---------------------------------------------------------------- with_overrides


def test_with_overrides() -> None:
    cfg = load(CONFIGS / "demo.yaml")
    out = with_overrides(
        cfg, root_dir=Path("/srv/k"), state_dir=Path("rel/state"), node_name="other",
        admin_socket=Path("/run/x.sock"),
    )
    assert out.agent.root_dir == Path("/srv/k")
    assert out.agent.state_dir == Path("rel/state").resolve()  # CLI flags: relative to the cwd
    assert out.agent.node_name == "other"
    assert out.agent.admin_socket == Path("/run/x.sock")
    assert out.pod_resources_socket == Path("/srv/k/pod-resources/kubelet.sock")
    assert out.kubelet is cfg.kubelet
    assert out.agent.node_profile == cfg.agent.node_profile
    # The original is untouched (frozen dataclasses).
    assert cfg.agent.root_dir == REPO / ".run" / "kubelet"
    assert cfg.agent.node_name == "demo-node"


def test_with_overrides_none_changes_nothing() -> None:
    cfg = load(CONFIGS / "demo.yaml")
    assert with_overrides(cfg) == cfg
    assert with_overrides(cfg, node_name="") == cfg


# ---------------------------------------------------------------- effective() (/configz)


@pytest.mark.parametrize("name", ["demo.yaml", "nodeagent.yaml"])
def test_effective_kubelet_round_trip(name: str) -> None:
    cfg = load(CONFIGS / name)
    eff = effective(cfg)
    assert set(eff) == {"kubeletconfig", "nodeagentconfig"}
    kubelet = eff["kubeletconfig"]
    # Every key is a KubeletConfiguration field name, and parsing them back gives the same config.
    assert set(kubelet) <= set(config._KUBELET_FIELDS)
    again = parse_kubelet({"kind": KUBELET, **kubelet})
    assert _no_raw_kubelet(again) == _no_raw_kubelet(cfg.kubelet)


def test_effective_agent_round_trip() -> None:
    cfg = load(CONFIGS / "demo.yaml")
    agent = effective(cfg)["nodeagentconfig"]
    assert set(agent) <= config._AGENT_KEYS
    again = config.parse_agent({"kind": NODEAGENT, **agent})
    for attr in ("node_name", "root_dir", "state_dir", "admin_socket", "socket_mode", "metrics_bind_address",
                 "cgroup_backend", "allocatable_ignore_eviction", "plugins", "pod_resources"):
        assert getattr(again, attr) == getattr(cfg.agent, attr), attr
    assert again.node_profile.capacity == cfg.agent.node_profile.capacity
    assert again.node_profile.numa_nodes == cfg.agent.node_profile.numa_nodes
    assert agent["nodeName"] == "demo-node"
    assert agent["nodeProfile"]["capacity"] == {
        "cpu": "8", "memory": "32Gi", "ephemeral-storage": "100Gi", "hugepages-2Mi": "1Gi",
    }


def test_effective_agent_keeps_every_configured_field() -> None:
    cfg = load(CONFIGS / "nodeagent.yaml")
    agent = effective(cfg)["nodeagentconfig"]
    documented = {k for k in cfg.agent.raw if k not in ("apiVersion", "kind")}
    assert documented <= set(agent)


def test_effective_redacts_plugin_env_values() -> None:
    """/configz is served to anyone who reaches the HTTP port: env names only (issue 15: a planted
    API_TOKEN was exposed)."""
    cfg = Config(KubeletConfig(), config.parse_agent({
        "kind": NODEAGENT,
        "plugins": [{"name": "p", "command": ["x"], "env": {"API_TOKEN": "s3cret", "MODE": "fast"}}],
    }))
    plugin = effective(cfg)["nodeagentconfig"]["plugins"][0]
    assert plugin["env"] == {"API_TOKEN": "REDACTED", "MODE": "REDACTED"}
    assert "s3cret" not in repr(effective(cfg))
    assert cfg.agent.plugins[0].env["API_TOKEN"] == "s3cret"  # the plugin itself still gets it


@pytest.mark.parametrize(("given", "name", "on"), [
    (None, "deployment-controller", True),
    (["*", "-deployment"], "deployment-controller", False),
    (["*", "-deployment"], "replicaset-controller", True),
    (["-deployment-controller", "*"], "deployment-controller", False),
    (["replicaset"], "replicaset-controller", True),
    (["replicaset"], "deployment-controller", False),
    (["*"], "bootstrap-signer-controller", False),  # off by default upstream
    (["*", "-resource-claim-controller"], "resourceclaim-controller", False),
])
def test_control_plane_controllers_as_kube_controller_managers_flag(given: Any, name: str, on: bool) -> None:
    doc: dict[str, Any] = {"controlPlane": {} if given is None else {"controllers": given}}
    assert parse_agent(doc).control_plane.controller_enabled(name) is on


def test_control_plane_controllers_refuses_unknown_names() -> None:
    with pytest.raises(ConfigError, match=re.escape(
            'controlPlane.controllers[1]: Invalid value: \'-deploymnt\': "deploymnt" is not in the list of known '
            'controllers')):
        parse_agent({"controlPlane": {"controllers": ["*", "-deploymnt"]}})
