"""The shared exponential backoff: the delays every retry site used to compute by hand."""

from __future__ import annotations

import pytest

from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import FakeClock


def test_delay_by_failure_count_doubles_to_the_cap_without_overflow() -> None:
    b = Backoff(0.5, 10.0)
    assert [b.delay(n) for n in range(7)] == [0.5, 0.5, 1.0, 2.0, 4.0, 8.0, 10.0]
    assert b.delay(10_000) == 10.0  # 2.0 ** 9999 would overflow a float
    assert Backoff(0.0, 0.0).delay(3) == 0.0


def test_next_delay_follows_the_last_one() -> None:
    b = Backoff(1.0, 300.0)
    seq = [b.next_delay(0.0)]
    while seq[-1] < 300.0:
        seq.append(b.next_delay(seq[-1]))
    assert seq == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 300.0]


def test_per_key_bookkeeping_on_the_injected_clock() -> None:
    clock = FakeClock()
    b = Backoff(0.5, 2.0, clock=clock)
    assert b.failed("k") == 0.5 and not b.ready("k")
    clock.advance(0.5)
    assert b.ready("k")
    assert [b.failed("k"), b.failed("k"), b.failed("k")] == [1.0, 2.0, 2.0]
    b.succeeded("k")
    assert b.ready("k") and b.failed("k") == 0.5
    with pytest.raises(ValueError, match="needs the time"):
        Backoff().failed("k")
