"""The token bucket behind the pod-resources rate limit (pure, fake time)."""

from __future__ import annotations

import math

import pytest

from nodeagent.errors import ConfigError
from nodeagent.rpc.ratelimit import DEFAULT_BURST, DEFAULT_QPS, TokenBucket


class Time:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_burst_then_refill() -> None:
    now = Time()
    bucket = TokenBucket(DEFAULT_QPS, DEFAULT_BURST, now)
    assert [bucket.allow() for _ in range(11)] == [True] * 10 + [False]
    now.t += 0.02  # two tokens at 100 qps
    assert [bucket.allow() for _ in range(3)] == [True, True, False]


def test_partial_tokens_accumulate() -> None:
    now = Time()
    bucket = TokenBucket(4.0, 2, now)
    assert [bucket.allow() for _ in range(3)] == [True, True, False]
    now.t += 0.125  # half a token
    assert not bucket.allow()
    now.t += 0.125
    assert bucket.allow()
    assert not bucket.allow()


def test_refill_caps_at_burst() -> None:
    now = Time()
    bucket = TokenBucket(1.0, 2, now)
    now.t += 3600
    assert [bucket.allow() for _ in range(3)] == [True, True, False]


def test_clock_going_backwards_gives_nothing() -> None:
    now = Time()
    bucket = TokenBucket(1.0, 1, now)
    assert bucket.allow()
    now.t -= 10
    assert not bucket.allow()


def test_unlimited() -> None:
    bucket = TokenBucket(math.inf, 1, Time())
    assert bucket.unlimited
    assert all(bucket.allow() for _ in range(1000))


@pytest.mark.parametrize(("qps", "burst", "field"), [(0, 10, "qps"), (-1, 10, "qps"), (10, 0, "burst")])
def test_rejects_bad_settings(qps: float, burst: int, field: str) -> None:
    with pytest.raises(ConfigError, match=f"podResources.{field}"):
        TokenBucket(qps, burst, Time())
