"""The API server's way to a node's kubelet: nodes/NAME/proxy, pods/log, and the streaming pod subresources.

Why here: kube-apiserver reaches each kubelet's HTTPS endpoint itself (pkg/registry/core/node
ResourceLocation, pkg/registry/core/pod LogLocation), so `kubectl get --raw
/api/v1/nodes/NAME/proxy/configz`, `kubectl logs` and metrics clients work with the API server's
credentials alone. The node's address is taken from its Node object as kube-apiserver does:
the first address of the preferred types (kubeadm's order, InternalIP, ExternalIP, Hostname, since
kube-apiserver's default puts Hostname first and a node name rarely resolves), the port from
status.daemonEndpoints.kubeletEndpoint.Port (10250 when unset). The API server authenticates
to the kubelet with its own client certificate (kube-apiserver-kubelet-client, from the embedded
CA) and, like kube-apiserver without --kubelet-certificate-authority, does not verify the kubelet's
serving certificate (a kubelet's is self-signed by default).

exec, attach and portforward answer a Status saying that no container runs on a nodeagent node,
instead of opening a stream (kube-apiserver would upgrade the connection to the kubelet's).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import ssl
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from nodeagent.apiserver.errors import APIError, bad_request, not_found

logger = logging.getLogger(__name__)

DEFAULT_KUBELET_PORT = 10250
PREFERRED_ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname")
PROXY_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
LOG_PARAMS = ("follow", "previous", "timestamps", "sinceSeconds", "sinceTime", "tailLines", "limitBytes", "stream")
STREAMING = ("exec", "attach", "portforward")
# Hop-by-hop headers (RFC 7230 6.1) and the ones aiohttp sets itself: never copied across the proxy.
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                  "transfer-encoding", "upgrade", "content-length", "content-encoding", "host", "authorization"})
NO_CONTAINERS = "nodeagent runs no containers"
VIRTUAL_LABEL = "nodeagent.dev/virtual"  # controlplane/controllers/virtual_nodes.py LABEL_VIRTUAL


def preferred_address(node: Mapping[str, Any], types: Sequence[str] = PREFERRED_ADDRESS_TYPES) -> str:
    """The node's address of the first preferred type; APIError 500 as kube-apiserver's NoMatchError."""
    addresses = [a for a in (node.get("status") or {}).get("addresses") or () if isinstance(a, Mapping)]
    for kind in types:
        for a in addresses:
            if a.get("type") == kind and a.get("address"):
                return str(a["address"])
    known = " ".join(f"{{{a.get('type', '')} {a.get('address', '')}}}" for a in addresses)
    raise APIError(500, "InternalError",
                   f"Internal error occurred: no preferred addresses found; known addresses: [{known}]")


def without_endpoint(node: Mapping[str, Any]) -> APIError | None:
    """The refusal for a nodeagent virtual node (scheduling only, label nodeagent.dev/virtual) that registered no
    kubelet endpoint: its InternalIP is the daemon's, so the default port would reach another node's kubelet
    (a nodeagent-only check: kube-apiserver would dial the default port)."""
    meta = node.get("metadata") or {}
    endpoints = ((node.get("status") or {}).get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
    if (meta.get("labels") or {}).get(VIRTUAL_LABEL) == "true" and not endpoints.get("Port"):
        return APIError(503, "ServiceUnavailable", f"error trying to reach service: node {meta.get('name', '')} is a "
                        "nodeagent virtual node (scheduling only): no kubelet endpoint runs for it")
    return None


def kubelet_port(node: Mapping[str, Any]) -> int:
    endpoints = ((node.get("status") or {}).get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
    port = endpoints.get("Port")
    return port if isinstance(port, int) and port > 0 else DEFAULT_KUBELET_PORT


async def check_proxyable(host: str) -> None:
    """kube-apiserver's isProxyableHostname: every address the host resolves to must be global unicast
    (no loopback, link-local or multicast), else 400 "address not allowed"."""
    try:
        ips = [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as err:
            raise bad_request(f"lookup {host}: {err.strerror or err}") from None
        ips = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not ips:
        raise bad_request("no addresses for hostname")
    for ip in ips:
        # Go's IP.IsGlobalUnicast: not unspecified, loopback, multicast, link-local or the broadcast address
        if ip.is_unspecified or ip.is_loopback or ip.is_multicast or ip.is_link_local or \
                (ip.version == 4 and ip == ipaddress.IPv4Address("255.255.255.255")):
            raise bad_request("address not allowed")


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _reach_error(host: str, port: int, err: BaseException) -> APIError:
    """503 "error trying to reach service: ..." with Go's wording for the common dial failures."""
    addr = _host_port(host, port)
    cause: BaseException = err.os_error if isinstance(err, aiohttp.ClientConnectorError) else err
    if isinstance(cause, ConnectionRefusedError):
        text = f"dial tcp {addr}: connect: connection refused"
    elif isinstance(cause, TimeoutError | asyncio.TimeoutError):
        text = f"dial tcp {addr}: i/o timeout"
    else:
        text = f"dial tcp {addr}: {getattr(cause, 'strerror', None) or cause}"
    return APIError(503, "ServiceUnavailable", f"error trying to reach service: {text}")


