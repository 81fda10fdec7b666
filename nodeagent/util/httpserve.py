"""Start an aiohttp application on a TCP address: the one place the daemon's HTTP servers bind.

The node endpoints (metrics/http.py) and the API server both serve aiohttp
applications; this helper gives them the same start-up contract: port 0 picks a
free port and the bound one is returned, the access log is off (the servers log
what matters themselves, and a scrape every few seconds would drown the log), and
a bind failure becomes a StartupError naming the address, so the daemon exits
with its start-up code instead of a traceback.
"""

from __future__ import annotations

import logging
import os
import ssl

from aiohttp import web

from nodeagent.errors import StartupError

logger = logging.getLogger(__name__)

# How long stop() waits for in-flight requests (a long watch must be ended by the
# application's on_shutdown hook; this only bounds the wait).
SHUTDOWN_TIMEOUT = 5.0


def format_address(host: str | None, port: int) -> str:
    """host:port as an operator writes it: '[::1]:80' for IPv6, ':80' for all interfaces."""
    if host is None:
        return f":{port}"
    if ":" in host:
        return f"[{host}]:{port}"
    return f"{host}:{port}"


async def start_site(
    app: web.Application,
    host: str | None,
    port: int,
    *,
    ssl_context: ssl.SSLContext | None = None,
    name: str = "http",
    backlog: int = 128,
) -> tuple[web.AppRunner, int]:
    """Serve `app` on host:port (None: every interface); return the runner and the bound port.

    `name` only labels the error message ("metrics address 127.0.0.1:10255: cannot listen: ...").
    `backlog`: the listen queue (asyncio's default 128; the kernel caps it at net.core.somaxconn).
    Stop the server with `await runner.cleanup()`.
    """
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context, backlog=backlog)
    try:
        await site.start()
    except OSError as err:
        await runner.cleanup()
        # asyncio wraps the socket error in a long text of its own; the errno says it plainly.
        reason = os.strerror(err.errno) if err.errno else str(err)
        raise StartupError(f"{name} address {format_address(host, port)}: cannot listen: {reason}") from None
    bound = port
    for sockname in runner.addresses:
        # IPv4 names are (host, port), IPv6 ones (host, port, flow, scope); with host None
        # and port 0 each family may get its own port, so the first one is reported.
        if isinstance(sockname, tuple) and len(sockname) >= 2:
            bound = int(sockname[1])
            break
    return runner, bound


class SentResponse(web.Response):
    """A web.Response that lets go of its body once it has been written.

    Why: aiohttp's connection handler (web_protocol.RequestHandler.start) keeps the last request and
    response of a keep-alive connection in its loop's locals until the connection's next request
    arrives, or until it closes (75 s idle). A large answer therefore stayed alive long after it was
    sent: in bench/scheduler_peer.py the 16 MB JSON of a 2500-pod LIST was held for the whole
    measured batch by the connection that had asked for it, and that connection had no further
    request. The headers and status stay (for the access log); only the bytes go."""

    async def write_eof(self, data: bytes = b"") -> None:
        try:
            await super().write_eof(data)
        finally:
            self.body = None
