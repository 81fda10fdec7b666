"""Start-up hardening of what the daemon owns: warn about exposure, tighten folders, refuse links.

Why: the sockets and state files have no access control but the file system's, so the
daemon makes sure of it before using them (the kubelet likewise creates its root dir 0750):

- metricsBindAddress on every interface (`0.0.0.0:P`, `:P`, `[::]:P`) is allowed, as the
  kubelet serves on all interfaces by default, but logged as a warning naming the field:
  /metrics, /configz and /stats/summary answer anyone who reaches the port;
- the API server on every interface (bindAddress 0.0.0.0 or ::), or with anonymous requests
  allowed, is warned about the same way;
- the kubelet endpoint with anonymous requests on and authorization AlwaysAllow, off loopback, is
  warned about the same way: it then answers anyone who reaches it, as the kubelet would;
- an existing rootDir wider than 0750 or stateDir wider than 0700 is tightened (bits are only
  ever removed), with a log line; a shared sticky folder such as /tmp is left alone, with a
  warning, since narrowing it would break every other user of the host;
- a state file that is a symlink (state.db, objects.db and their WAL/SHM/journal, the
  simulated cgroup tree, the API server's folder, the kubeconfig) is refused with a
  StartupError naming it: following it would read or write outside the state dir. The check
  runs after the tightening, so from then on only the owner could plant one.

Must not: create anything (the owners of each file create it), or touch paths outside
rootDir and stateDir.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from nodeagent.config import Config
from nodeagent.errors import ConfigError, StartupError
from nodeagent.kubeletserver.options import server_options

logger = logging.getLogger(__name__)

ROOT_DIR_MODE = 0o750
STATE_DIR_MODE = 0o700
_ALL_INTERFACES = ("", "0.0.0.0", "::", "[::]")
_SQLITE_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def exposure_warnings(cfg: Config) -> list[str]:
    """Texts to log as warnings about what the configuration exposes beyond this host."""
    out = []
    addr = cfg.agent.metrics_bind_address
    host = addr.rpartition(":")[0]
    if host in _ALL_INTERFACES:
        out.append(
            f'NodeAgentConfiguration.metricsBindAddress: "{addr}" serves /metrics, /configz and '
            "/stats/summary on every interface without authentication; bind 127.0.0.1 unless "
            "other hosts must scrape them"
        )
    out.extend(api_server_warnings(cfg))
    try:
        server = server_options(cfg.kubelet.raw)
    except ConfigError:
        return out  # the start refuses it with the field's name
    if server.enabled and server.anonymous and server.authorization_mode == "AlwaysAllow" \
            and server.address not in ("127.0.0.1", "::1", "localhost"):
        where = server.address or "the node's InternalIPs"
        out.append(
            "KubeletConfiguration.authentication.anonymous.enabled: true with authorization.mode AlwaysAllow: "
            f"the kubelet endpoint on {where} answers anyone who reaches it (/pods, /configz, /containerLogs); "
            "set address: 127.0.0.1 unless other hosts must reach it"
        )
    return out


def api_server_warnings(cfg: Config) -> list[str]:
    """The embedded API server's exposure: a wildcard bindAddress, anonymous requests allowed."""
    if cfg.agent.cluster.kubeconfig is not None:
        return []  # a node that joins a cluster serves no API of its own
    api = cfg.agent.control_plane.api_server
    if not api.bind_address:
        return []
    out = []
    field = "NodeAgentConfiguration.controlPlane.apiServer"
    host = api.bind_address.rpartition(":")[0].strip("[]")
    if host in ("0.0.0.0", "::"):
        out.append(f'{field}.bindAddress: "{api.bind_address}" serves the Kubernetes API on every interface of this '
                   "host (its serving certificate names each address the host has at start); bind one address "
                   "unless other hosts must reach it")
    if api.anonymous:
        out.append(f"{field}.anonymous: true: every request without a credential is served as system:anonymous "
                   "(group system:unauthenticated), as kube-apiserver's --anonymous-auth does, and may do whatever "
                   "authorization allows that identity; any local user of this host can send such requests")
    return out


def tighten_dir(path: Path, mode: int, field: str) -> None:
    """Remove the permission bits of an existing folder that `mode` does not allow, with a log line."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        return
    current = stat.S_IMODE(st.st_mode)
    extra = current & 0o777 & ~mode
    if not extra:
        return
    if current & stat.S_ISVTX:
        logger.warning("%s is a shared folder (sticky bit), left at mode %04o path=%s", field, current, path)
        return
    try:
        os.chmod(path, current & ~extra)
    except OSError as err:
        logger.warning("%s mode %04o is wider than %04o and cannot be tightened path=%s err=%s",
                       field, current, mode, path, err.strerror)
        return
    logger.warning("%s mode tightened from %04o to %04o path=%s", field, current, current & ~extra, path)


def state_files(cfg: Config) -> list[Path]:
    """The files and folders the daemon opens under stateDir, by their fixed names."""
    files = [Path(f"{db}{suffix}") for db in (cfg.state_db, cfg.objects_db) for suffix in _SQLITE_SIDE_FILES]
    return [*files, cfg.cgroup_sim_root, cfg.apiserver_dir, cfg.agent.state_dir / "kubeconfig"]


def refuse_symlinked_state(cfg: Config, files: Sequence[Path] | None = None) -> None:
    """StartupError naming the first state file that is a symlink (of `files`: default, state_files)."""
    for path in state_files(cfg) if files is None else files:
        if path.is_symlink():
            raise StartupError(
                f"{path}: is a symlink; state files are never followed out of the state dir "
                "(remove the link; the daemon creates the file itself)"
            )


def harden(cfg: Config) -> None:
    """All of the above, in order: warnings, folder modes, then the symlink refusal."""
    for text in exposure_warnings(cfg):
        logger.warning("%s", text)
    tighten_dir(cfg.agent.root_dir, ROOT_DIR_MODE, "rootDir")
    tighten_dir(cfg.agent.state_dir, STATE_DIR_MODE, "stateDir")
    refuse_symlinked_state(cfg)
