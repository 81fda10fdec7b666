"""The real kubelet's node: containerd, runc and the upstream kubelet (the fixture's `kubelet` role)
in a mount and network namespace of their own, so that nothing on the host changes and a failed run
leaves nothing behind.

Layout. A holder process (`unshare -m -n --propagation private`) mounts tmpfs over /var/lib, /var/log
and /run inside its namespace, binds the node's own folders over /var/lib/kubelet and /var/log/pods
(so the tier reads the kubelet's sockets and checkpoint files from the host side, under `base`), brings
up loopback, starts containerd and imports the pause image. The kubelet runs in those namespaces
through nsenter, so it can be stopped and started again (a node restart) while containerd stays.
The kubelet's device-plugin folder is the compile-time /var/lib/kubelet/device-plugins: the bind
makes it this node's `root/device-plugins`.

Network. `--node-ip` must not be loopback: a veth pair joins the namespace (10.254.0.2, the node's
InternalIP) to the host (10.254.0.1), where the API server listens; the kubelet's kubeconfig names
the API server by that address and checks its certificate against the name `kubernetes`. The pair goes
away with the namespace.

Cleanup. Every process of the node (holder, containerd, shims, kubelet) runs in one cgroup subtree,
`na-ktier-<id>` in every v1 hierarchy, which is also the kubelet's --cgroup-root (its pods and their
containers land below it). Stopping kills whatever is left in that subtree and removes it; a run that
died without cleaning up is swept by the next (sweep_leftovers). The kubelet sets vm.overcommit_memory,
vm.panic_on_oom, kernel.panic, kernel.panic_on_oops and kernel.keys.*: they are saved before it starts
and restored when the node stops (and by the next run's sweep, from the file saved beside).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

CGROUP_FS = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "na-ktier-"
SYSCTLS = ("vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
           "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes")
SYSCTL_SAVE = Path("/tmp/na-ktier-sysctls.json")
HOST_IP, NODE_IP = "10.254.0.1", "10.254.0.2"
CONTAINERD_SOCK = "unix:///run/containerd/containerd.sock"

HOLDER_SCRIPT = r"""
set -eu
BASE=$1
for f in $CGROUP_PROCS; do echo $$ > "$f"; done
mount -t tmpfs -o mode=755 tmpfs /var/lib
mount -t tmpfs -o mode=755 tmpfs /var/log
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /var/lib/kubelet /var/lib/containerd /var/log/pods /var/log/containers /run/containerd
mount --bind "$BASE/kubelet" /var/lib/kubelet
mount --bind "$BASE/pods-log" /var/log/pods
ip link set lo up
containerd --config "$BASE/containerd.toml" > "$BASE/containerd.log" 2>&1 &
i=0
while ! ctr version > /dev/null 2>&1; do
  sleep 0.1; i=$((i+1)); [ $i -lt 300 ] || { echo "containerd did not start" >&2; exit 3; }
