"""A real kube-apiserver (and its etcd) for the tests that must hold against upstream, not only against nodeagent.

tests/fixtures/kube-apiserver is a Go module that requires k8s.io/kubernetes at one release and
replaces its staging modules with their published versions, so the upstream kube-apiserver command
builds from the Go module proxy alone; the same binary embeds etcd (go.etcd.io/etcd/server/v3).
The binary is built once and cached outside the repo (gotools.build_cached), keyed by the module's
sources and the Go version.

The tier is opt-in: it runs when NODEAGENT_KUBE_APISERVER=1 (`make test-kube-apiserver`), and is
skipped with that hint otherwise, because a cold build takes minutes (see the README) and the whole
suite has a 15-minute budget. NODEAGENT_KUBE_APISERVER_BIN names a prebuilt binary instead.

`running_kube_apiserver` starts etcd and kube-apiserver on loopback ports under a short temp dir with
a fresh PKI (kubeapiserver_pki), waits for /readyz, writes an admin kubeconfig and stops both on exit.
The API server can be stopped and started again over the same etcd (an API server that goes away
and returns). `KubeAPIServer` offers kubeconfigs for any user (a node's: system:node:<name> in
system:nodes), kubectl, and a plain GET for polling without a process start.
"""

from __future__ import annotations

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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from tests.integration import gotools
from tests.integration.daemon_helpers import detached, free_port
from tests.integration.kubeapiserver_pki import SERVICE_CIDR, Pki, kubeconfig, make_pki, write_kubeconfig

MODULE = Path(__file__).resolve().parents[1] / "fixtures" / "kube-apiserver"
BINARY = "kube-apiserver-fixture"
ENABLE_ENV = "NODEAGENT_KUBE_APISERVER"
BINARY_ENV = "NODEAGENT_KUBE_APISERVER_BIN"
BUILD_TIMEOUT = 3600.0  # a cold build took 43 min on two busy cores; a warm one under a minute
READY_TIMEOUT = 120.0
STOP_TIMEOUT = 15.0


def kubernetes_version() -> str:
    """The k8s.io/kubernetes release the module requires (its go.mod is the one pin)."""
    found = re.search(r"^\s*k8s\.io/kubernetes (v\d+\.\d+\.\d+)\s*$", (MODULE / "go.mod").read_text(), re.M)
    assert found, f"{MODULE / 'go.mod'} requires no k8s.io/kubernetes release"
    return found.group(1)


def version_ldflags(version: str) -> list[str]:
    """-X flags stamping the release into the binary, as upstream's hack/lib/version.sh does for its builds.

    Without them the server reports gitVersion v0.0.0-master+$Format:%H$, which kubectl cannot parse.
    """
    major, minor = version.lstrip("v").split(".")[:2]
    flags = []
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        for var, value in (("gitVersion", version), ("gitMajor", major), ("gitMinor", minor),
                           ("gitTreeState", "clean")):
            flags.append(f"-X {package}.{var}={value}")
    return flags


def tier_enabled() -> bool:
    return os.environ.get(ENABLE_ENV, "").strip().lower() in ("1", "true", "yes")


def fixture_binary() -> Path:
    """The kube-apiserver-fixture binary: NODEAGENT_KUBE_APISERVER_BIN, or built (cached) from the module."""
    if not tier_enabled():
        pytest.skip(f"the real kube-apiserver tier is opt-in: set {ENABLE_ENV}=1 (or run "
                    "`make test-kube-apiserver`); the first run builds kube-apiserver from the Go module proxy")
    given = os.environ.get(BINARY_ENV)
    if given:
        path = Path(given)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise AssertionError(f"{BINARY_ENV}={given}: not an executable file")
        return path
    return gotools.build_cached(MODULE, BINARY, timeout=BUILD_TIMEOUT, ldflags=version_ldflags(kubernetes_version()))




@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    log: IO[bytes]

    def tail(self, chars: int = 4000) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(STOP_TIMEOUT)
        self.log.close()


