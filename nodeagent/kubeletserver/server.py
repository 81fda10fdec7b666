"""The kubelet's authenticated HTTPS endpoint of one node (port 10250): what node agents and kube-apiserver read.

Why: programs written for a kubelet (NFD's topology updater, metrics-server, Prometheus's node
scrape, kube-apiserver's node proxy and `kubectl logs`) reach the kubelet here, not at
nodeagent's read-only metrics port. Served as pkg/kubelet/server/server.go serves it: every
request is authenticated (client certificate from the client CA: CN user, O groups; bearer token
through a TokenReview; anonymous when allowed) and authorized (SubjectAccessReviews on
nodes/<subresource> as auth.go maps the path, or AlwaysAllow), with the kubelet's 401/403 texts;
then /configz, /pods, /runningpods/, /healthz, /stats/summary, /metrics, /metrics/resource,
/metrics/probes and /containerLogs/NS/POD/CONTAINER. /exec, /attach, /portForward and /run answer that no
container runs. The read-only handlers are the ones of the metrics port (metrics/http.py).

Must not: reach the node's state other than through the callables it is given.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from nodeagent.errors import StartupError
from nodeagent.kubeletserver import auth
from nodeagent.kubeletserver.webhook import ReviewError
from nodeagent.util.httpserve import SHUTDOWN_TIMEOUT, format_address

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
TEXT = "text/plain; charset=utf-8"
JSON = "application/json"
NOT_FOUND = b"404 page not found\n"
NO_CONTAINERS = "nodeagent runs no containers"
REDIRECTS = {"/runningpods": "/runningpods/"}  # paths the kubelet registers with a trailing slash only
LISTEN_BACKLOG = 128  # asyncio's create_server default
PICK_ATTEMPTS = 5
"""How often port 0 is picked again when the port the first address got is taken on another."""


class LogError(Exception):
    """A /containerLogs refusal: HTTP code and the kubelet's text."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.text = text


@dataclass(frozen=True)
class Authn:
    """How requests are authenticated and authorized (options.py gives the settings)."""

    anonymous: bool
    authenticate_token: Callable[[str], Awaitable[auth.User | None]] | None  # None: webhook authn off
    authorize: Callable[[auth.User, auth.Attributes], Awaitable[tuple[bool, str]]] | None  # None: AlwaysAllow
    fine_grained: bool = True  # KubeletFineGrainedAuthz


@dataclass(frozen=True)
class Content:
    """What the endpoints serve: the metrics port's handlers and the node's views."""

    read_only: Mapping[str, Handler]  # /metrics, /healthz, /configz, /stats/summary
    pods: Callable[[], Sequence[Mapping[str, Any]]]
    container_logs: Callable[[str, str, str, Mapping[str, str]], bytes]  # raises LogError
    resource_metrics: Handler
    probe_metrics: Handler
    healthy: Callable[[], bool] = lambda: True  # the syncloop check: every socket of the node serving
    running_pods: Callable[[], Sequence[Mapping[str, Any]]] = lambda: ()  # /runningpods/ (runtime_pods.py)


def _text(status: int, body: str | bytes, content_type: str = TEXT) -> web.Response:
    data = body.encode() if isinstance(body, str) else body
    return web.Response(status=status, body=data, headers={"Content-Type": content_type})