class KubeletClient:
    """What the API server uses to reach kubelets: one HTTPS session with its client certificate."""

    def __init__(self, cert: Path | None, key: Path | None, *, timeout: float = 30.0) -> None:
        self._cert, self._key = cert, key
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    def _ssl(self, with_identity: bool) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # kube-apiserver without --kubelet-certificate-authority: the kubelet's certificate is not verified
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        if with_identity and self._cert is not None and self._key is not None:
            context.load_cert_chain(self._cert, self._key)
        return context

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._ssl(True), limit=64),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._timeout),
                auto_decompress=False,
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class NodeProxy:
    """nodes/NAME/proxy/..., pods/NAME/log and the refusals of exec/attach/portforward."""

    def __init__(self, lookup: Callable[[str, str, str], Mapping[str, Any] | None], client: KubeletClient,
                 *, check_host: Callable[[str], Any] = check_proxyable) -> None:
        self._lookup = lookup
        self._client = client
        self._check_host = check_host

    def _node(self, name: str) -> Mapping[str, Any]:
        node = self._lookup("Node", "", name)
        if node is None:
            raise not_found("", "nodes", name)
        refusal = without_endpoint(node)
        if refusal is not None:
            raise refusal
        return node

    async def node_proxy(self, request: web.Request, node_id: str, rest: str) -> web.StreamResponse:
        """Forward the request to the node's kubelet at `rest` (the path after .../proxy)."""
        if request.method not in PROXY_METHODS:
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        scheme, name, port_text = _split_scheme_name_port(node_id)
        node = self._node(name)
        host = preferred_address(node)
        await self._check_host(host)
        port = kubelet_port(node)
        if port_text and int(port_text) != port:
            # another port of the node: plain proxying without the API server's kubelet credentials
            raise APIError(400, "BadRequest", f"nodeagent proxies only the kubelet port of node {name} ({port}); "
                           f"port {port_text} is not served")
        target = f"{scheme or 'https'}://{_host_port(host, port)}{rest or '/'}"
        if request.query_string:
            target += "?" + request.query_string
        return await self._forward(request, target, host, port)

    async def pod_log(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        """GET pods/NAME/log: the container is checked as kube-apiserver's LogLocation does, then the node's
        kubelet is asked for /containerLogs/NS/NAME/CONTAINER with the log options."""
        if request.method not in ("GET", "HEAD"):
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        pod = self._pod(namespace, name)
        container = validate_container(pod, request.query.get("container", ""))
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        if not node_name:
            # LogLocation: no host assigned yet, an empty log
            return web.Response(status=200, body=b"", headers={"Content-Type": "text/plain"})
        node = self._node(node_name)
        host, port = preferred_address(node), kubelet_port(node)
        params = [(k, v) for k in LOG_PARAMS for v in request.query.getall(k, [])]
        query = urllib.parse.urlencode(params)
        target = f"https://{_host_port(host, port)}/containerLogs/{namespace}/{name}/{container}"
        if query:
            target += "?" + query
        return await self._forward(request, target, host, port, content_type="text/plain", logs=True)

    def refuse_stream(self, namespace: str, name: str, subresource: str, container: str) -> APIError:
        """The Status for exec/attach/portforward: the pod and container are checked first, as upstream does."""
        pod = self._pod(namespace, name)
        if subresource != "portforward":
            container = validate_container(pod, container)
        if not (pod.get("spec") or {}).get("nodeName"):
            return bad_request(f"pod {name} does not have a host assigned")
        what = {"exec": f"exec into container {container}", "attach": f"attach to container {container}",
                "portforward": "port forwarding"}[subresource]
        return bad_request(f"{NO_CONTAINERS}: {what} of pod {namespace}/{name} is not possible (its lifecycle "
                           f"events and resolved environment: kubectl logs {name}"
                           + (f" -c {container}" if subresource != "portforward" else "") + ")")

    def _pod(self, namespace: str, name: str) -> Mapping[str, Any]:
        pod = self._lookup("Pod", namespace, name)
        if pod is None:
            raise not_found("", "pods", name)
        return pod

    async def _forward(self, request: web.Request, target: str, host: str, port: int, *,
                       content_type: str | None = None, logs: bool = False) -> web.StreamResponse:
        # the Impersonate-* headers were spent by the API server's impersonation step (upstream deletes them)
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in _HOP and not k.lower().startswith("impersonate-")}
        headers["X-Forwarded-Uri"] = request.path_qs
        headers["X-Forwarded-Host"] = request.host
        headers["X-Forwarded-Proto"] = "https"
        body = await request.read() if request.can_read_body else None
        try:
            upstream = await self._client.session().request(request.method, target, headers=headers, data=body,
                                                            allow_redirects=False)
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            raise _reach_error(host, port, err) from None
        async with upstream:
            if logs and upstream.status != 200:
                text = (await upstream.content.read(1024)).decode("utf-8", "replace").strip()
                raise APIError(upstream.status, _reason(upstream.status), text or f"HTTP {upstream.status}")
            out_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP}
            if upstream.headers.get("Content-Encoding"):
                out_headers["Content-Encoding"] = upstream.headers["Content-Encoding"]
            if content_type is not None:
                out_headers["Content-Type"] = content_type
            response = web.StreamResponse(status=upstream.status, headers=out_headers)
            await response.prepare(request)
            with contextlib.suppress(ConnectionError, aiohttp.ClientPayloadError):
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
            with contextlib.suppress(ConnectionError):
                await response.write_eof()
            return response