@dataclass
class KubeAPIServer:
    """One test cluster's control plane: etcd + kube-apiserver processes, their PKI and an admin kubeconfig."""

    binary: Path
    base: Path
    extra_args: Sequence[str] = ()
    # the rest of a control plane, for tests where pods must be scheduled (claims allocated) and
    # controllers must act (ResourceClaims from templates, the node lifecycle controller)
    scheduler: bool = False
    controller_manager: bool = False
    scheduler_args: Sequence[str] = ()
    controller_manager_args: Sequence[str] = ()
    pki: Pki = field(init=False)
    port: int = field(init=False, default=0)
    etcd_url: str = field(init=False, default="")
    kubeconfig: Path = field(init=False)
    startup_seconds: float = field(init=False, default=0.0)  # the last API server start, to /readyz 200
    _etcd: _Proc | None = field(init=False, default=None)
    _apiserver: _Proc | None = field(init=False, default=None)
    _components: dict[str, _Proc] = field(init=False, default_factory=dict)
    _component_specs: dict[str, tuple[str, list[str]]] = field(init=False, default_factory=dict)
    _starts: int = field(init=False, default=0)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------ processes

    def start(self) -> None:
        self.pki = make_pki(self.base / "pki")
        self.port = free_port()
        self.etcd_url = f"http://127.0.0.1:{free_port()}"
        self._start_etcd()
        self.kubeconfig = self.kubeconfig_for("kubernetes-admin", ["system:masters"], self.base / "admin.kubeconfig")
        # kubeadm's apiserver-kubelet-client: how the API server authenticates to kubelets (node proxy, logs)
        kubelet_cert, kubelet_key = self.pki.client("kube-apiserver-kubelet-client", ["system:masters"])
        (self.base / "pki" / "apiserver-kubelet-client.crt").write_bytes(kubelet_cert)
        (self.base / "pki" / "apiserver-kubelet-client.key").write_bytes(kubelet_key)
        admin_cert, admin_key = self.pki.client("kubernetes-admin", ["system:masters"])
        (self.base / "pki" / "admin.crt").write_bytes(admin_cert)
        (self.base / "pki" / "admin.key").write_bytes(admin_key)
        self.start_apiserver()
        self._seed()
        if self.controller_manager:
            self._start_component("kube-controller-manager", "system:kube-controller-manager", [
                f"--service-account-private-key-file={self.pki.sa_key}", f"--root-ca-file={self.pki.ca_cert}",
                "--use-service-account-credentials=true", f"--service-cluster-ip-range={SERVICE_CIDR}",
                *self.controller_manager_args])
        if self.scheduler:
            self._start_component("kube-scheduler", "system:kube-scheduler", list(self.scheduler_args))

    def _spawn(self, name: str, args: list[str]) -> _Proc:
        log_path = self.base / f"{name}.log"
        log = log_path.open("ab")
        popen = subprocess.Popen([str(self.binary), *args], stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        return _Proc(name, popen, log_path, log)

    def _start_etcd(self) -> None:
        self._etcd = self._spawn("etcd", ["etcd", "--data-dir", str(self.base / "etcd"),
                                          "--listen-client-url", self.etcd_url,
                                          "--listen-peer-url", f"http://127.0.0.1:{free_port()}"])
        deadline = time.monotonic() + READY_TIMEOUT
        while "etcd ready" not in self._etcd.tail():
            if self._etcd.popen.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"etcd did not start ({self._etcd.popen.poll()}):\n{self._etcd.tail()}")
            time.sleep(0.05)

    def apiserver_args(self) -> list[str]:
        p = self.pki
        return [
            "kube-apiserver",
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={self.port}",
            # the `kubernetes` Service's endpoints may not be a loopback address: no reconciler, as
            # upstream's integration test framework runs it
            "--endpoint-reconciler-type=none",
            f"--tls-cert-file={p.serving_cert}", f"--tls-private-key-file={p.serving_key}",
            f"--client-ca-file={p.ca_cert}",
            f"--service-account-key-file={p.sa_pub}", f"--service-account-signing-key-file={p.sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            # a kubelet's view of the cluster: the Node authorizer and NodeRestriction limit a node's
            # credentials to its own objects, as in any kubeadm cluster
            "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true",
            f"--cert-dir={self.base / 'certs'}",
            # as kubeadm sets them: the kubelets' client certificate and the address types it dials
            f"--kubelet-client-certificate={p.directory / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={p.directory / 'apiserver-kubelet-client.key'}",
            "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
            "--profiling=false", "--v=1",
            *self.extra_args,
        ]

    def start_apiserver(self) -> None:
        """Start (or start again) the API server over the running etcd and wait until /readyz answers 200."""
        assert self._apiserver is None or self._apiserver.popen.poll() is not None, "already running"
        self._starts += 1
        began = time.monotonic()
        proc = self._apiserver = self._spawn("kube-apiserver", self.apiserver_args())
        deadline = began + READY_TIMEOUT
        last = ""
        while True:
            if proc.popen.poll() is not None:
                raise AssertionError(f"kube-apiserver exited with {proc.popen.returncode}:\n{proc.tail()}")
            try:
                if self.get("/readyz", raw=True) == "ok":
                    break
            except (OSError, urllib.error.URLError) as err:
                last = str(err)
            if time.monotonic() > deadline:
                raise AssertionError(f"kube-apiserver not ready within {READY_TIMEOUT:.0f}s ({last}):\n{proc.tail()}")
            time.sleep(0.1)
        self.startup_seconds = time.monotonic() - began
        for role, proc in list(self._components.items()):
            if proc.popen.poll() is not None:
                # the kubelet restarts a control-plane static pod that gave up while the API server was away
                proc.stop()
                self._start_component(role, *self._component_specs[role])

    def _start_component(self, role: str, user: str, args: list[str]) -> None:
        """Start an upstream control-plane component with its own identity (as kubeadm's kubeconfigs) and wait
        until its /healthz answers ok, as kubeadm's static-pod probes do.

        No leader election: a component that cannot renew its lease exits, and one that could not would
        leave its successor waiting out the lease after a restart.
        """
        cfg = self.kubeconfig_for(user)
        port = free_port()
        self._component_specs[role] = (user, args)
        proc = self._components[role] = self._spawn(role, [
            role, f"--kubeconfig={cfg}", f"--authentication-kubeconfig={cfg}", f"--authorization-kubeconfig={cfg}",
            "--bind-address=127.0.0.1", f"--secure-port={port}", "--leader-elect=false", "--v=1", *args])
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE  # its own self-signed certificate
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if proc.popen.poll() is not None:
                raise AssertionError(f"{role} exited with {proc.popen.returncode}:\n{proc.tail()}")
            url = f"https://127.0.0.1:{port}/healthz"
            with contextlib.suppress(OSError, urllib.error.URLError), \
                    urllib.request.urlopen(url, context=insecure, timeout=5) as answer:
                if answer.read() == b"ok":
                    return
            if time.monotonic() > deadline:
                raise AssertionError(f"{role} not healthy within {READY_TIMEOUT:.0f}s:\n{proc.tail()}")
            time.sleep(0.2)

    def stop_apiserver(self) -> None:
        if self._apiserver is not None:
            self._apiserver.stop()

    def stop(self) -> None:
        for proc in reversed(self._components.values()):
            with contextlib.suppress(Exception):
                proc.stop()
        with contextlib.suppress(Exception):
            self.stop_apiserver()
        if self._etcd is not None:
            self._etcd.stop()

    def _seed(self) -> None:
        """What kube-controller-manager would have made by now, which pods in `default` need at admission and
        at the node: the ServiceAccount `default` (the ServiceAccount admission plugin refuses pods without it)
        and the ConfigMap kube-root-ca.crt their projected token volume names."""
        self.post("/api/v1/namespaces/default/serviceaccounts",
                  {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        self.post("/api/v1/namespaces/default/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt"},
            "data": {"ca.crt": self.pki.ca_cert.read_text()}})

    # ------------------------------------------------------------------ clients

    def kubeconfig_for(self, user: str, groups: Sequence[str] = (), path: Path | None = None) -> Path:
        """A kubeconfig authenticating as `user` in `groups` (client certificate signed by the cluster CA)."""
        path = path or self.base / f"{user.replace(':', '_')}.kubeconfig"
        return write_kubeconfig(path, kubeconfig(self.url, self.pki, user, groups))

    def node_kubeconfig(self, node: str) -> Path:
        """A kubelet's credentials for `node`: system:node:<node> in system:nodes."""
        return self.kubeconfig_for(f"system:node:{node}", ["system:nodes"])

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60,
                kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
        tool = shutil.which("kubectl")
        if tool is None:
            pytest.skip("kubectl is not installed")
        out = subprocess.run([tool, "--kubeconfig", str(kubeconfig or self.kubeconfig), *args],
                             capture_output=True, text=True, timeout=timeout, input=input,
                             env={**os.environ, "KUBECTL_KUBERC": "false"})
        if check and out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({out.returncode}): {out.stderr}{out.stdout}")
        return out

    def _ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        ctx.load_cert_chain(self.base / "pki" / "admin.crt", self.base / "pki" / "admin.key")
        return ctx

    def _request(self, method: str, path: str, body: Mapping[str, Any] | None = None,
                 content_type: str = "application/json") -> bytes:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Accept": "application/json", "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, context=self._ssl(), timeout=10) as resp:
                return bytes(resp.read())
        except urllib.error.HTTPError as err:
            raise detached(err) from None  # polled 404s must not keep their TLS sockets open

    def get(self, path: str, *, raw: bool = False) -> Any:
        """GET `path` as the admin; JSON-decoded unless raw. A 404 raises urllib.error.HTTPError."""
        text = self._request("GET", path)
        return text.decode() if raw else json.loads(text)

    def post(self, path: str, obj: Mapping[str, Any]) -> Any:
        return json.loads(self._request("POST", path, obj))

    def merge_patch(self, path: str, patch: Mapping[str, Any]) -> Any:
        """PATCH `path` (a status subresource too) with a JSON merge patch, as the admin."""
        return json.loads(self._request("PATCH", path, patch, "application/merge-patch+json"))


