"""What the real kubelet needs on this machine besides itself: containerd and runc (Debian packages,
pinned), a pause image made here (no registry), a CNI plugin of the tier's own, and the host checks
that decide whether the tier can run at all.

Every function returns a reason string instead of raising when the machine cannot run the tier, so
the tier skips with that reason (not root, no Go, no Debian containerd package...).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The Debian bookworm packages the tier was written against (apt pins them; a newer point release of
# the same series would do too, but the pin keeps CI's runtime what the divergence register describes).
PACKAGES = {"containerd": "1.6.20~ds1-1+deb12u3", "runc": "1.1.5+ds1-1+deb12u1"}
BUILD_PACKAGES = ("gcc", "libc6-dev")
PAUSE_IMAGE = "localhost/ktier/pause:1"
POD_SUBNET = "10.253.0.0/24"


def _missing(tools: tuple[str, ...]) -> list[str]:
    return [t for t in tools if shutil.which(t) is None and not Path("/usr/sbin", t).exists()]


def _apt_install(names: list[str]) -> str | None:
    """Install Debian packages (apt-get update first); a reason string when that is impossible."""
    if shutil.which("apt-get") is None:
        return f"{', '.join(names)} not installed and no apt-get to install them"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    update = subprocess.run(["apt-get", "update", "-q"], capture_output=True, text=True, env=env, timeout=600)
    if update.returncode != 0:
        return f"apt-get update failed: {update.stderr.strip()[-300:]}"
    out = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *names],
                         capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        return f"apt-get install {' '.join(names)} failed: {out.stderr.strip()[-300:]}"
    return None


def ensure_packages() -> str | None:
    """containerd, runc, ctr, nsenter, ip and a C compiler for the pause binary; installed when missing."""
    wanted = []
    if _missing(("containerd", "ctr", "containerd-shim-runc-v2")):
        wanted.append(f"containerd={PACKAGES['containerd']}")
    if _missing(("runc",)):
        wanted.append(f"runc={PACKAGES['runc']}")
    if _missing(("gcc",)) or not Path("/usr/include/stdlib.h").exists():
        wanted += BUILD_PACKAGES
    if wanted and (reason := _apt_install(wanted)) is not None:
        return reason
    if missing := _missing(("containerd", "ctr", "runc", "gcc", "nsenter", "ip", "unshare")):
        return f"missing after install: {', '.join(missing)}"
    return None


def host_reason() -> str | None:
    """Why this host cannot run the real kubelet, or None."""
    if sys.platform != "linux":
        return "the real kubelet tier needs Linux"
    if os.geteuid() != 0:
        return "the real kubelet tier needs root (containerd, runc, mount and network namespaces, cgroups)"
    if not Path("/sys/fs/cgroup").is_dir():
        return "no cgroup filesystem at /sys/fs/cgroup"
    probe = subprocess.run(["unshare", "-m", "-n", "--propagation", "private", "true"], capture_output=True,
                           text=True)
    if probe.returncode != 0:
        return f"cannot create mount and network namespaces: {probe.stderr.strip()}"
    return None


def _tar_bytes(members: list[tuple[str, bytes, int]]) -> bytes:
    """A reproducible tar (fixed mtimes and owners) of (name, data, mode)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _blob(blobs: list[tuple[str, bytes, int]], data: bytes) -> dict[str, object]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs.append((f"blobs/sha256/{digest.split(':')[1]}", data, 0o644))
    return {"digest": digest, "size": len(data)}


def build_pause_image(work: Path) -> Path:
    """Compile pause.c statically and pack it as a one-layer OCI image archive (the only image of the tier:
    the sandbox of every pod and every container, told by its arguments what to do)."""
    work.mkdir(parents=True, exist_ok=True)
    binary = work / "pause"
    subprocess.run(["gcc", "-static", "-Os", "-o", str(binary), str(HERE / "pause.c")], check=True,
                   capture_output=True, text=True)
    layer = _tar_bytes([("pause", binary.read_bytes(), 0o755)])
    blobs: list[tuple[str, bytes, int]] = []
    layer_desc = {"mediaType": "application/vnd.oci.image.layer.v1.tar", **_blob(blobs, layer)}
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": ["/pause"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
    }, sort_keys=True).encode()
    config_desc = {"mediaType": "application/vnd.oci.image.config.v1+json", **_blob(blobs, config)}
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": config_desc, "layers": [layer_desc]}, sort_keys=True).encode()
    manifest_desc = {"mediaType": "application/vnd.oci.image.manifest.v1+json", **_blob(blobs, manifest),
                     "annotations": {"io.containerd.image.name": PAUSE_IMAGE,
                                     "org.opencontainers.image.ref.name": PAUSE_IMAGE.rsplit(":", 1)[1]}}
    index = json.dumps({"schemaVersion": 2, "manifests": [manifest_desc]}).encode()
    archive = work / "pause.oci.tar"
    archive.write_bytes(_tar_bytes([("oci-layout", b'{"imageLayoutVersion":"1.0.0"}', 0o644),
                                    ("index.json", index, 0o644), *blobs]))
    return archive


def install_cni(base: Path, python: str) -> tuple[Path, Path]:
    """The CNI bin and conf folders for containerd: `loopback` and `ktier` (both cni.py) and one network."""
    bin_dir, conf_dir = base / "cni" / "bin", base / "cni" / "net.d"
    bin_dir.mkdir(parents=True, exist_ok=True)
    conf_dir.mkdir(parents=True, exist_ok=True)
    for name in ("loopback", "ktier"):
        exe = bin_dir / name
        exe.write_text(f"#!/bin/sh\nexec {python} {HERE / 'cni.py'} \"$@\"\n")
        exe.chmod(0o755)
    (conf_dir / "10-ktier.conflist").write_text(json.dumps({
        "cniVersion": "1.0.0", "name": "ktier",
        "plugins": [{"type": "ktier", "subnet": POD_SUBNET, "dataDir": str(base / "cni" / "leases")}],
    }, indent=1))
    return bin_dir, conf_dir


def containerd_config(base: Path, bin_dir: Path, conf_dir: Path) -> Path:
    """containerd 1.6's configuration: its own root and state (inside the node's mount namespace), the
    native snapshotter (no overlay needed), cgroupfs, no plugin that writes outside (`opt` would create
    /opt/containerd), restrict_oom_score_adj because root may lack CAP_SYS_RESOURCE here."""
    path = base / "containerd.toml"
    path.write_text(f"""version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{bin_dir}"
    conf_dir = "{conf_dir}"
""")
    return path