done
ctr -n k8s.io images import "$BASE/pause.oci.tar" > /dev/null
touch "$BASE/runtime-ready"
wait
"""


def rooted(kubelet_config: dict[str, Any], root: str) -> dict[str, Any]:
    """The scenario's KubeletConfiguration with "{root}" (in staticPodPath) as this node's root folder:
    the same document on both nodes but for where each keeps its files."""
    path = kubelet_config.get("staticPodPath")
    if not isinstance(path, str) or "{root}" not in path:
        return kubelet_config
    return {**kubelet_config, "staticPodPath": path.replace("{root}", root)}


def _hierarchies() -> list[Path]:
    """The mounted cgroup v1 hierarchies this process belongs to (named ones too), by their folder."""
    out = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, _ = line.split(":", 2)
        if not controllers:
            continue  # the unified hierarchy: runc on a v1 host does not use it
        name = controllers.split(",")[0].removeprefix("name=")
        path = CGROUP_FS / name
        if path.is_dir():
            out.append(path)
    return out


def _procs(tree: Path) -> list[int]:
    pids = []
    for procs in tree.rglob("cgroup.procs"):
        with contextlib.suppress(OSError, ValueError):
            pids += [int(p) for p in procs.read_text().split()]
    return pids


def _remove_tree(tree: Path, timeout: float = 30.0) -> None:
    """Kill every process in `tree` (all hierarchies) and remove its cgroups, deepest first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = _procs(tree)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    for _ in range(50):
        dirs = sorted((p for p in tree.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
        for d in [*dirs, tree]:
            with contextlib.suppress(OSError):
                d.rmdir()
        if not tree.exists():
            return
        time.sleep(0.1)


def _all_hierarchies() -> list[Path]:
    """Every mounted cgroup hierarchy folder, the unified one too (runc and the kubelet write there on a
    hybrid host, though this process's membership there is not ours to move)."""
    return [p for p in CGROUP_FS.iterdir() if p.is_dir() and not p.is_symlink()]


def sweep_leftovers() -> None:
    """What a run killed before its cleanup left: its cgroup subtrees (and their processes) and sysctls."""
    for hierarchy in _all_hierarchies():
        for tree in hierarchy.glob(f"{CGROUP_PREFIX}*"):
            _remove_tree(tree)
    if SYSCTL_SAVE.exists():
        _restore_sysctls(json.loads(SYSCTL_SAVE.read_text()))
        SYSCTL_SAVE.unlink()


def _sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def _restore_sysctls(saved: dict[str, str]) -> None:
    for name, value in saved.items():
        with contextlib.suppress(OSError):
            _sysctl_path(name).write_text(value)


@dataclass
class RealKubeletNode:
    """One real kubelet (+ containerd) in namespaces of its own; paths are host paths under `base`."""

    name: str
    base: Path
    binary: Path
    kubeconfig: Path
    kubelet_flags: list[str] = field(default_factory=list)
    cgroup: str = field(init=False)
    holder: subprocess.Popen[bytes] | None = field(init=False, default=None)
    kubelet: subprocess.Popen[bytes] | None = field(init=False, default=None)
    veth: str = field(init=False)
    _logs: list[IO[bytes]] = field(init=False, default_factory=list)
    kubelet_starts: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        token = secrets.token_hex(3)
        self.cgroup = f"{CGROUP_PREFIX}{token}"
        self.veth = f"kt-{token}"

    @property
    def root(self) -> Path:
        """The kubelet's /var/lib/kubelet, seen from the host."""
        return self.base / "kubelet"

    @property
    def kubelet_log(self) -> Path:
        return self.base / "kubelet.log"

    def _cgroup_dirs(self, leaf: str) -> list[Path]:
        dirs = []
        for hierarchy in _hierarchies():
            top = hierarchy / self.cgroup
            for d in (top, top / leaf):
                d.mkdir(exist_ok=True)
                if hierarchy.name == "cpuset":  # a new v1 cpuset is empty until given its parent's sets
                    for f in ("cpuset.cpus", "cpuset.mems"):
                        (d / f).write_text((d.parent / f).read_text())
            dirs.append(top / leaf)
        return dirs

    def start_runtime(self, archive: Path, containerd_config: Path) -> None:
        """The holder, its namespaces, containerd with the pause image, and the veth to the host."""
        for sub in ("kubelet", "pods-log"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        (self.base / "pause.oci.tar").write_bytes(archive.read_bytes())
        (self.base / "containerd.toml").write_text(containerd_config.read_text())
        procs = " ".join(str(d / "cgroup.procs") for d in self._cgroup_dirs("runtime"))
        saved = {name: _sysctl_path(name).read_text().strip() for name in SYSCTLS}
        if not SYSCTL_SAVE.exists():
            SYSCTL_SAVE.write_text(json.dumps(saved))
        log = (self.base / "holder.log").open("ab")
        self._logs.append(log)
        self.holder = subprocess.Popen(
            ["unshare", "-m", "-n", "--propagation", "private", "sh", "-c", HOLDER_SCRIPT, "holder", str(self.base)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "CGROUP_PROCS": procs})
        deadline = time.monotonic() + 60
        while not (self.base / "runtime-ready").exists():
            if self.holder.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"containerd did not start ({self.holder.poll()}): "
                                     f"{(self.base / 'holder.log').read_text()[-2000:]}"
                                     f"{(self.base / 'containerd.log').read_text()[-3000:]}")
            time.sleep(0.1)
        pid = str(self.holder.pid)
        subprocess.run(["ip", "link", "add", self.veth, "type", "veth", "peer", "name", "eth0", "netns", pid],
                       check=True)
        subprocess.run(["ip", "addr", "add", f"{HOST_IP}/30", "dev", self.veth], check=True)
        subprocess.run(["ip", "link", "set", self.veth, "up"], check=True)
        for args in (["addr", "add", f"{NODE_IP}/30", "dev", "eth0"], ["link", "set", "eth0", "up"],
                     ["route", "add", "default", "via", HOST_IP]):
            subprocess.run(["nsenter", "-t", pid, "-n", "ip", *args], check=True)

    def write_config(self, kubelet_config: dict[str, Any]) -> Path:
        path = self.base / "kubelet-config.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": "kubelet.config.k8s.io/v1beta1",
                                        "kind": "KubeletConfiguration", **rooted(kubelet_config, "/var/lib/kubelet")}))
        return path

    def start_kubelet(self, kubelet_config: dict[str, Any]) -> None:
        """Start (or start again) the kubelet in the node's namespaces."""
        assert self.holder is not None and self.holder.poll() is None, "the runtime is not running"
        assert self.kubelet is None or self.kubelet.poll() is not None, "the kubelet is running"
        config = self.write_config(kubelet_config)
        procs = " ".join(str(d / "cgroup.procs") for d in self._cgroup_dirs("runtime"))
        log = self.kubelet_log.open("ab")
        self._logs.append(log)
        args = [
            "nsenter", "-t", str(self.holder.pid), "-m", "-n", "--", str(self.binary), "kubelet",
            f"--config={config}", f"--kubeconfig={self.kubeconfig}",
            f"--container-runtime-endpoint={CONTAINERD_SOCK}", f"--node-ip={NODE_IP}",
            f"--hostname-override={self.name}", f"--cgroup-root=/{self.cgroup}", "--fail-cgroupv1=false",
            "--v=2", *self.kubelet_flags,
        ]
        script = 'for f in $CGROUP_PROCS; do echo $$ > "$f"; done; exec "$@"'
        self.kubelet = subprocess.Popen(["sh", "-c", script, "kubelet", *args], stdin=subprocess.DEVNULL,
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                        env={**os.environ, "CGROUP_PROCS": procs})
        self.kubelet_starts += 1

    def stop_kubelet(self, sig: int = signal.SIGTERM) -> None:
        if self.kubelet is not None and self.kubelet.poll() is None:
            self.kubelet.send_signal(sig)
            try:
                self.kubelet.wait(20)
            except subprocess.TimeoutExpired:
                self.kubelet.kill()
                self.kubelet.wait(10)

    def kubelet_running(self) -> bool:
        return self.kubelet is not None and self.kubelet.poll() is None

    def stop(self) -> None:
        """Stop everything of the node and leave nothing: processes, cgroups, sysctls, the veth."""
        self.stop_kubelet()
        for hierarchy in _all_hierarchies():
            _remove_tree(hierarchy / self.cgroup)
        if self.holder is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.holder.wait(10)
        subprocess.run(["ip", "link", "del", self.veth], capture_output=True)
        if SYSCTL_SAVE.exists():
            _restore_sysctls(json.loads(SYSCTL_SAVE.read_text()))
            SYSCTL_SAVE.unlink()
        for log in self._logs:
            log.close()