def match(path: str) -> tuple[str, ...] | None:
    """("proxy", NODE, REST) for /api/v1/nodes/NODE/proxy[/REST], (SUB, NAMESPACE, POD) for
    /api/v1/namespaces/NS/pods/POD/{log,exec,attach,portforward}; None for any other path."""
    parts = path.split("/")
    # ["", "api", "v1", "nodes", NAME, "proxy", ...]
    if len(parts) >= 6 and parts[1:4] == ["api", "v1", "nodes"] and parts[5] == "proxy" and parts[4]:
        rest = "/".join(parts[6:])
        return ("proxy", parts[4], "/" + rest if len(parts) > 6 else "")
    if len(parts) == 8 and parts[1:4] == ["api", "v1", "namespaces"] and parts[5] == "pods" \
            and parts[7] in ("log", *STREAMING) and parts[4] and parts[6]:
        return (parts[7], parts[4], parts[6])
    return None


def validate_container(pod: Mapping[str, Any], container: str) -> str:
    """kube-apiserver's validateContainer (pkg/registry/core/pod/strategy.go), its texts word for word."""
    spec = pod.get("spec") or {}
    name = str((pod.get("metadata") or {}).get("name") or "")
    containers = [str(c.get("name")) for c in spec.get("containers") or () if isinstance(c, Mapping)]
    every = [str(c.get("name")) for key in ("initContainers", "containers", "ephemeralContainers")
             for c in spec.get(key) or () if isinstance(c, Mapping)]
    if not container:
        if len(containers) == 1:
            return containers[0]
        if not containers:
            raise bad_request(f"a container name must be specified for pod {name}")
        raise bad_request(f"a container name must be specified for pod {name}, choose one of: [{' '.join(every)}]")
    if container not in every:
        raise bad_request(f"container {container} is not valid for pod {name}")
    return container


def _split_scheme_name_port(node_id: str) -> tuple[str, str, str]:
    """utilnet.SplitSchemeNamePort: NAME, NAME:PORT or SCHEME:NAME:PORT; 400 when it is none of them."""
    parts = node_id.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3 and parts[0] in ("http", "https"):
        scheme, name, port = parts
    else:
        raise bad_request(f'invalid node request "{node_id}"')
    if not name or (port and not port.isdigit()):
        raise bad_request(f'invalid node request "{node_id}"')
    return scheme, name, port


def _reason(code: int) -> str:
    return {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
            422: "Invalid", 503: "ServiceUnavailable"}.get(code, "InternalError")
