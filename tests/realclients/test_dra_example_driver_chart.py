"""dra-example-driver's own Helm chart, installed unchanged with the Helm CLI into a nodeagent daemon's API.

The chart (deployments/helm/dra-example-driver in the module the real-clients tier's go.mod pins, read
from the Go module cache: nothing of it is in this repository) is installed by `helm install` with the
daemon's kubeconfig, so Helm's whole install path runs against the embedded API server: discovery, its
release record (a Secret), creating every object the chart renders. The embedded controllers then do
what kube-controller-manager would: the DaemonSet gets one pod on every node it qualifies for (not on a
node whose taint it does not tolerate) and the controller Deployment its ReplicaSet and pod. No container
runs (nodeagent has no container runtime): the driver itself still runs as a process beside the daemon,
as the other tests of this tier run it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.realclients import programs

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

NAMESPACE = "dra-example-driver"
RELEASE = "dra-example-driver"
LOCAL = "test-node"  # write_config's nodeName
PLAIN = ("vnode-0", "vnode-1")
TAINTED = "vnode-tainted"  # NoSchedule taint the chart's DaemonSet does not tolerate


def chart_dir() -> Path:
    """The chart at the version the tier's go.mod pins, downloaded through the module proxy if need be."""
    version = programs.DRA_EXAMPLE_DRIVER.requirement("sigs.k8s.io/dra-example-driver")
    source = programs.module_source("sigs.k8s.io/dra-example-driver", version, programs.DRA_EXAMPLE_DRIVER)
    chart = source / "deployments" / "helm" / "dra-example-driver"
    assert (chart / "Chart.yaml").is_file(), f"no chart in {source}"
    return chart


