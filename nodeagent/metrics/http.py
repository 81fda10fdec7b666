"""The node's HTTP endpoints: /metrics, /healthz, /configz and /stats/summary, on aiohttp.

Everything it serves is injected: the CollectorRegistry, a readiness callable, the
effective configuration, and a summary callable (metrics/summary.py). GET and HEAD
only (405 with Allow otherwise), 404 for unknown paths. /metrics negotiates the
exposition format from Accept exactly as prometheus_client's own exposition does
(so a Prometheus that asks for OpenMetrics gets it), honours `name[]` to restrict the
families, and gzips when the client accepts it. Counters, histograms and summaries are
served without their `_created` series, as the kubelet's (client_golang leaves them out of
the text format, and out of OpenMetrics unless asked): the filter wraps this server's
registry only, where prometheus_client's own switch (disable_created_metrics, or
PROMETHEUS_DISABLE_CREATED_SERIES) is process-wide state. It binds
cfg.agent.metrics_bind_address, loopback by default; port 0 picks a free port,
exposed as `port`.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from nodeagent.errors import ConfigError
from nodeagent.metrics import exposition
from nodeagent.util.httpserve import start_site

logger = logging.getLogger(__name__)

TEXT = "text/plain; charset=utf-8"
JSON = "application/json"
ALLOW = "GET, HEAD"
NOT_FOUND = b"404 page not found\n"  # Go's http.NotFound text, as the kubelet answers
GZIP_LEVEL = 6  # most of level 9's ratio on exposition text at a fraction of the CPU

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def parse_bind_address(address: str) -> tuple[str | None, int]:
    """'127.0.0.1:10255', '[::1]:10255', ':10255' (all interfaces) -> (host, port)."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"NodeAgentConfiguration.metricsBindAddress: invalid address {address!r}, "
                          "want host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return (host or None), int(port_text)


def _reply(status: int, body: bytes, content_type: str = TEXT, **headers: str) -> web.Response:
    # Content-Type goes in as a header: aiohttp's content_type= argument refuses a charset parameter.
    return web.Response(status=status, body=body, headers={"Content-Type": content_type, **headers})


def _accepts_gzip(header: str) -> bool:
    for item in header.split(","):
        coding, _, params = item.partition(";")
        if coding.strip().lower() not in ("gzip", "*"):
            continue
        q = params.strip().lower()
        if q.startswith("q="):
            try:
                return float(q[2:]) > 0
            except ValueError:
                return False
        return True
    return False


_CREATED_TYPES = ("counter", "histogram", "gaugehistogram", "summary")


class WithoutCreated(Collector):
    """A collector's families minus the `_created` sample of each counter, histogram and summary."""

    def __init__(self, source: Collector) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        for family in self._source.collect():
            if family.type not in _CREATED_TYPES or isinstance(family, exposition.NamedMetric):
                yield family
                continue
            created = family.name + "_created"
            copy = Metric(family.name, family.documentation, family.type, family.unit)
            copy.samples = [s for s in family.samples if s.name != created]
            yield copy


async def serve_metrics(request: web.Request, registry: CollectorRegistry) -> web.StreamResponse:
    """`registry` in the exposition format the request's Accept asks for (gzip if accepted, `name[]` honoured)."""
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    source: Collector = registry
    names = request.query.getall("name[]", [])
    if names:
        source = registry.restricted_registry(names)
    families = WithoutCreated(source)
    # the text format through our own encoder (counters keep the kubelet's names, exposition.py)
    text = encoder is generate_latest
    body = exposition.text(families) if text else encoder(exposition.for_openmetrics(families))
    headers: dict[str, str] = {}
    if _accepts_gzip(request.headers.get("Accept-Encoding", "")):
        body = gzip.compress(body, compresslevel=GZIP_LEVEL)
        headers["Content-Encoding"] = "gzip"
    # The body differs by both request headers, so a cache between must key on them.
    headers["Vary"] = "Accept, Accept-Encoding"
    return _reply(200, body, content_type, **headers)


class NodeHTTPServer:
    def __init__(
        self,
        bind_address: str | None,
        registry: CollectorRegistry,
        *,
        health: Callable[[], bool] | None = None,
        configz: Mapping[str, Any] | None = None,
        summary: Callable[[], Mapping[str, Any]] | None = None,
    ) -> None:
        # None: handlers only, for the kubelet endpoint of a node that has no metrics port (a full virtual node)
        self._host, self._port = parse_bind_address(bind_address) if bind_address is not None else (None, 0)
        self._bindable = bind_address is not None
        self._registry = registry
        self._health = health
        self._configz = configz
        self._summary = summary
        self._runner: web.AppRunner | None = None
        self.port: int = self._port

    def handlers(self) -> dict[str, Handler]:
        """The endpoints by path (GET and HEAD only); the kubelet endpoint serves the same behind its auth."""
        return {
            "/metrics": self._metrics,
            "/healthz": self._healthz,
            "/configz": self._configz_json,
            "/stats/summary": self._stats_summary,
        }

    def app(self) -> web.Application:
        """The aiohttp application (built fresh; start() serves one, tests may drive another)."""
        app = web.Application()
        for path, handler in self.handlers().items():
            app.router.add_route("*", path, self._guard(path, handler))
        # Unknown paths answer 404 whatever the method, before any 405, as the kubelet's mux does.
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        return app

    async def start(self) -> None:
        assert self._bindable, "built without a bind address: handlers only"
        self._runner, self.port = await start_site(self.app(), self._host, self._port, name="metrics")
        logger.info("serving http address=%s port=%d", self._host or "*", self.port)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        await runner.cleanup()
        logger.info("stopped http port=%d", self.port)

    @property
    def serving(self) -> bool:
        return self._runner is not None

    @staticmethod
    def _guard(path: str, handler: Handler) -> Handler:
        async def guarded(request: web.Request) -> web.StreamResponse:
            if request.method not in ("GET", "HEAD"):
                return _reply(405, b"method not allowed\n", Allow=ALLOW)
            try:
                return await handler(request)
            except Exception:
                logger.exception("http handler failed path=%s", path)
                return _reply(500, b"internal error\n")

        return guarded

    @staticmethod
    async def _not_found(request: web.Request) -> web.StreamResponse:
        return _reply(404, NOT_FOUND)

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        return await serve_metrics(request, self._registry)

    async def _healthz(self, request: web.Request) -> web.StreamResponse:
        if self._health is None or self._health():
            return _reply(200, b"ok")
        return _reply(503, b"not ready")

    async def _configz_json(self, request: web.Request) -> web.StreamResponse:
        if self._configz is None:
            return _reply(404, NOT_FOUND)
        # The kubelet serves {"kubeletconfig": {...}}; config.effective() already has that key.
        body = self._configz if "kubeletconfig" in self._configz else {"kubeletconfig": self._configz}
        return _reply(200, json.dumps(body, sort_keys=True, default=str).encode(), JSON)

    async def _stats_summary(self, request: web.Request) -> web.StreamResponse:
        if self._summary is None:
            return _reply(404, NOT_FOUND)
        return _reply(200, json.dumps(self._summary()).encode(), JSON)
