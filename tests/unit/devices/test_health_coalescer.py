"""HealthCoalescer on a FakeClock: the first change at once, a burst within the interval as its latest state."""

from __future__ import annotations

import asyncio

from nodeagent.devices.health import HealthCoalescer
from nodeagent.objects.pod.model import ResourceHealth, ResourceStatus
from nodeagent.util.clock import FakeClock
from nodeagent.util.logtext import LogLimiter, plain_or_quoted, untrusted


def _st(health: str) -> tuple[ResourceStatus, ...]:
    return (ResourceStatus("example.com/gpu", (ResourceHealth("gpu-0", health),)),)


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_burst_is_coalesced_into_its_latest_state() -> None:
    clock = FakeClock()
    seen: list[tuple[str, str, str]] = []

    async def callback(uid: str, container: str, statuses: tuple[ResourceStatus, ...]) -> None:
        seen.append((uid, container, statuses[0].resources[0].health))

    c = HealthCoalescer(callback, clock, 0.25)
    await c("p1", "main", _st("Unhealthy"))
    assert seen == [("p1", "main", "Unhealthy")]  # the first change goes through at once
    for i in range(1000):
        await c("p1", "main", _st("Healthy" if i % 2 == 0 else "Unhealthy"))
    await c("p2", "main", _st("Unhealthy"))  # another container is not held back
    await _settle()
    assert seen[1:] == [("p2", "main", "Unhealthy")]
    await clock.wait_for_sleepers()
    clock.advance(0.25)
    await _settle()
    assert seen[2:] == [("p1", "main", "Unhealthy")]  # only the latest of the burst
    assert c.coalesced == 999
    clock.advance(1.0)
    await c("p1", "main", _st("Healthy"))  # quiet for an interval: at once again
    assert seen[-1] == ("p1", "main", "Healthy")
    await c("p1", "main", _st("Unhealthy"))
    await c.close()  # a waiting update is dropped on close
    clock.advance(1.0)
    await _settle()
    assert seen[-1] == ("p1", "main", "Healthy")


def test_log_limiter_counts_what_it_holds_back() -> None:
    lim = LogLimiter(5.0, max_keys=2)
    assert lim.allow("a", 0.0) == 0
    assert lim.allow("a", 1.0) is None
    assert lim.allow("a", 2.0) is None
    assert lim.allow("a", 5.0) == 2
    assert lim.allow("b", 5.0) == 0
    assert lim.allow("c", 5.0) == 0  # over max_keys: the oldest ("a") is forgotten
    assert lim.allow("a", 6.0) == 0


def test_untrusted_text_is_one_bounded_token() -> None:
    assert untrusted("a\nb") == '"a\\nb"'
    assert untrusted("x" * 300, 10) == '"xxxxxxxxxx"+290more'
    assert plain_or_quoted("/var/lib/kubelet/plugins/x/dra.sock") == "/var/lib/kubelet/plugins/x/dra.sock"
    assert plain_or_quoted("a\nb") == '"a\\nb"'
