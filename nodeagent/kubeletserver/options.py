"""The KubeletConfiguration fields of the kubelet's HTTPS server, read with the kubelet's defaults.

Why here and from the document as given (KubeletConfig.raw): the configuration parser accepts
these fields (address, port, tlsCertFile, tlsPrivateKeyFile, authentication, authorization,
enableServer, readOnlyPort) without interpreting them; this module gives them the v1beta1
defaults (pkg/kubelet/apis/config/v1beta1/defaults.go) and the kubelet's validation texts, and
is the only reader. Pure: no I/O.

Intended differences from the kubelet, each for a reason:
- `address` left out binds the node's InternalIPs that are addresses of this host, and 127.0.0.1
  (not when a node IP is itself a loopback address, as several nodes of one machine have; the
  kubelet: 0.0.0.0, every interface): the endpoint is reachable where kube-apiserver's node proxy
  dials (the InternalIP) and from this host, and no wider. A node IP that is not local (allowed:
  fake nodes are told apart by it) is not listened on and the log says so once; the node proxy
  to it then fails as for an unreachable node, and the node still starts, as the kubelet's
  0.0.0.0 never fails on a node IP. An `address` written explicitly is bound as written: if it
  cannot be, that is a start error naming KubeletConfiguration.address.
- `port: 0` written explicitly picks a free port (the kubelet reads 0 as "unset", 10250), so many
  node processes on one machine need no port list; the bound port is what the Node's
  status.daemonEndpoints.kubeletEndpoint.Port says, as always.
- `authentication.x509.clientCAFile` left out trusts the CA of the cluster the node talks to (the
  embedded API server's CA, or the kubeconfig's certificate authority when the node joined a
  cluster); the kubelet then accepts no client certificate. kubeadm sets it to the cluster CA.
- `readOnlyPort` is not served: nodeagent's read-only endpoints (/metrics, /healthz, /configz,
  /stats/summary, no authentication) are at NodeAgentConfiguration.metricsBindAddress.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeagent.config.fields import as_bool, as_int, as_str, expect, parse_duration
from nodeagent.errors import ConfigError

KUBELET = "KubeletConfiguration"
DEFAULT_PORT = 10250
AUTHZ_MODES = ("AlwaysAllow", "Webhook")


@dataclass(frozen=True)
class ServerOptions:
    enabled: bool = True  # enableServer
    address: str = ""  # "": the node's InternalIPs local to this host (and 127.0.0.1)
    port: int = DEFAULT_PORT  # 0: a free port
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    anonymous: bool = False  # authentication.anonymous.enabled
    webhook_authentication: bool = True  # authentication.webhook.enabled
    token_cache_ttl: float = 120.0  # authentication.webhook.cacheTTL
    client_ca_file: Path | None = None  # authentication.x509.clientCAFile
    authorization_mode: str = "Webhook"  # authorization.mode
    authorized_ttl: float = 300.0  # authorization.webhook.cacheAuthorizedTTL
    unauthorized_ttl: float = 30.0  # authorization.webhook.cacheUnauthorizedTTL


def _section(doc: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = doc.get(key)
    if value is None:
        return {}
    return expect(value, dict, f"{path}.{key}", "object")


def _path(value: object, path: str) -> Path | None:
    text = as_str(value, path) if value is not None else ""
    return Path(text) if text else None


def server_options(raw: Mapping[str, Any]) -> ServerOptions:
    """The server's options from the KubeletConfiguration document; ConfigError with the kubelet's texts."""
    p = KUBELET
    enabled = as_bool(raw["enableServer"], f"{p}.enableServer") if raw.get("enableServer") is not None else True
    port = DEFAULT_PORT
    if raw.get("port") is not None:
        port = as_int(raw["port"], f"{p}.port")
        if not 0 <= port <= 65535:
            raise ConfigError(f"{p}.port: invalid configuration: port (--port) {port} must be between 1 and 65535, "
                              "inclusive")
    read_only = as_int(raw["readOnlyPort"], f"{p}.readOnlyPort") if raw.get("readOnlyPort") is not None else 0
    if not 0 <= read_only <= 65535:
        raise ConfigError(f"{p}.readOnlyPort: invalid configuration: readOnlyPort (--read-only-port) {read_only} must "
                          "be between 0 and 65535, inclusive")
    authn = _section(raw, "authentication", p)
    anon = _section(authn, "anonymous", f"{p}.authentication")
    webhook = _section(authn, "webhook", f"{p}.authentication")
    x509 = _section(authn, "x509", f"{p}.authentication")
    authz = _section(raw, "authorization", p)
    authz_webhook = _section(authz, "webhook", f"{p}.authorization")
    mode = as_str(authz.get("mode"), f"{p}.authorization.mode") if authz.get("mode") else "Webhook"
    if mode not in AUTHZ_MODES:
        raise ConfigError(f'{p}.authorization.mode: unknown authorization mode "{mode}" (one of '
                          f"{', '.join(AUTHZ_MODES)})")
    cert = _path(raw.get("tlsCertFile"), f"{p}.tlsCertFile")
    key = _path(raw.get("tlsPrivateKeyFile"), f"{p}.tlsPrivateKeyFile")
    if (cert is None) != (key is None):
        raise ConfigError(f"{p}.tlsCertFile: tlsCertFile and tlsPrivateKeyFile are given together or not at all")

    def ttl(section: Mapping[str, Any], key: str, path: str, default: float) -> float:
        value = section.get(key)
        return parse_duration(value, f"{path}.{key}") if value else default

    return ServerOptions(
        enabled=enabled,
        address=as_str(raw["address"], f"{p}.address") if raw.get("address") else "",
        port=port,
        tls_cert_file=cert,
        tls_private_key_file=key,
        anonymous=as_bool(anon["enabled"], f"{p}.authentication.anonymous.enabled")
        if anon.get("enabled") is not None else False,
        webhook_authentication=as_bool(webhook["enabled"], f"{p}.authentication.webhook.enabled")
        if webhook.get("enabled") is not None else True,
        token_cache_ttl=ttl(webhook, "cacheTTL", f"{p}.authentication.webhook", 120.0),
        client_ca_file=_path(x509.get("clientCAFile"), f"{p}.authentication.x509.clientCAFile"),
        authorization_mode=mode,
        authorized_ttl=ttl(authz_webhook, "cacheAuthorizedTTL", f"{p}.authorization.webhook", 300.0),
        unauthorized_ttl=ttl(authz_webhook, "cacheUnauthorizedTTL", f"{p}.authorization.webhook", 30.0),
    )