class KubeletServer:
    def __init__(self, node_name: str, hosts: Sequence[str | None], port: int, ssl_context: ssl.SSLContext | None,
                 authn: Authn, content: Content, field: str = "") -> None:
        self._node = node_name
        self._field = field  # the configuration field that set the address, named in a listen failure
        self._hosts = list(hosts) or [None]
        self._port = port
        self._ssl = ssl_context
        self._authn = authn
        self._content = content
        self._runner: web.AppRunner | None = None
        self._socks: list[socket.socket] = []
        self.port = port

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._filter])
        c = self._content
        get_only: dict[str, Handler] = {
            **c.read_only,
            "/metrics/resource": c.resource_metrics,
            "/metrics/probes": c.probe_metrics,
            "/pods": self._pods,
            "/pods/": self._pods,
            "/healthz": self._healthz,
            "/healthz/{check}": self._healthz_check,
        }
        for path, handler in get_only.items():
            app.router.add_route("*", path, _get_only(handler))
        app.router.add_route("*", "/containerLogs/{namespace}/{pod}/{container}", _get_only(self._logs))
        app.router.add_route("*", "/runningpods/", _get_only(self._running_pods))
        for prefix in ("exec", "attach", "portForward", "run"):
            app.router.add_route("*", f"/{prefix}/{{tail:.+}}", self._no_containers)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        return app

    def bind(self) -> int:
        """Bind and listen on every address now (the port is then known and can be registered in the Node);
        connections wait in the backlog until serve(). StartupError naming the address when one cannot be bound."""
        # Port 0 with several addresses: the first address picks the port and the others take the same one,
        # which another process may hold on one of them (an outgoing connection's ephemeral port on
        # 127.0.0.1, say); the real kubelet has a fixed port, so pick again a few times before refusing.
        attempts = PICK_ATTEMPTS if self._port == 0 and len(self._hosts) > 1 else 1
        for attempt in range(attempts):
            socks: list[socket.socket] = []
            port = self._port
            try:
                for host in self._hosts:
                    socks += _listen(host, port)
                    if port == 0:  # the first address picked the port; the others share it
                        port = int(socks[0].getsockname()[1])
            except OSError as err:
                for sock in socks:
                    sock.close()
                if err.errno == errno.EADDRINUSE and attempt + 1 < attempts:
                    logger.info("kubelet endpoint port taken on another address, picking again node=%s port=%d",
                                self._node, port)
                    continue
                reason = os.strerror(err.errno) if err.errno else str(err)
                where = ", ".join(format_address(h, port) for h in self._hosts)
                prefix = f"{self._field}: " if self._field else ""
                raise StartupError(f"{prefix}kubelet server address {where}: cannot listen: {reason}") from None
            self._socks, self.port = socks, port
            return port
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def serve(self, ssl_context: ssl.SSLContext | None = None) -> None:
        """Serve on the sockets bind() made, with `ssl_context` (else the one given at construction)."""
        context = ssl_context or self._ssl
        assert context is not None, "a TLS context is needed to serve"
        runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
        await runner.setup()
        socks, self._socks = self._socks, []
        self._runner = runner
        for sock in socks:
            await web.SockSite(runner, sock, ssl_context=context).start()
        logger.info("serving kubelet endpoint node=%s addresses=%s port=%d", self._node,
                    ",".join(h or "*" for h in self._hosts), self.port)

    async def start(self) -> None:
        """bind() and serve() at once."""
        self.bind()
        await self.serve()

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        for sock in self._socks:  # bound, never served
            sock.close()
        self._socks = []
        if runner is not None:
            await runner.cleanup()

    @property
    def serving(self) -> bool:
        return self._runner is not None

    # --- the filter: authenticate, then authorize (server.go InstallAuthFilter) ---

    @web.middleware
    async def _filter(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in REDIRECTS:
            # Go's ServeMux answers a path registered with a trailing slash, asked without it, by a redirect
            # before the kubelet's filters run (no authentication)
            return _redirect(request, REDIRECTS[request.path])
        try:
            user = await self._authenticate(request)
        except ReviewError as err:
            logger.warning("kubelet endpoint cannot authenticate a request path=%s err=%s", request.path, err)
            return _text(401, auth.UNAUTHORIZED)
        if user is None:
            return _text(401, auth.UNAUTHORIZED)
        attrs = auth.request_attributes(request.method, request.path, self._node,
                                        fine_grained=self._authn.fine_grained)
        if self._authn.authorize is not None:
            allowed = False
            for attr in attrs:
                try:
                    allowed, _reason = await self._authn.authorize(user, attr)
                except ReviewError as err:
                    logger.warning("kubelet endpoint authorization error user=%s subresource=%s err=%s",
                                   user.name, attr.subresource, err)
                    return _text(500, f"Authorization error (user={user.name}, verb={attr.verb}, resource=nodes, "
                                      f"subresource={attr.subresource})")
                if allowed:
                    break
            if not allowed:
                logger.debug("kubelet endpoint forbidden user=%s path=%s", user.name, request.path)
                return _text(403, auth.forbidden_text(user, attrs))
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except Exception:
            logger.exception("kubelet endpoint handler failed path=%s", request.path)
            return _text(500, "internal error\n")

    async def _authenticate(self, request: web.Request) -> auth.User | None:
        """x509 first, then the bearer token, then anonymous (the kubelet's union of authenticators)."""
        transport = request.transport
        peer = transport.get_extra_info("peercert") if transport is not None else None
        if isinstance(peer, Mapping) and peer.get("subject"):
            tls = transport.get_extra_info("ssl_object") if transport is not None else None
            der = tls.getpeercert(binary_form=True) if isinstance(tls, ssl.SSLObject) else None
            user = auth.user_of_certificate(peer["subject"], der)
            if user is not None:
                return auth.User(user.name, (*user.groups, "system:authenticated"), user.uid, user.extra)
        token = auth.bearer_token(request.headers.get("Authorization"))
        if token is not None:
            if self._authn.authenticate_token is None:
                return None
            return await self._authn.authenticate_token(token)
        return auth.ANONYMOUS if self._authn.anonymous else None

    # --- handlers ---

    async def _pods(self, request: web.Request) -> web.StreamResponse:
        # encodePods: a v1 PodList, items null when the node has none (Go's nil slice)
        items = list(self._content.pods())
        doc: dict[str, Any] = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items or None}
        return _text(200, orjson.dumps(doc), JSON)

    async def _running_pods(self, request: web.Request) -> web.StreamResponse:
        # encodePods of GetRunningPods: items null when the runtime reports none; the codec's newline
        items = list(self._content.running_pods())
        doc: dict[str, Any] = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items or None}
        return _text(200, orjson.dumps(doc) + b"\n", JSON)

    def _checks(self) -> list[tuple[str, bool]]:
        return [("ping", True), ("log", True), ("syncloop", self._content.healthy())]

    async def _healthz(self, request: web.Request) -> web.StreamResponse:
        """healthz.InstallHandler's /healthz with the kubelet's checks (ping, log, syncloop), its texts."""
        lines = "".join(f"[+]{name} ok\n" if ok else f"[-]{name} failed: reason withheld\n"
                        for name, ok in self._checks())
        if not all(ok for _, ok in self._checks()):
            return _text(500, f"{lines}healthz check failed\n")
        if "verbose" not in request.query:
            return _text(200, "ok")
        return _text(200, f"{lines}healthz check passed\n")

    async def _healthz_check(self, request: web.Request) -> web.StreamResponse:
        found = dict(self._checks()).get(request.match_info["check"])
        if found is None:
            return _text(404, NOT_FOUND)
        if not found:
            return _text(500, "internal server error: the node's sockets are not all serving\n")
        return _text(200, "ok")

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        m = request.match_info
        query = {k: v for k, v in request.query.items()}
        tail = query.pop("tail", None)
        if tail is not None and tail != "all":  # the "tail" query parameter, kept for backwards compatibility
            query["tailLines"] = tail
        try:
            body = self._content.container_logs(m["namespace"], m["pod"], m["container"], query)
        except LogError as err:
            return _text(err.code, err.text)
        return _text(200, body)

    async def _no_containers(self, request: web.Request) -> web.StreamResponse:
        what = request.path.split("/")[1]
        return _text(400, f"{NO_CONTAINERS}: {what} is not possible on this node (kubectl logs shows what the node "
                          "knows of a container)\n")

    @staticmethod
    async def _not_found(request: web.Request) -> web.StreamResponse:
        return _text(404, NOT_FOUND)


def _redirect(request: web.Request, path: str) -> web.StreamResponse:
    """http.ServeMux's redirect to the slash-terminated path: 307 with Location, its HTML note for a GET."""
    location = path + (f"?{request.query_string}" if request.query_string else "")
    headers = {"Location": location}
    body = b""
    if request.method in ("GET", "HEAD"):
        headers["Content-Type"] = "text/html; charset=utf-8"
        body = f'<a href="{location}">Temporary Redirect</a>.\n\n'.encode()
    return web.Response(status=307, body=body, headers=headers)


def _get_only(handler: Handler) -> Handler:
    """GETOnlyRestfulFilter: anything but GET (and HEAD) is 405."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        if request.method not in ("GET", "HEAD"):
            return _text(405, "method not allowed\n")
        return await handler(request)

    return guarded


def _listen(host: str | None, port: int) -> list[socket.socket]:
    """Listening sockets for host:port as asyncio's create_server makes them (None: every interface, one
    socket per address family; SO_REUSEADDR; IPv6 sockets IPv6 only), non-blocking; OSError when one fails."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    socks: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(socks) > 1:  # every family on the port the first one picked
                address = (address[0], socks[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks
