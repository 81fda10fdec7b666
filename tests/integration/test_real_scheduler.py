"""The real kube-scheduler (v1.37.2, the fixture binary's kube-scheduler role, upstream's command
unchanged) against nodeagent's embedded API server: `nodeagent run` with its own API server, the
embedded scheduler off (`controlPlane.scheduler.enabled: false`; the claim controller and the
virtual nodes stay), a few virtual nodes, and kube-scheduler with its default profile and DRA on,
given nodeagent's kubeconfig as written at start. Pods of each kind are created and the real
scheduler must bind each: plain, a device-plugin extended resource only one virtual node has, a
claim from a template (the embedded claim controller creates it, the real scheduler allocates it)
and a standalone claim. The same binary's kube-controller-manager (deployment and replicaset
controllers) makes a Deployment's ReplicaSet and pods. pods/binding and watch bookmarks are compared
with the real kube-apiserver's answers to the same requests.

Opt-in with the kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1: the same cached fixture binary),
skipped with its reason otherwise.

The goal is the default profile. Until every kind the scheduler lists is served, MISSING names
each kind not served yet with the default-profile plugins that list it, and the profile disables
those plugins (with them on, the scheduler waits for its informers forever and never becomes
ready). Shrink MISSING as the kinds land; `test_missing_kinds_are_really_missing` says which
entries are stale.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, free_port, running_daemon, wait_for
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import daemon_sender, kube_sender

pytestmark = [pytest.mark.integration]
real = pytest.mark.kube_apiserver  # the tests that run the fixture binary


@dataclass(frozen=True)
class Needed:
    """A kind the default profile's plugins list (pkg/scheduler/framework/plugins: their informers)."""

    group_version: str
    plural: str
    kind: str
    plugins: tuple[str, ...]


# Kinds the real kube-scheduler's default profile lists that nodeagent does not serve yet, each with
# the plugins (multiPoint) that list it.
MISSING: tuple[Needed, ...] = (
)

READY_TIMEOUT = 120.0
DRIVER = "gpu.example.com"

AGENT: dict[str, Any] = {
    # the real kube-controller-manager's deployment and replicaset controllers are tested here: the
    # embedded ones are switched off, as a user handing them over would
    "controlPlane": {"scheduler": {"enabled": False}, "controllers": ["*", "-deployment", "-replicaset",
                                                                           "-daemonset", "-statefulset"]},
    "virtualNodes": [
        {"name": "vn-plain-{index}", "count": 2, "capacity": {"cpu": "4", "memory": "16Gi", "pods": "20"}},
        {"name": "vn-dp", "capacity": {"cpu": "4", "memory": "16Gi", "pods": "20", "example.com/foo": "2"}},
        {"name": "vn-gpu", "capacity": {"cpu": "4", "memory": "16Gi", "pods": "20"},
         "devices": [{"driver": DRIVER, "count": 2, "name": "gpu-{index}"}]},
    ],
}


def disabled_plugins() -> list[str]:
    return sorted({p for n in MISSING for p in n.plugins})


