"""`nodeagent kubeconfig --node NAME`: a kubeconfig holding a node's own credential, for a node process.

Why: a node that joins the embedded API server from another process (`cluster.kubeconfig`) should
talk as `system:node:NAME` in `system:nodes`, the identity the Node authorizer and NodeRestriction
confine, not with the administrator's token. The control plane's host issues it from the CA in its
state dir (STATE_DIR/apiserver), for the server and CA named in the kubeconfig the daemon wrote at
its last start, as kubeadm issues a kubelet's client certificate (nodeagent has no TLS bootstrap).
"""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import yaml

from nodeagent.apiserver import certs
from nodeagent.apiserver.authn import identities
from nodeagent.config import Config
from nodeagent.errors import ConfigError


def node_kubeconfig(cfg: Config, node: str, *, now: float | None = None) -> dict[str, Any]:
    """A kubeconfig of the daemon's API server (as its own kubeconfig names it) for node `node`."""
    if not node:
        raise ConfigError("--node: a node name is required")
    admin = cfg.kubeconfig_path
    try:
        doc = yaml.safe_load(admin.read_text())
        cluster = doc["clusters"][0]["cluster"]
        server = str(cluster["server"])
        ca_pem = base64.b64decode(cluster["certificate-authority-data"])
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError, ValueError) as err:
        raise ConfigError(f"{admin}: not the kubeconfig a running API server writes ({err}): start the daemon "
                          "with its API server once first") from None
    user = identities.node_user(node)
    try:
        cert_pem, key_pem = certs.issue_client_cert(cfg.apiserver_dir, user=user.name, groups=user.groups,
                                                    clock_now=time.time() if now is None else now)
    except (FileNotFoundError, PermissionError) as err:
        raise ConfigError(f"{cfg.apiserver_dir}: cannot issue a certificate: {err}") from None
    return certs.client_kubeconfig(server, ca_pem, cert_pem, key_pem, user=user.name)


def write(cfg: Config, node: str, output: Path | None) -> str:
    """Write the node's kubeconfig to `output` (0600), or return it as YAML text when None."""
    config = node_kubeconfig(cfg, node)
    if output is None:
        return yaml.safe_dump(config, sort_keys=False)
    certs.write_kubeconfig(output, config)
    return ""
