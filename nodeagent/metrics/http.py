"""The node's HTTP endpoints: /metrics, /healthz, /configz and /stats/summary, on asyncio streams.

A deliberately small HTTP/1.1 server (asyncio.start_server, no new dependency): one
request per connection (answers carry `Connection: close`), GET only (405 otherwise),
404 for unknown paths, query strings ignored. Everything it serves is injected: the
CollectorRegistry, a readiness callable, the effective configuration, and a summary
callable (metrics/summary.py). It binds cfg.agent.metrics_bind_address, loopback by
default; port 0 picks a free port, exposed as `port`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from nodeagent.errors import ConfigError, StartupError

logger = logging.getLogger(__name__)

READ_TIMEOUT = 10.0  # seconds to receive a whole request head
MAX_HEAD = 16 * 1024
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           500: "Internal Server Error", 503: "Service Unavailable"}
TEXT = "text/plain; charset=utf-8"
JSON = "application/json"


def parse_bind_address(address: str) -> tuple[str | None, int]:
    """'127.0.0.1:10255', '[::1]:10255', ':10255' (all interfaces) -> (host, port)."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"NodeAgentConfiguration.metricsBindAddress: invalid address {address!r}, "
                          "want host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return (host or None), int(port_text)


class Response:
    __slots__ = ("body", "content_type", "headers", "status")

    def __init__(self, status: int, body: bytes, content_type: str = TEXT,
                 headers: Mapping[str, str] | None = None) -> None:
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = dict(headers or {})


class NodeHTTPServer:
    def __init__(
        self,
        bind_address: str,
        registry: CollectorRegistry,
        *,
        health: Callable[[], bool] | None = None,
        configz: Mapping[str, Any] | None = None,
        summary: Callable[[], Mapping[str, Any]] | None = None,
    ) -> None:
        self._host, self._port = parse_bind_address(bind_address)
        self._address = bind_address
        self._registry = registry
        self._health = health
        self._configz = configz
        self._summary = summary
        self._server: asyncio.Server | None = None
        self.port: int = self._port

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(self._serve, self._host, self._port)
        except OSError as err:
            raise StartupError(f"metrics address {self._address}: cannot listen: {err.strerror}") from None
        sockets = self._server.sockets
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        logger.info("serving http address=%s port=%d", self._host or "*", self.port)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        await server.wait_closed()
        logger.info("stopped http port=%d", self.port)

    @property
    def serving(self) -> bool:
        return self._server is not None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
                return
            too_large = len(head) > MAX_HEAD
            response = Response(400, b"request head too large\n") if too_large else self._dispatch(head)
            await self._write(writer, response)
        except ConnectionError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def _dispatch(self, head: bytes) -> Response:
        try:
            method, target, _version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
        except ValueError:
            return Response(400, b"malformed request line\n")
        path = target.split("?", 1)[0]
        handler = {
            "/metrics": self._metrics,
            "/healthz": self._healthz,
            "/configz": self._configz_json,
            "/stats/summary": self._stats_summary,
        }.get(path)
        if handler is None:
            return Response(404, b"404 page not found\n")
        if method != "GET":
            return Response(405, b"method not allowed\n", headers={"Allow": "GET"})
        try:
            return handler()
        except Exception:
            logger.exception("http handler failed path=%s", path)
            return Response(500, b"internal error\n")

    def _metrics(self) -> Response:
        return Response(200, generate_latest(self._registry), CONTENT_TYPE_LATEST)

    def _healthz(self) -> Response:
        if self._health is None or self._health():
            return Response(200, b"ok")
        return Response(503, b"not ready")

    def _configz_json(self) -> Response:
        if self._configz is None:
            return Response(404, b"404 page not found\n")
        # The kubelet serves {"kubeletconfig": {...}}; config.effective() already has that key.
        body = self._configz if "kubeletconfig" in self._configz else {"kubeletconfig": self._configz}
        return Response(200, json.dumps(body, sort_keys=True, default=str).encode(), JSON)

    def _stats_summary(self) -> Response:
        if self._summary is None:
            return Response(404, b"404 page not found\n")
        return Response(200, json.dumps(self._summary()).encode(), JSON)

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, response: Response) -> None:
        lines = [
            f"HTTP/1.1 {response.status} {REASONS.get(response.status, 'Unknown')}",
            f"Content-Type: {response.content_type}",
            f"Content-Length: {len(response.body)}",
            "Connection: close",
            *(f"{k}: {v}" for k, v in response.headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + response.body)
        await writer.drain()