def scheduler_config(kubeconfig: Path) -> dict[str, Any]:
    """KubeSchedulerConfiguration: the default profile less the plugins of MISSING kinds; no leader election."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": "default-scheduler",
                      "plugins": {"multiPoint": {"disabled": [{"name": p} for p in disabled_plugins()]}}}],
    }


@dataclass
class RealScheduler:
    popen: subprocess.Popen[bytes]
    log_path: Path
    log: IO[bytes]
    port: int
    probe: str = "/readyz"

    def tail(self, chars: int = 6000) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    def ready(self) -> bool:
        """Its probe answers ok (a scheduler's /readyz: its informers synced, sched-handler-sync), as in a
        kubeadm cluster."""
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE  # its own self-signed certificate
        with contextlib.suppress(OSError, urllib.error.URLError), urllib.request.urlopen(
                f"https://127.0.0.1:{self.port}{self.probe}", context=insecure, timeout=5) as answer:
            return bool(answer.read() == b"ok")
        return False

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(15)
        self.log.close()


@contextlib.contextmanager
def real_component(binary: Path, base: Path, role: str, args: list[str], probe: str) -> Iterator[RealScheduler]:
    """The fixture binary's `role` (kube-scheduler, kube-controller-manager) on loopback until its `probe`
    (/readyz, /healthz) answers ok (its log in the failure otherwise); stopped on exit."""
    log_path = base / f"{role}.log"
    log = log_path.open("ab")
    port = free_port()
    popen = subprocess.Popen([str(binary), role, *args, "--bind-address=127.0.0.1", f"--secure-port={port}",
                              "--v=2"],
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    proc = RealScheduler(popen, log_path, log, port, probe)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not proc.ready():
            if popen.poll() is not None:
                raise AssertionError(f"{role} exited with {popen.returncode}:\n{proc.tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{role} not ready within {READY_TIMEOUT:.0f}s:\n{proc.tail()}")
            time.sleep(0.2)
        yield proc
    finally:
        proc.stop()


@contextlib.contextmanager
def embedded_and_kcm(binary: Path, prefix: str, off: list[str], kcm: str) -> Iterator[tuple[Daemon, Daemon]]:
    """(a daemon with its embedded controllers, one with `off` switched off and the real kube-controller-manager's
    `--controllers=kcm` in their place), each in a folder of its own under a temporary one removed on exit."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    (base / "e").mkdir()
    (base / "r").mkdir()
    try:
        with contextlib.ExitStack() as stack:
            embedded = stack.enter_context(running_daemon(base / "e", agent={}))
            real = stack.enter_context(running_daemon(base / "r", agent={
                "controlPlane": {"controllers": ["*", *(f"-{name}" for name in off)]}}))
            stack.enter_context(real_component(
                binary, base, "kube-controller-manager",
                [f"--kubeconfig={real.kubeconfig}", "--leader-elect=false", f"--controllers={kcm}"], "/healthz"))
            yield embedded, real
    finally:
        shutil.rmtree(base, ignore_errors=True)


def real_scheduler(binary: Path, base: Path, kubeconfig: Path) -> contextlib.AbstractContextManager[RealScheduler]:
    """kube-scheduler on `kubeconfig` (the profile of scheduler_config) until its /readyz answers ok."""
    config = base / "kube-scheduler.yaml"
    config.write_text(yaml.safe_dump(scheduler_config(kubeconfig)))
    return real_component(binary, base, "kube-scheduler", [f"--config={config}"], "/readyz")


@pytest.fixture(scope="module")
def cluster(kube_apiserver_binary: Path) -> Iterator[tuple[Daemon, RealScheduler]]:
    """nodeagent (embedded scheduler off, four virtual nodes) and the real kube-scheduler on its kubeconfig;
    NODEAGENT_KEEP_LOGS=1 keeps the folder with both logs."""
    base = Path(tempfile.mkdtemp(prefix="na-rs-", dir="/tmp"))
    try:
        with running_daemon(base, agent=AGENT) as d:
            wait_for(lambda: {n["metadata"]["name"] for n in d.api_get("/api/v1/nodes")["items"]}
                     >= {"vn-plain-0", "vn-plain-1", "vn-dp", "vn-gpu"}, what="the virtual nodes")
            d.kubectl("apply", "-f", "-", input=yaml.safe_dump({
                "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}))
            # a pod created before the scheduler starts: nothing in nodeagent binds it (scheduler off, no selfBinding)
            d.kubectl("apply", "-f", "-", input=yaml.safe_dump(pod("early")))
            time.sleep(1.0)
            assert not d.api_get("/api/v1/namespaces/default/pods/early")["spec"].get("nodeName")
            with real_scheduler(kube_apiserver_binary, base, d.kubeconfig) as sched:
                yield d, sched
    finally:
        if not os.environ.get("NODEAGENT_KEEP_LOGS"):
            shutil.rmtree(base, ignore_errors=True)


def pod(name: str, requests: dict[str, str] | None = None,
        claims: list[dict[str, str]] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "pause",
                                 "resources": {"requests": {"cpu": "100m", **(requests or {})}}}
    if requests and any("/" in r for r in requests):
        container["resources"]["limits"] = {r: v for r, v in requests.items() if "/" in r}
    spec: dict[str, Any] = {"containers": [container]}
    if claims:
        spec["resourceClaims"] = claims
        container["resources"]["claims"] = [{"name": c["name"]} for c in claims]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def bound(d: Daemon, sched: RealScheduler, name: str, timeout: float = 30.0) -> dict[str, Any]:
    """The pod once the real scheduler bound it (its log in the failure otherwise)."""
    path = f"/api/v1/namespaces/default/pods/{name}"
    try:
        wait_for(lambda: d.api_get(path)["spec"].get("nodeName"), timeout=timeout, what=f"pod {name} bound")
    except AssertionError:
        raise AssertionError(f"pod {name} not bound:\n{json.dumps(d.api_get(path))}\n"
                             f"--- kube-scheduler:\n{sched.tail()}") from None
    out: dict[str, Any] = d.api_get(path)
    return out


@real
def test_the_real_scheduler_becomes_ready_and_binds_the_pod_created_before(
        cluster: tuple[Daemon, RealScheduler]) -> None:
    d, sched = cluster
    out = bound(d, sched, "early")
    conditions = {c["type"]: c["status"] for c in out["status"].get("conditions") or []}
    assert conditions.get("PodScheduled") == "True"
    assert f'"Successfully bound pod to node" pod="default/early" node="{out["spec"]["nodeName"]}"' in sched.tail(
        200_000)
    # its events.k8s.io/v1 Event (protobuf from client-go's broadcaster), readable as a core v1 Event too
    path = "/apis/events.k8s.io/v1/namespaces/default/events"
    scheduled = wait_for(lambda: [e for e in d.api_get(path)["items"] if e.get("reason") == "Scheduled"
                                  and e["regarding"]["name"] == "early"], what="the Scheduled event")
    assert scheduled[0]["reportingController"] == "default-scheduler"
    assert scheduled[0]["note"] == f"Successfully assigned default/early to {out['spec']['nodeName']}"


@real
def test_plain_and_extended_resource_pods(cluster: tuple[Daemon, RealScheduler]) -> None:
    d, sched = cluster
    d.kubectl("apply", "-f", "-", input=yaml.safe_dump(pod("plain")))
    d.kubectl("apply", "-f", "-", input=yaml.safe_dump(pod("dp", {"example.com/foo": "1"})))
    assert bound(d, sched, "plain")["spec"]["nodeName"]
    assert bound(d, sched, "dp")["spec"]["nodeName"] == "vn-dp"  # the only node with example.com/foo


@real
def test_a_claim_from_a_template_and_a_standalone_claim(cluster: tuple[Daemon, RealScheduler]) -> None:
    d, sched = cluster
    request = {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}
    d.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "gpu-tmpl", "namespace": "default"}, "spec": {"spec": request}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "gpu-claim", "namespace": "default"}, "spec": request},
        pod("from-template", claims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-tmpl"}]),
        pod("standalone", claims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}]),
    ]))
    for name in ("from-template", "standalone"):
        out = bound(d, sched, name)
        assert out["spec"]["nodeName"] == "vn-gpu"  # the only node with the driver's devices
    template_pod = d.api_get("/api/v1/namespaces/default/pods/from-template")
    statuses = template_pod["status"].get("resourceClaimStatuses") or []
    assert [s["name"] for s in statuses] == ["gpu"]  # the embedded claim controller made its claim
    devices: list[str] = []
    for claim_name, pod_name in ((statuses[0]["resourceClaimName"], "from-template"), ("gpu-claim", "standalone")):
        claim = d.api_get(f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{claim_name}")
        allocation = claim["status"]["allocation"]  # written by the real scheduler
        assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["vn-gpu"]
        [result] = allocation["devices"]["results"]
        assert (result["driver"], result["pool"], result["request"]) == (DRIVER, "vn-gpu", "g")
        devices.append(result["device"])
        assert [r["name"] for r in claim["status"]["reservedFor"]] == [pod_name]
    assert sorted(devices) == ["gpu-0", "gpu-1"]


@real
def test_missing_kinds_are_really_missing(cluster: tuple[Daemon, RealScheduler]) -> None:
    """Each MISSING entry is still not served (else remove it, and its plugins come back)."""
    d, _ = cluster
    served: set[tuple[str, str]] = set()
    for gv in {n.group_version for n in MISSING}:
        path = "/api/v1" if gv == "v1" else f"/apis/{gv}"
        with contextlib.suppress(urllib.error.HTTPError):
            served |= {(gv, r["name"]) for r in d.api_get(path)["resources"]}
    stale = [n.kind for n in MISSING if (n.group_version, n.plural) in served]
    assert not stale, f"served now, remove from MISSING in {os.path.basename(__file__)}: {stale}"


WATCH = "?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=5"
METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
JSON = "application/json"


def _first_bookmark(url: str, headers: dict[str, str], ctx: ssl.SSLContext) -> bytes:
    """The first BOOKMARK line of a watch stream, its resourceVersion replaced by RV."""
    req = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(req, context=ctx, timeout=10) as answer:
        for line in answer:
            if b'"BOOKMARK"' in line:
                return re.sub(rb'"resourceVersion":"\d+"', b'"resourceVersion":"RV"', line.rstrip(b"\n"))
    raise AssertionError(f"no BOOKMARK in the watch {url}")


@real
@pytest.mark.parametrize("path", ["/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/pods",
                                  "/apis/resource.k8s.io/v1/resourceclaims"])
def test_watch_bookmarks_against_kube_apiserver(cluster: tuple[Daemon, RealScheduler], kube_apiserver: KubeAPIServer,
                                                path: str) -> None:
    """The initial-events-end BOOKMARK of `?watch=1&allowWatchBookmarks=true&sendInitialEvents=true`, byte
    for byte (resourceVersion aside) as kube-apiserver writes it for a metadata-only watch (client-go's
    metadata informers: the garbage collector, quota); for a full-object watch the kind, apiVersion and
    metadata match, while kube-apiserver also writes the Go struct's zero values that are not omitempty
    (a Pod's `"spec":{"containers":null},"status":{}`), which nodeagent leaves out (clients read only
    the resourceVersion)."""
    d, _ = cluster
    server, auth, ours_ctx = _daemon_access(d)
    ours = _first_bookmark(server["server"] + path + WATCH, {"Accept": METADATA, **auth}, ours_ctx)
    theirs = _first_bookmark(kube_apiserver.url + path + WATCH, {"Accept": METADATA}, kube_apiserver._ssl())
    assert ours == theirs
    ours_full = json.loads(_first_bookmark(server["server"] + path + WATCH, {"Accept": "application/json", **auth},
                                           ours_ctx))
    theirs_full = json.loads(_first_bookmark(kube_apiserver.url + path + WATCH, {"Accept": "application/json"},
                                             kube_apiserver._ssl()))
    assert {k: ours_full["object"][k] for k in ("kind", "apiVersion", "metadata")} == \
        {k: theirs_full["object"][k] for k in ("kind", "apiVersion", "metadata")}


def _daemon_access(d: Daemon) -> tuple[dict[str, Any], dict[str, str], ssl.SSLContext]:
    """The daemon's API: its kubeconfig's cluster, the bearer token header and a TLS context with its CA."""
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    server, token = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]["token"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(server["certificate-authority-data"]).decode())
    return server, {"Authorization": f"Bearer {token}"}, ctx


def test_metadata_only_watch_bookmarks_are_partial_object_metadata(api_daemon: Daemon) -> None:
    """Without the fixture binary: a metadata-only watch's BOOKMARK is a PartialObjectMetadata (the shape the
    test above compares with kube-apiserver's); a full-object watch's names the kind."""
    server, auth, ctx = _daemon_access(api_daemon)
    path = "/api/v1/namespaces/default/configmaps"
    assert _first_bookmark(server["server"] + path + WATCH, {"Accept": METADATA, **auth}, ctx) == (
        b'{"type":"BOOKMARK","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":'
        b'{"resourceVersion":"RV","annotations":{"k8s.io/initial-events-end":"true"}}}}')
    assert _first_bookmark(server["server"] + path + WATCH, {"Accept": "application/json", **auth}, ctx) == (
        b'{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":'
        b'{"resourceVersion":"RV","annotations":{"k8s.io/initial-events-end":"true"}}}}')


@real
def test_binding_against_kube_apiserver(cluster: tuple[Daemon, RealScheduler], kube_apiserver: KubeAPIServer) -> None:
    """pods/binding on both servers, same requests: the nomination cleared, the Binding's annotations merged,
    PodScheduled set, and the refusals (uid precondition, scheduling gates, already bound) with the same
    codes and texts. The pods name a scheduler nobody runs, so only these bindings bind them."""
    d, _ = cluster
    results = []
    for send in (daemon_sender(d), kube_sender(kube_apiserver)):
        got: list[Any] = []
        base = "/api/v1/namespaces/default/pods"
        for name, gates in (("bind-cmp", None), ("bind-gated", [{"name": "wait"}])):
            body = pod(name)
            body["spec"]["schedulerName"] = "nobody"
            if gates:
                body["spec"]["schedulingGates"] = gates
            code, created = send("POST", base, body, JSON)
            assert code == 201, created
        uid = created["metadata"]["uid"]
        code, _ = send("PATCH", f"{base}/bind-cmp/status", {"status": {"nominatedNodeName": "n2"}},
                       "application/merge-patch+json")
        assert code == 200
        binding = {"apiVersion": "v1", "kind": "Binding", "target": {"kind": "Node", "name": "n1"}}
        code, out = send("POST", f"{base}/bind-cmp/binding", {**binding, "metadata": {"name": "bind-cmp", "uid": "x"}},
                         JSON)
        got.append((code, out.get("reason"), re.sub(r"[0-9a-f-]{36}", "UID", out.get("message", ""))))
        code, out = send("POST", f"{base}/bind-gated/binding", {**binding, "metadata": {"name": "bind-gated"}}, JSON)
        got.append((code, out.get("reason"), out.get("message"), out.get("details")))
        code, out = send("POST", f"{base}/bind-cmp/binding",
                         {**binding, "metadata": {"name": "bind-cmp", "annotations": {"a": "1"}}}, JSON)
        got.append((code, out.get("status")))
        code, bound_pod = send("GET", f"{base}/bind-cmp", None, JSON)
        got.append((bound_pod["spec"]["nodeName"], bound_pod["status"].get("nominatedNodeName"),
                    bound_pod["metadata"].get("annotations"),
                    [(c["type"], c["status"]) for c in bound_pod["status"]["conditions"]]))
        code, out = send("POST", f"{base}/bind-cmp/binding", {**binding, "metadata": {"name": "bind-cmp"}}, JSON)
        got.append((code, out.get("reason"), out.get("message"), out.get("details")))
        for name in ("bind-cmp", "bind-gated"):
            send("DELETE", f"{base}/{name}?gracePeriodSeconds=0", None, JSON)
        assert uid
        results.append(got)
    ours, theirs = results
    assert ours == theirs


HASHED_TEMPLATES = ("kubectl-create-deployment", "rich", "container-resources")
"""Templates of tests/unit/workloads/templates.py the real deployment controller hashes here."""


def _deployment(name: str, template: dict[str, Any], replicas: int = 1) -> dict[str, Any]:
    t = json.loads(json.dumps(template))
    t.setdefault("metadata", {})["labels"] = {"app": name}
    t.setdefault("spec", {})
    t["spec"].pop("affinity", None)  # pods of any node: only the hash matters here
    t["spec"].pop("resourceClaims", None)
    for c in t["spec"].get("containers") or [{}]:
        c.setdefault("name", "c")
        c.setdefault("image", "pause")
        (c.get("resources") or {}).pop("claims", None)
    t["spec"]["containers"] = t["spec"].get("containers") or [{"name": "c", "image": "pause"}]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": t}}


@real
def test_the_real_controller_manager_makes_a_deployments_replica_set_and_pods(
        cluster: tuple[Daemon, RealScheduler], kube_apiserver_binary: Path) -> None:
    """kube-controller-manager's deployment and replicaset controllers, with nodeagent's embedded ones
    switched off (controlPlane.controllers): a Deployment of 2 gets its ReplicaSet from the real
    deployment controller, whose pods the real replicaset controller creates (as protobuf: client-go's
    default for built-in kinds) and the real scheduler binds. The ReplicaSets' names and
    pod-template-hash labels are the ones the embedded controller computes for the same stored
    templates (nodeagent.controlplane.workloads.podhash), for kubectl's template and richer ones."""
    from nodeagent.controlplane.workloads import podhash
    from tests.unit.workloads.templates import TEMPLATES

    d, sched = cluster
    base = d.base
    with real_component(kube_apiserver_binary, base, "kube-controller-manager",
                        [f"--kubeconfig={d.kubeconfig}", "--leader-elect=false",
                         "--controllers=deployment,replicaset,daemonset,statefulset"], "/healthz") as kcm:
        d.kubectl("create", "deployment", "web", "--image=pause", "--replicas=2")
        rs_path = "/apis/apps/v1/namespaces/default/replicasets"
        [rs] = wait_for(lambda: [r for r in d.api_get(rs_path)["items"]
                                 if (r["metadata"].get("ownerReferences") or [{}])[0].get("name") == "web"],
                        timeout=30, what=f"the Deployment's ReplicaSet\n{kcm.tail()}")
        assert rs["spec"]["replicas"] == 2 and rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"

        def owned_pods() -> list[dict[str, Any]]:
            pods = d.api_get("/api/v1/namespaces/default/pods")["items"]
            return [p for p in pods if (p["metadata"].get("ownerReferences") or [{}])[0].get("uid")
                    == rs["metadata"]["uid"]]

        try:
            wait_for(lambda: len(owned_pods()) == 2, timeout=30, what="the ReplicaSet's pods")
        except AssertionError:
            raise AssertionError(f"no pods from the ReplicaSet:\n{kcm.tail()}") from None
        for pod_obj in owned_pods():
            bound(d, sched, pod_obj["metadata"]["name"])

        names = {"web": "web"}
        for key in HASHED_TEMPLATES:
            name = "h-" + key.replace("-", "")[:20]
            names[name] = name
            d.kubectl("apply", "-f", "-", input=json.dumps(_deployment(name, TEMPLATES[key][0])))
        for name in names:
            dep = d.api_get(f"/apis/apps/v1/namespaces/default/deployments/{name}")
            [made] = wait_for(lambda n=name: [r for r in d.api_get(rs_path)["items"]
                                              if (r["metadata"].get("ownerReferences") or [{}])[0].get("name") == n],
                              timeout=30, what=f"the ReplicaSet of {name}\n{kcm.tail()}")
            want = podhash.compute_hash(dep["spec"]["template"])
            assert made["metadata"]["name"] == f"{name}-{want}", (name, dep["spec"]["template"])
            assert made["metadata"]["labels"]["pod-template-hash"] == want
        _revisions_as_the_real_controllers_name_them(d, kcm)


