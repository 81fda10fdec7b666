"""Three node processes and the control plane, started from the systemd units' command lines.

The README's "Several nodes" example, without systemd: the ExecStart= of
nodeagent-controlplane.service and of nodeagent-node@.service (instance = node name) are read
from the unit files as shipped, the instance specifier substituted, and only the paths moved into
a short temporary folder (/etc/nodeagent, /var/lib/nodeagent and /run become folders of it; the
program becomes this checkout's console script). The configurations are the shipped examples
(configs/controlplane.yaml, configs/node.yaml, configs/plugins/fake-gpu.yaml) moved the same
way, with free ports. So a unit or an example config that stops working breaks this test.

Then: kubectl sees three Ready nodes, each with the four fake GPUs its own device plugin
registered on its own kubelet.sock; pods that only fit by spreading (cpu, whole-node GPU
requests) are scheduled over the three nodes and Running; every process stops on SIGTERM and
leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from aiohttp import web

from nodeagent.apis.podresources.v1 import api_pb2 as podresources
from nodeagent.apis.podresources.v1 import api_pb2_grpc as podresources_grpc
from nodeagent.nodeapi.remote import RemoteAPI
from nodeagent.pods.events import Event, ObjectRef
from tests.integration.daemon_helpers import BIN, free_port, wait_for

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "systemd"
CONFIGS = REPO / "configs"
NODES = ("node-a", "node-b", "node-c")
KUBECTL = shutil.which("kubectl")

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")


def options(argv: list[str]) -> dict[str, str]:
    """The --flag value pairs after `nodeagent run`."""
    assert argv[1] == "run", argv
    return dict(zip(argv[2::2], argv[3::2], strict=True))


def exec_start(unit: Path, instance: str = "") -> list[str]:
    """The ExecStart= command line of a unit file (continuations joined, %i and %% expanded)."""
    text = unit.read_text().replace("\\\n", " ")
    lines = [m.group(1) for m in re.finditer(r"^ExecStart=(.*)$", text, flags=re.MULTILINE)]
    assert len(lines) == 1, f"{unit.name}: one ExecStart= expected, got {lines}"
    return [arg.replace("%i", instance).replace("%%", "%") for arg in shlex.split(lines[0])]


@dataclass
class Moved:
    """The machine's paths the units and configs name, moved under one temporary folder."""

    base: Path
    prefixes: dict[str, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # longest first: /var/lib/nodeagent before /run, never a prefix of another one
        self.prefixes = {"/etc/nodeagent": self.base / "etc", "/var/lib/nodeagent": self.base / "var",
                         "/run": self.base / "run", "/opt/nodeagent/bin": BIN}

    def text(self, text: str) -> str:
        for old, new in self.prefixes.items():
            text = re.sub(re.escape(old) + r"(?=[/\s\"',\]]|$)", str(new), text, flags=re.MULTILINE)
        return text

    def argv(self, argv: list[str]) -> list[str]:
        return [self.text(a) for a in argv]


@dataclass
class Proc:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def start(name: str, argv: list[str], base: Path, env: Mapping[str, str]) -> Proc:
    log = base / f"{name}.log"
    with open(log, "wb") as out:
        # a session of its own: the daemon and the plugins it spawns are one process group,
        # so the test can tell that nothing of it outlives the stop
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=dict(env), start_new_session=True)
    return Proc(name, proc, log)


def stop_all(procs: list[Proc]) -> list[str]:
    """SIGTERM every process (nodes first, as systemd's ordering would), then what is left of each
    process group; the names of the groups that did not end on their own."""
    leftovers = []
    for p in procs:
        if p.proc.poll() is None:
            p.proc.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.proc.kill()
            p.proc.wait()
            leftovers.append(f"{p.name} (daemon)")
    deadline = time.monotonic() + 10
    for p in procs:
        while True:
            try:
                os.killpg(p.proc.pid, 0)
            except ProcessLookupError:
                break
            if time.monotonic() > deadline:
                os.killpg(p.proc.pid, signal.SIGKILL)
                leftovers.append(f"{p.name} (children)")
                break
            time.sleep(0.1)
    return leftovers


def kubectl(kubeconfig: Path, *args: str, input: str | None = None) -> Any:
    assert KUBECTL is not None
    out = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                         timeout=60, input=input, env={**os.environ, "KUBECTL_KUBERC": "false"})
    if out.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {out.stderr}{out.stdout}")
    return json.loads(out.stdout) if "-o" in args and "json" in args else out.stdout


def is_ready(node: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in node.get("status", {}).get("conditions", []))


def pod(name: str, requests: Mapping[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": dict(requests), "limits": dict(requests)}}]}}


def pod_resources(socket_path: Path) -> dict[str, list[str]]:
    """pod name -> its example.com/gpu device ids, from List on one node's pod-resources socket."""
    with grpc.insecure_channel(f"unix://{socket_path}") as channel:
        listed = podresources_grpc.PodResourcesListerStub(channel).List(podresources.ListPodResourcesRequest(),
                                                                        timeout=10)
    return {p.name: sorted(i for c in p.containers for d in c.devices if d.resource_name == "example.com/gpu"
                           for i in d.device_ids) for p in listed.pod_resources}


@dataclass
class Cluster:
    kubeconfig: Path
    procs: list[Proc]
    roots: dict[str, Path]  # node name -> its rootDir, as its command line gives it


@pytest.fixture
def cluster(short_dir: Path) -> Iterator[Cluster]:
    """The control plane and three nodes from the units' command lines."""
    moved = Moved(short_dir)
    etc = moved.prefixes["/etc/nodeagent"]
    (etc / "nodes").mkdir(parents=True)
    (etc / "plugins").mkdir()
    for d in ("var", "run"):
        (short_dir / d).mkdir(mode=0o700)
    api_port = free_port()
    cp_text = (CONFIGS / "controlplane.yaml").read_text()
    assert "127.0.0.1:6443" in cp_text
    (etc / "controlplane.yaml").write_text(moved.text(cp_text.replace("127.0.0.1:6443", f"127.0.0.1:{api_port}")))
    node_text = (CONFIGS / "node.yaml").read_text()
    assert "127.0.0.1:10255" in node_text and "\nport: 10250\n" in node_text
    for name in NODES:  # the README's loop: one copy per node, its own metrics and kubelet ports
        text = node_text.replace("127.0.0.1:10255", "127.0.0.1:0").replace("\nport: 10250\n", "\nport: 0\n")
        (etc / "nodes" / f"{name}.yaml").write_text(moved.text(text))
    shutil.copy(CONFIGS / "plugins" / "fake-gpu.yaml", etc / "plugins" / "fake-gpu.yaml")

    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")}
    procs: list[Proc] = []
    try:
        cp = start("controlplane", moved.argv(exec_start(UNITS / "nodeagent-controlplane.service")), short_dir, env)
        procs.append(cp)
        kubeconfig = moved.text("/var/lib/nodeagent/controlplane/kubeconfig")
        wait_for(lambda: Path(kubeconfig).exists() or cp.proc.poll() is not None, timeout=60, what="kubeconfig")
        assert cp.proc.poll() is None, cp.output()
        roots = {}
        for name in NODES:  # After=nodeagent-controlplane.service: once it is ready
            argv = moved.argv(exec_start(UNITS / "nodeagent-node@.service", name))
            roots[name] = Path(options(argv)["--root-dir"])
            procs.append(start(name, argv, short_dir, env))
        yield Cluster(Path(kubeconfig), procs, roots)
    finally:
        left = stop_all(list(reversed(procs)))
        assert not left, f"processes left after SIGTERM: {left}"
        assert all(p.proc.returncode == 0 for p in procs), {p.name: (p.proc.returncode, p.output()) for p in procs}


def test_exec_start_lines_use_the_instance_and_separate_paths() -> None:
    """Each instance gets its own node name, state, root and admin socket; none is the kubelet's."""
    lines = {n: exec_start(UNITS / "nodeagent-node@.service", n) for n in NODES}
    for name, argv in lines.items():
        assert argv[:2] == ["/opt/nodeagent/bin/nodeagent", "run"]
        opts = options(argv)
        assert opts["--node-name"] == name
        assert opts["--config"] == f"/etc/nodeagent/nodes/{name}.yaml"
        for flag in ("--state-dir", "--root-dir", "--admin-socket"):
            assert name in opts[flag] and not opts[flag].startswith("/var/lib/kubelet"), (flag, opts[flag])
    for flag in ("--state-dir", "--root-dir", "--admin-socket"):
        values = [options(a)[flag] for a in lines.values()]
        assert len(set(values)) == len(NODES), values
    cp = exec_start(UNITS / "nodeagent-controlplane.service")
    assert "/etc/nodeagent/controlplane.yaml" in cp


def test_moved_paths() -> None:
    moved = Moved(Path("/tmp/x"))
    assert moved.text("kubeconfig: /var/lib/nodeagent/controlplane/kubeconfig") == \
        "kubeconfig: /tmp/x/var/controlplane/kubeconfig"
    assert moved.text("[nodeagent-device-plugin, --config, /etc/nodeagent/plugins/fake-gpu.yaml]") == \
        "[nodeagent-device-plugin, --config, /tmp/x/etc/plugins/fake-gpu.yaml]"
    assert moved.text("/run/nodeagent-node/a/nodeagent.sock /runner") == \
        "/tmp/x/run/nodeagent-node/a/nodeagent.sock /runner"


@pytest.mark.timeout(240)  # four daemons and three plugins start on a loaded 2-core machine
def test_three_nodes_from_the_units_schedule_across(cluster: Cluster) -> None:
    kubeconfig, procs = cluster.kubeconfig, cluster.procs

    def ready_nodes() -> dict[str, Any]:
        for p in procs:
            assert p.proc.poll() is None, f"{p.name} exited: {p.output()}"
        items = kubectl(kubeconfig, "get", "nodes", "-o", "json")["items"]
        ready = {n["metadata"]["name"]: n for n in items if is_ready(n)
                 and n["status"].get("allocatable", {}).get("example.com/gpu") == "4"}
        return ready if set(ready) == set(NODES) else {}

    nodes = wait_for(ready_nodes, timeout=90, what="three Ready nodes with their fake GPUs")
    for name, node in nodes.items():
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == name
        assert node["metadata"]["labels"]["nodeagent.dev/pool"] == "demo"
    leases = kubectl(kubeconfig, "get", "leases", "-n", "kube-node-lease", "-o", "json")["items"]
    assert {lease["spec"]["holderIdentity"] for lease in leases} >= set(NODES)

    # 8 cpus a node: two 3-cpu pods fit on one, so six need all three; four GPUs a node: one
    # 4-GPU pod each, so three need all three.
    pods = [pod(f"plain-{i}", {"cpu": "3", "memory": "64Mi"}) for i in range(6)]
    pods += [pod(f"gpu-{i}", {"cpu": "1", "memory": "64Mi", "example.com/gpu": "4"}) for i in range(3)]
    # one YAML document per pod (JSON is YAML), not a v1 List: kubectl validates a List against
    # /openapi/v2 in protobuf, which nodeagent's API server answers in JSON
    kubectl(kubeconfig, "create", "-f", "-", input="".join(f"---\n{json.dumps(p)}\n" for p in pods))

    def running() -> dict[str, str]:
        items = kubectl(kubeconfig, "get", "pods", "-n", "default", "-o", "json")["items"]
        placed = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in items
                  if p.get("status", {}).get("phase") == "Running"}
        return placed if len(placed) == len(pods) else {}

    placed = wait_for(running, timeout=60, what="nine Running pods")
    plain = [placed[f"plain-{i}"] for i in range(6)]
    assert sorted(plain) == sorted(NODES * 2), placed
    assert sorted(placed[f"gpu-{i}"] for i in range(3)) == sorted(NODES), placed

    # each node's own pod-resources socket (rootDir from its unit's command line) lists its own pods
    for name in NODES:
        listed = pod_resources(cluster.roots[name] / "pod-resources" / "kubelet.sock")
        assert set(listed) == {p for p, n in placed.items() if n == name}, (name, listed)
        assert [ids for p, ids in listed.items() if p.startswith("gpu-")] == [["gpu-0", "gpu-1", "gpu-2", "gpu-3"]]


# ---------------------------------------------------------------- configs/rbac-node.yaml


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> tuple[str, str, str, str]:
    """(apiGroup, resource, subresource, verb) of a request, as the API server's RequestInfoFactory
    derives them for authorization."""
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        assert parts[0] == "apis", path
        group, rest = parts[1], parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    resource, name, sub = [*rest, "", ""][:3]
    if method == "GET":
        verb = "get" if name else ("watch" if query.get("watch") in ("true", "1") else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}[method]
    return group, resource, sub, verb


def test_request_attributes() -> None:
    assert request_attributes("GET", "/api/v1/pods", {"watch": "true"}) == ("", "pods", "", "watch")
    assert request_attributes("PATCH", "/api/v1/namespaces/d/pods/x/status", {}) == ("", "pods", "status", "patch")
    assert request_attributes("DELETE", "/apis/resource.k8s.io/v1/resourceslices", {}) == \
        ("resource.k8s.io", "resourceslices", "", "deletecollection")
    assert request_attributes("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n", {}) == \
        ("coordination.k8s.io", "leases", "", "update")


def granted(rules: list[Mapping[str, Any]], group: str, resource: str, sub: str, verb: str) -> bool:
    name = f"{resource}/{sub}" if sub else resource
    return any(group in r["apiGroups"] and name in r["resources"] and verb in r["verbs"] for r in rules)


async def test_rbac_node_grants_every_request_of_the_node(short_dir: Path) -> None:
    """Every request RemoteAPI makes (recorded by a fake API server) is granted to the ServiceAccount of
    configs/rbac-node.yaml, leases in kube-node-lease only; and nothing is granted that none makes."""
    seen: set[tuple[str, str, str, str]] = set()
    namespaces: dict[str, set[str]] = {}

    async def handler(request: web.Request) -> web.StreamResponse:
        attrs = request_attributes(request.method, request.path, request.query)
        seen.add(attrs)
        if "/namespaces/" in request.path:
            namespaces.setdefault(attrs[1], set()).add(request.path.split("/namespaces/")[1].split("/")[0])
        if attrs[3] == "watch":
            return web.Response(text="", content_type="application/json")
        body: dict[str, Any] = {"metadata": {"name": "x", "resourceVersion": "1"}, "items": [{}], "spec": {}}
        return web.json_response(body, status=201 if request.method == "POST" else 200)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    kubeconfig = short_dir / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    api = RemoteAPI(kubeconfig, timeout=5, node_name="node-a")
    try:
        node = {"metadata": {"name": "node-a"}}
        await api.get_node("node-a")
        await api.create_node(node)
        await api.patch_node_labels("node-a", {"a": "b"})
        await api.update_node_status("node-a", {"phase": "Running"})
        await api.get_lease("node-a")
        await api.create_lease({"metadata": {"name": "node-a", "namespace": "kube-node-lease"}})
        await api.update_lease({"metadata": {"name": "node-a", "namespace": "kube-node-lease",
                                             "resourceVersion": "1"}})
        await api.get_pod("default", "p")
        await api.patch_pod_status("default", "p", "uid", {"phase": "Running"}, frozenset(), frozenset())
        await api.create_pod({"metadata": {"name": "mirror", "namespace": "default"}})
        await api.delete_pod("default", "mirror", "uid")
        await api.get_claim("default", "c")
        await api.delete_node_slices("node-a", "gpu.example.com")
        ref = ObjectRef("Pod", "p", "default", "uid")
        api.post_event(Event(ref, "Normal", "Started", "m", 1, 1.0, 1.0))
        api.post_event(Event(ref, "Normal", "Started", "m", 2, 1.0, 2.0))
        await api.events.flush(wait=True)
        watch = api.watch_pods("node-a")
        wanted = {("", "pods", "", "watch")}
        wait_for_seen = asyncio.get_running_loop().time() + 10
        while not wanted <= seen and asyncio.get_running_loop().time() < wait_for_seen:
            await asyncio.sleep(0.05)
        watch.close()
    finally:
        await api.close()
        await runner.cleanup()

    docs = [d for d in yaml.safe_load_all((CONFIGS / "rbac-node.yaml").read_text()) if d]
    sa = {"kind": "ServiceAccount", "name": "nodeagent-node", "namespace": "kube-system"}
    bound = {(b["roleRef"]["kind"], b["roleRef"]["name"], b["metadata"].get("namespace", ""))
             for b in docs if b["kind"] in ("ClusterRoleBinding", "RoleBinding") and sa in b["subjects"]}
    cluster_rules = [r for d in docs if d["kind"] == "ClusterRole" and ("ClusterRole", d["metadata"]["name"], "")
                     in bound and d["metadata"]["name"] != "nodeagent-dra-driver" for r in d["rules"]]
    lease_rules = [r for d in docs if d["kind"] == "Role" and ("Role", d["metadata"]["name"], "kube-node-lease")
                   in bound and d["metadata"]["namespace"] == "kube-node-lease" for r in d["rules"]]
    assert namespaces["leases"] == {"kube-node-lease"}
    missing = [a for a in seen if not granted(lease_rules if a[1] == "leases" else cluster_rules, *a)]
    assert not missing, f"configs/rbac-node.yaml does not grant: {sorted(missing)}"
    unused = [(g, res, v) for r in cluster_rules + lease_rules for g in r["apiGroups"] for res in r["resources"]
              for v in r["verbs"] if (g, *res.partition("/")[::2], v) not in seen]
    assert not unused, f"configs/rbac-node.yaml grants what the node never asks: {unused}"