@contextlib.contextmanager
def running_kube_apiserver(binary: Path, base: Path | None = None, extra_args: Sequence[str] = (), *,
                           scheduler: bool = False, controller_manager: bool = False,
                           scheduler_args: Sequence[str] = (),
                           controller_manager_args: Sequence[str] = ()) -> Iterator[KubeAPIServer]:
    """etcd + kube-apiserver (+ kube-scheduler, kube-controller-manager) under `base` (a fresh short temp dir
    by default), stopped and removed on exit."""
    owned = base is None
    base = base or Path(tempfile.mkdtemp(prefix="na-kas-", dir="/tmp"))
    server = KubeAPIServer(binary, base, extra_args, scheduler=scheduler, controller_manager=controller_manager,
                           scheduler_args=scheduler_args, controller_manager_args=controller_manager_args)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        if owned:
            shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def kube_apiserver_binary() -> Path:
    return fixture_binary()


@pytest.fixture(scope="session")
def kube_apiserver(kube_apiserver_binary: Path) -> Iterator[KubeAPIServer]:
    """One real control plane for the session (etcd, kube-apiserver, kube-scheduler, kube-controller-manager);
    tests use unique object names."""
    with running_kube_apiserver(kube_apiserver_binary, scheduler=True, controller_manager=True) as server:
        yield server


def main() -> int:
    """`make kube-binaries`: build (or find cached) the multi-role binary and print its path on stdout.

    The binary controlPlane.kubernetes.binary names (roles etcd, kube-apiserver, kube-scheduler,
    kube-controller-manager, kubelet): the same cached build the kube-apiserver tier uses, so one cold
    build serves both. A missing `go` or module proxy is said on stderr, exit 1.
    """
    import sys

    started = time.monotonic()
    try:
        path = gotools.build_cached(MODULE, BINARY, timeout=BUILD_TIMEOUT,
                                    ldflags=version_ldflags(kubernetes_version()))
    except pytest.skip.Exception as why:  # gotools says why it cannot build (no go, no proxy, CI deadline)
        print(f"kube-binaries: cannot build {BINARY}: {why}", file=sys.stderr)
        return 1
    print(f"kube-binaries: {BINARY} {kubernetes_version()} ready in {time.monotonic() - started:.1f}s "
          "(a cold build takes about 21 CPU-minutes, 43 min on two busy cores; cached afterwards)", file=sys.stderr)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