def _revisions_as_the_real_controllers_name_them(d: Daemon, kcm: RealScheduler) -> None:
    """The real daemonset and statefulset controllers' ControllerRevisions and pod labels are the ones
    the embedded controllers compute for the same stored objects."""
    from nodeagent.controlplane.workloads import daemonset, revision, statefulset
    from tests.unit.workloads.templates import TEMPLATES

    template = _deployment("x", TEMPLATES["container-resources"][0])["spec"]["template"]
    for kind, name in (("DaemonSet", "ds-real"), ("StatefulSet", "sts-real")):
        t = json.loads(json.dumps(template))
        t["metadata"]["labels"] = {"app": name}
        spec: dict[str, Any] = {"selector": {"matchLabels": {"app": name}}, "template": t}
        if kind == "StatefulSet":
            spec.update(replicas=1, serviceName=name)
        d.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "apps/v1", "kind": kind,
                                                         "metadata": {"name": name, "namespace": "default"},
                                                         "spec": spec}))
        plural = kind.lower() + "s"
        obj = d.api_get(f"/apis/apps/v1/namespaces/default/{plural}/{name}")
        revs = wait_for(lambda n=name: [r for r in d.api_get("/apis/apps/v1/namespaces/default/controllerrevisions")
                                        ["items"] if (r["metadata"].get("ownerReferences") or [{}])[0].get("name")
                                        == n], timeout=30, what=f"the revision of {kind} {name}\n{kcm.tail()}")
        if kind == "DaemonSet":
            want, _, _ = daemonset.current_revision(obj, [])
            assert [r["metadata"]["name"] for r in revs] == [f"{name}-{want}"]
            assert revs[0]["metadata"]["labels"]["controller-revision-hash"] == want
        else:
            want, _, _ = statefulset.current_revision(obj, [])
            assert [r["metadata"]["name"] for r in revs] == [want]
            pod = wait_for(lambda n=name: d.api_get(f"/api/v1/namespaces/default/pods/{n}-0"), timeout=30,
                           what=f"pod {name}-0\n{kcm.tail()}")
            assert pod["metadata"]["labels"]["controller-revision-hash"] == want
            assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == f"{name}-0"
            assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "0"
            assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (f"{name}-0", name)
        assert revs[0]["data"] == json.loads(revision.template_patch(obj["spec"]["template"]))