def helm_run(helm: Path, d: Daemon, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The Helm CLI against the daemon's API. Its state (Helm's cache, config and data, and the discovery
    cache under $HOME/.kube) goes under the test's dir, never into the user's home or the working dir."""
    home = d.base / "helm"
    env = {"HOME": str(home), "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
           "HELM_DATA_HOME": str(home / "data"), "KUBECONFIG": str(d.kubeconfig), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=120, env=env)
    if check and out.returncode != 0:
        log = (d.base / "daemon.log").read_text(errors="replace")[-3000:]
        raise AssertionError(f"helm {' '.join(args)} failed ({out.returncode}):\n{out.stderr}{out.stdout}\n"
                             f"--- daemon log ---\n{log}")
    return out


@pytest.fixture
def cluster(short_dir: Path) -> Iterator[Daemon]:
    """A daemon (its own node) with three virtual nodes, one of them tainted NoSchedule."""
    nodes: list[dict[str, Any]] = [{"name": n, "labels": {"kubernetes.io/hostname": n},
                                    "capacity": {"cpu": "8", "memory": "32Gi", "pods": "20"}} for n in PLAIN]
    nodes.append({"name": TAINTED, "labels": {"kubernetes.io/hostname": TAINTED},
                  "taints": [{"key": "example.com/reserved", "value": "true", "effect": "NoSchedule"}],
                  "capacity": {"cpu": "8", "memory": "32Gi", "pods": "20"}})
    with running_daemon(short_dir, agent={"virtualNodes": nodes}) as d:
        wait_for(lambda: len(d.kubectl_json("get", "nodes")["items"]) == 4, timeout=30, what="four nodes")
        yield d


def test_helm_installs_the_chart_and_the_controllers_run_its_workloads(helm: Path, cluster: Daemon) -> None:
    d = cluster
    chart = chart_dir()
    helm_run(helm, d, "install", RELEASE, str(chart), "--namespace", NAMESPACE, "--create-namespace",
             # the controller Deployment exists only with a plugin enabled
             "--set", "controller.plugins={BindingConditions}")

    # Helm's release record: a Secret in the release namespace, and `helm list` reads it back
    listed = yaml.safe_load(helm_run(helm, d, "list", "--namespace", NAMESPACE, "-o", "yaml").stdout)
    assert [(r["name"], r["status"]) for r in listed] == [(RELEASE, "deployed")], listed
    secret = d.kubectl_json("get", "secret", "-n", NAMESPACE, f"sh.helm.release.v1.{RELEASE}.v1")
    assert secret["type"] == "helm.sh/release.v1"
    assert secret["metadata"]["labels"]["owner"] == "helm"

    # every object the chart rendered exists as rendered (kind, namespace, name)
    manifest = helm_run(helm, d, "get", "manifest", RELEASE, "--namespace", NAMESPACE).stdout
    rendered = [o for o in yaml.safe_load_all(manifest) if o]
    kinds = sorted(o["kind"] for o in rendered)
    assert kinds == sorted(["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Service", "DaemonSet",
                            "Deployment", "DeviceClass", "ValidatingAdmissionPolicy",
                            "ValidatingAdmissionPolicyBinding"]), kinds
    for obj in rendered:
        ns = ["-n", obj["metadata"]["namespace"]] if obj["metadata"].get("namespace") else []
        resource = f"{obj['kind'].lower()}.{obj['apiVersion'].rsplit('/', 1)[0]}" if "/" in obj["apiVersion"] \
            else obj["kind"].lower()
        got = d.kubectl_json("get", resource, obj["metadata"]["name"], *ns)
        assert got["metadata"]["labels"] == (obj["metadata"].get("labels") or {}) | got["metadata"]["labels"]

    # RBAC: the ClusterRoleBinding gives the chart's ServiceAccount the chart's ClusterRole
    role = d.kubectl_json("get", "clusterrole", f"{RELEASE}-role")
    assert {"resourceslices"} <= {r for rule in role["rules"] for r in rule["resources"]}
    binding = d.kubectl_json("get", "clusterrolebinding", f"{RELEASE}-role-binding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": f"{RELEASE}-role"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": f"{RELEASE}-service-account",
                                    "namespace": NAMESPACE}]
    sa = d.kubectl_json("get", "serviceaccount", "-n", NAMESPACE, f"{RELEASE}-service-account")
    assert sa["metadata"]["name"] == f"{RELEASE}-service-account"

    # the DaemonSet: one pod on each node it qualifies for (all but the tainted one), bound there
    expected = {LOCAL, *PLAIN}

    def ds_pods() -> dict[str, str] | None:
        pods = d.kubectl_json("get", "pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/component=kubeletplugin")
        placed = {p["spec"].get("nodeName", ""): p["metadata"]["name"] for p in pods["items"]}
        return placed if set(placed) == expected and len(pods["items"]) == len(expected) else None
    try:
        placed = wait_for(ds_pods, timeout=60, what=f"a kubeletplugin pod on each of {sorted(expected)}")
    except AssertionError as err:
        pods = d.kubectl("get", "pods", "-n", NAMESPACE, "-o", "wide", check=False).stdout
        events = d.kubectl("get", "events", "-n", NAMESPACE, check=False).stdout
        raise AssertionError(f"{err}\n{pods}\n{events}") from None
    assert TAINTED not in placed
    ds = wait_for(lambda: (s := d.kubectl_json("get", "daemonset", "-n", NAMESPACE, f"{RELEASE}-kubeletplugin"))
                  ["status"].get("desiredNumberScheduled") == len(expected)
                  and s["status"].get("currentNumberScheduled") == len(expected) and s,
                  timeout=30, what="DaemonSet status counting three nodes")
    # each pod admitted by its node and Running (without running anything: nodeagent has no container
    # runtime), so the DaemonSet counts them ready
    wait_for(lambda: all(d.kubectl_json("get", "pod", "-n", NAMESPACE, name)["status"].get("phase") == "Running"
                         for name in placed.values()), timeout=60, what="the kubeletplugin pods Running")
    wait_for(lambda: d.kubectl_json("get", "daemonset", "-n", NAMESPACE, f"{RELEASE}-kubeletplugin")
             ["status"].get("numberReady") == len(expected), timeout=60, what="DaemonSet numberReady 3")
    for name in placed.values():
        owner = d.kubectl_json("get", "pod", "-n", NAMESPACE, name)["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("DaemonSet", ds["metadata"]["name"],
                                                               ds["metadata"]["uid"])

    # the controller Deployment: its ReplicaSet (owned by it) and one pod of that ReplicaSet
    dep = d.kubectl_json("get", "deployment", "-n", NAMESPACE, f"{RELEASE}-controller")

    def controller_pod() -> dict[str, Any] | None:
        sets = d.kubectl_json("get", "replicasets", "-n", NAMESPACE, "-l", "app.kubernetes.io/component=controller")
        owned = [s for s in sets["items"] if s["metadata"]["ownerReferences"][0]["uid"] == dep["metadata"]["uid"]]
        if len(owned) != 1:
            return None
        pods = d.kubectl_json("get", "pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/component=controller")
        mine = [p for p in pods["items"] if p["metadata"]["ownerReferences"][0]["uid"] == owned[0]["metadata"]["uid"]]
        return mine[0] if len(mine) == 1 and mine[0]["spec"].get("nodeName") else None
    pod = wait_for(controller_pod, timeout=60, what="the controller Deployment's ReplicaSet and its pod")
    assert pod["spec"]["containers"][0]["command"] == ["dra-example-controller"]

    # uninstall: Helm deletes what it created, the release record included
    helm_run(helm, d, "uninstall", RELEASE, "--namespace", NAMESPACE, "--wait", "--timeout", "60s")
    assert d.kubectl("get", "daemonset", "-n", NAMESPACE, f"{RELEASE}-kubeletplugin", check=False).returncode != 0
    assert d.kubectl("get", "clusterrole", f"{RELEASE}-role", check=False).returncode != 0
    assert d.kubectl_json("get", "secrets", "-n", NAMESPACE, "-l", "owner=helm")["items"] == []
    wait_for(lambda: d.kubectl_json("get", "pods", "-n", NAMESPACE)["items"] == [], timeout=60,
             what="the chart's pods gone (the garbage collector deletes what the DaemonSet and ReplicaSet owned)")
