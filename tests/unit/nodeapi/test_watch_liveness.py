"""The reflector's watches against a server that stops talking, and the one-line outage report.

A frozen server or a connection that stops forwarding gives no error, only silence; before each
watch had a liveness check the node waited for the socket's read timeout (330 s) and saw no pod
meanwhile. Here an HTTP server on loopback answers the list, then holds the watch open without a
byte ("frozen": /version hangs too; "half-open": /version answers), with the read-idle time and the
quiet limit scaled down: the reflector lists again within them. Each watch asks for a
timeoutSeconds in [300, 600] as client-go's reflector, and the client's deadline follows it.
Backoffs run on the injected clock (they slept on asyncio.sleep)."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from nodeagent.errors import Unavailable
from nodeagent.nodeapi.eventsink import RemoteEventSink
from nodeagent.nodeapi.reachability import Reachability, Unreachable
from nodeagent.nodeapi.reflector import MIN_WATCH_TIMEOUT, Reflector, watch_timeout
from nodeagent.nodeapi.remote import RemoteAPI
from nodeagent.pods.events import Event, ObjectRef
from nodeagent.util.clock import FakeClock

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
"""


class Silent:
    """Lists answered; every watch held open and silent; /version hangs unless `version_answers`."""

    def __init__(self, version_answers: bool) -> None:
        self.version_answers = version_answers
        self.lists = 0
        self.watch_queries: list[dict[str, str]] = []

    async def pods(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            self.lists += 1
            # as kube-apiserver lists: items without apiVersion and kind
            return web.json_response({"kind": "PodList", "apiVersion": "v1",
                                      "metadata": {"resourceVersion": str(self.lists)},
                                      "items": [{"metadata": {"name": "p", "namespace": "default"}}]})
        self.watch_queries.append(dict(request.query))
        resp = web.StreamResponse()
        await resp.prepare(request)
        await asyncio.Event().wait()  # headers sent, then nothing: frozen or half-open
        return resp

    async def version(self, request: web.Request) -> web.Response:
        if not self.version_answers:
            await asyncio.Event().wait()
        return web.json_response({"gitVersion": "v1.37.2"})


@pytest.fixture
async def serving() -> AsyncIterator[tuple[Silent, int]]:
    silent = Silent(version_answers=False)
    app = web.Application()
    app.router.add_get("/api/v1/pods", silent.pods)
    app.router.add_get("/version", silent.version)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        yield silent, int(port)
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("version_answers", [False, True], ids=["frozen", "half-open"])
async def test_a_silent_watch_is_dead_and_listed_again(serving: tuple[Silent, int], tmp_path: Path,
                                                      version_answers: bool) -> None:
    silent, port = serving
    silent.version_answers = version_answers
    (tmp_path / "k").write_text(KUBECONFIG.format(port=port))
    api = RemoteAPI(tmp_path / "k", timeout=0.3, rng=random.Random(7), watch_read_idle=0.2, watch_quiet_limit=1.0)
    listed: list[Any] = []
    reflector = Reflector(api, "/api/v1/pods", "", "pods", on_list=listed.append, on_event=lambda kind, obj: None)
    task = asyncio.create_task(reflector.run())
    try:
        async with asyncio.timeout(10):
            while reflector.lists < 3:
                await asyncio.sleep(0.05)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await api.close()
    # each relist hands on pods the node accepts (a relist once lost them: "apiVersion: Required value")
    assert all(items == [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}]
               for items in listed), listed
    timeouts = [int(q["timeoutSeconds"]) for q in silent.watch_queries]
    assert all(MIN_WATCH_TIMEOUT <= t <= 2 * MIN_WATCH_TIMEOUT for t in timeouts), timeouts
    assert all(q["allowWatchBookmarks"] == "true" for q in silent.watch_queries)
    # frozen: the probe gets no answer, so this is an outage; half-open: the server answers, no outage
    assert (api.reachability.outages == 0) is version_answers


def test_watch_timeouts_are_spread_as_client_gos() -> None:
    rng = random.Random(1)
    got = [watch_timeout(rng) for _ in range(200)]
    assert min(got) >= 300 and max(got) <= 600 and max(got) - min(got) > 200


def test_an_outage_is_logged_once_with_its_counts(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    tracker = Reachability(clock, lambda: "https://api:6443")
    with caplog.at_level(logging.DEBUG, logger="nodeagent.nodeapi.reachability"):
        tracker.answered()
        clock.advance(1)
        for kind in ["lease", "watch", "pod-status", "pod-status", *["event"] * 500]:
            tracker.failed(kind, "Cannot connect", started=clock.monotonic())
            clock.advance(0.05)
        assert tracker.down
        tracker.answered()
        # a request sent into the outage that times out after the answer: no new outage
        tracker.failed("lease", "TimeoutError", started=clock.monotonic() - 5)
    loud = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert [r.levelname for r in loud] == ["WARNING", "INFO"]
    assert "API server unreachable api=https://api:6443 err=Cannot connect" in loud[0].getMessage()
    assert "failed_requests=504 event=500 lease=1 pod-status=2 watch=1" in loud[1].getMessage()
    assert tracker.outages == 1 and not tracker.down


async def test_event_sink_backs_off_on_the_injected_clock() -> None:
    clock = FakeClock()
    calls = 0

    async def request(*_: Any, **__: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise Unreachable("POST /api/v1/namespaces/default/events on https://api: Cannot connect")
        return {}

    sink = RemoteEventSink(request, "n", clock)
    sink.post(Event(involved=ObjectRef(kind="Pod", namespace="default", name="p", uid="u"), type="Normal",
                    reason="Scheduled", message="m", count=1, first_timestamp=1.0, last_timestamp=1.0))
    task = asyncio.create_task(sink.run())
    try:
        for delay in (0.5, 1.0):  # the backoff waits on the clock, not on asyncio.sleep
            await clock.wait_for_sleepers(1)
            assert clock.deadlines == [pytest.approx(clock.monotonic() + delay)]
            clock.advance(delay)
        async with asyncio.timeout(5):
            while calls < 3:
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert isinstance(Unreachable("x"), Unavailable)