def test_a_node_binds_pods_itself_only_when_told_no_scheduler_runs(short_dir: Path) -> None:
    """Without the fixture binary: with the embedded scheduler off a pod waits for a scheduler; with
    `node.selfBinding` (the explicit no-scheduler setup) the node binds it to itself, whatever its
    schedulerName, unless it has scheduling gates."""
    off = {"controlPlane": {"scheduler": {"enabled": False}}}
    (short_dir / "a").mkdir()
    (short_dir / "b").mkdir()
    with running_daemon(short_dir / "a", agent=off) as d:
        d.kubectl("apply", "-f", "-", input=yaml.safe_dump(pod("waits")))
        assert d.api_get("/api/v1/namespaces/default/pods/waits")["spec"]["schedulerName"] == "default-scheduler"
        time.sleep(2.0)  # the node's sync and the control plane's loops have run meanwhile
        assert not d.api_get("/api/v1/namespaces/default/pods/waits")["spec"].get("nodeName")
    with running_daemon(short_dir / "b", agent={**off, "node": {"selfBinding": True}}) as d:
        gated = pod("gated")
        gated["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]
        d.kubectl("apply", "-f", "-", input=yaml.safe_dump(gated))
        mine = pod("taken")
        mine["spec"]["schedulerName"] = "someone-else"
        d.kubectl("apply", "-f", "-", input=yaml.safe_dump(mine))
        wait_for(lambda: d.api_get("/api/v1/namespaces/default/pods/taken")["spec"].get("nodeName") == "test-node",
                 what="the pod bound to the local node")
        taken = d.api_get("/api/v1/namespaces/default/pods/taken")
        assert [c["status"] for c in taken["status"]["conditions"] if c["type"] == "PodScheduled"] == ["True"]
        # a gated pod waits for its gates even here (the binding would be refused)
        assert not d.api_get("/api/v1/namespaces/default/pods/gated")["spec"].get("nodeName")
