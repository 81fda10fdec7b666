"""Start the real `nodeagent run` as a subprocess against a throwaway root and state dir."""

from __future__ import annotations

import base64
import io
import itertools
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nodeagent.realcp.supervise import die_with_parent
from tests.waiting import eventually_blocking

BIN = Path(sys.executable).parent


_PORT_SLICE = 1500
_PORT_BASE = 20000
# from an offset of this process's own, so two pytest runs side by side (not xdist workers of one run)
# do not walk the same slice in step and hand out the same port
_next_port = itertools.count(os.getpid() % _PORT_SLICE)


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, for a daemon to bind a moment later.

    Taken below the kernel's ephemeral range (32768-60999 by default), so no outgoing connection of a test
    running beside this one (an xdist worker's kubectl, say) takes it in between, and from a slice of its own
    per xdist worker, so two workers never hand out the same port. Where the ephemeral range leaves no room
    below it, the kernel picks (port 0), as before."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    base = _PORT_BASE + (worker % 8) * _PORT_SLICE
    if base + _PORT_SLICE <= _ephemeral_low():
        for _ in range(_PORT_SLICE):
            port = base + next(_next_port) % _PORT_SLICE
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def grpcurl() -> str | None:
    path = BIN / "grpcurl"
    if path.exists():
        return str(path)
    return shutil.which("grpcurl")


@dataclass
class Daemon:
    base: Path
    config: Path
    proc: subprocess.Popen[bytes]
    metrics_port: int

    @property
    def root(self) -> Path:
        return self.base / "root"

    @property
    def admin(self) -> Path:
        return self.base / "admin.sock"

    @property
    def pod_resources(self) -> Path:
        return self.root / "pod-resources" / "kubelet.sock"

    @property
    def kubelet_sock(self) -> Path:
        return self.root / "device-plugins" / "kubelet.sock"

    @property
    def kubeconfig(self) -> Path:
        """The kubeconfig the daemon writes for its Kubernetes API (STATE_DIR/kubeconfig)."""
        return self.base / "state" / "kubeconfig"

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60,
                env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """The installed kubectl against the daemon's API, with its kubeconfig."""
        tool = shutil.which("kubectl")
        assert tool, "kubectl not installed"
        out = subprocess.run(
            [tool, "--kubeconfig", str(self.kubeconfig), *args],
            capture_output=True, text=True, timeout=timeout, input=input,
            env={**os.environ, "KUBECTL_KUBERC": "false", **(env or {})},
        )
        if check and out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({out.returncode}): {out.stderr}{out.stdout}")
        return out

    def cli(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(
            [sys.executable, "-m", "nodeagent.cli", *args, "--admin-socket", str(self.admin)],
            capture_output=True, text=True, timeout=30, input=input,
        )
        if check and out.returncode != 0:
            raise AssertionError(f"nodeagent {' '.join(args)} failed ({out.returncode}): {out.stderr}")
        return out

    def kubectl_json(self, *args: str) -> Any:
        """`kubectl ARGS -o json`, parsed: `d.kubectl_json("get", "pod", "x")` (a list is a v1 List)."""
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def api_get(self, path: str) -> Any:
        """GET one path of the daemon's Kubernetes API (`/api/v1/namespaces/default/pods/x`) over HTTPS
        with the kubeconfig's CA and token, without a process start: for readers polled against a clock.
        A 404 raises urllib.error.HTTPError."""
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
        ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        req = urllib.request.Request(cluster["server"] + path, headers={
            "Authorization": f"Bearer {user['token']}", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raise detached(err) from None

    def grpcurl(
        self, socket_path: Path, *args: str, data: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """grpcurl against a socket; its JSON output uses the proto field names (pod_resources)."""
        tool = grpcurl()
        assert tool, "grpcurl not installed"
        flags = ["-d", data] if data is not None else []
        return subprocess.run(
            [tool, "-plaintext", *flags, "-unix", str(socket_path), *args],
            capture_output=True, text=True, timeout=30,
        )

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)


def write_config(base: Path, kubelet: Mapping[str, Any], agent: Mapping[str, Any], port: int) -> Path:
    agent_doc = {
        "apiVersion": "nodeagent.dev/v1alpha1",
        "kind": "NodeAgentConfiguration",
        "nodeName": "test-node",
        "rootDir": str(base / "root"),
        "stateDir": str(base / "state"),
        "adminSocket": str(base / "admin.sock"),
        "metricsBindAddress": f"127.0.0.1:{port}",
        "nodeProfile": {
            "capacity": {"cpu": "8", "memory": "32Gi", "ephemeral-storage": "100Gi"},
            "numaNodes": [
                {"id": 0, "cpus": "0-3", "memory": "16Gi"},
                {"id": 1, "cpus": "4-7", "memory": "16Gi"},
            ],
        },
        **agent,
    }
    # every daemon of the suite serves the Kubernetes API on a free port, never 6443
    cp = agent_doc.setdefault("controlPlane", {})
    cp.setdefault("apiServer", {"bindAddress": "127.0.0.1:0"})
    # and its kubelet endpoint on a free port (port 0, nodeagent's word for it), never 10250
    kubelet_doc = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "port": 0,
                   **kubelet}
    path = base / "config.yaml"
    path.write_text(yaml.safe_dump_all([kubelet_doc, agent_doc]))
    return path


def _serves_api(cfg: Path) -> bool:
    agent = list(yaml.safe_load_all(cfg.read_text()))[1]
    return bool(((agent.get("controlPlane") or {}).get("apiServer") or {}).get("bindAddress", "x"))


def connectable(path: Path) -> bool:
    """True once something accepts on the unix socket (a stale file left by SIGKILL does not)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def detached(err: urllib.error.HTTPError) -> urllib.error.HTTPError:
    """`err` with its body read into memory and its connection closed. An HTTPError holds the response, so
    the TLS socket, until closed; one that a poll (`wait_for`) swallows is otherwise closed only by the garbage
    collector, which then warns (ResourceWarning: unclosed ssl.SSLSocket) at some later, unrelated line."""
    with err:
        body = err.read()
    return urllib.error.HTTPError(err.filename, err.code, err.msg, err.hdrs, io.BytesIO(body))


def wait_for(predicate: Any, timeout: float = 15.0, what: str = "condition") -> Any:
    """tests.waiting.eventually_blocking, with an exception from `predicate` counting as not yet."""
    return eventually_blocking(predicate, timeout=timeout, what=what, ignore=(Exception,))


@contextmanager
def running_daemon(
    base: Path,
    kubelet: Mapping[str, Any] | None = None,
    agent: Mapping[str, Any] | None = None,
    extra_args: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[Daemon]:
    port = free_port()
    cfg = write_config(base, kubelet or {}, agent or {}, port)
    log = open(base / "daemon.log", "wb")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(
        [sys.executable, "-m", "nodeagent.cli", "run", "--config", str(cfg), *extra_args],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
        preexec_fn=die_with_parent,  # a crashed xdist worker (INTERNALERROR) left its daemons running for ever
    )
    d = Daemon(base=base, config=cfg, proc=proc, metrics_port=port)
    try:
        wait_for(lambda: (connectable(d.admin) and connectable(d.pod_resources)) or proc.poll() is not None,
                 timeout=30, what="daemon sockets")
        if proc.poll() is None and _serves_api(cfg):
            wait_for(lambda: d.kubeconfig.exists() or proc.poll() is not None, timeout=30, what="kubeconfig")
        if proc.poll() is not None:
            raise AssertionError(f"daemon exited early: {(base / 'daemon.log').read_text()}")
        yield d
    finally:
        d.stop()
        log.close()


@contextmanager
def daemon_in_temp_dir(
    prefix: str,
    kubelet: Mapping[str, Any] | None = None,
    agent: Mapping[str, Any] | None = None,
) -> Iterator[Daemon]:
    """running_daemon in a fresh short directory under /tmp, removed afterwards: for module and
    session fixtures, which cannot use the per-test short_dir."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        with running_daemon(base, kubelet, agent) as d:
            yield d
    finally:
        shutil.rmtree(base, ignore_errors=True)


def virtual_node_agent(node: str, control_plane: Mapping[str, Any]) -> dict[str, Any]:
    """Agent config: one virtual node (8 cpus, 32Gi, 20 pods, labelled with its hostname) and the
    control plane serving its API on a free port, plus the given controlPlane settings."""
    return {"virtualNodes": [{"name": node, "labels": {"kubernetes.io/hostname": node},
                              "capacity": {"cpu": "8", "memory": "32Gi", "pods": "20"}}],
            "controlPlane": {"apiServer": {"bindAddress": "127.0.0.1:0"}, **control_plane}}


def child_pids(parent: int) -> list[int]:
    """The live (not zombie) child processes of `parent` (a daemon's plugins), from /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == parent and fields[0] != "Z":
            out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
