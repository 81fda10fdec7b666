"""DeferredInterrupt: a SIGINT while `nodeagent run` imports is held back, then reported once."""

from __future__ import annotations

import os
import signal

import pytest

from nodeagent.util.interrupts import DeferredInterrupt


def test_a_sigint_meanwhile_raises_nothing_and_is_reported_at_release() -> None:
    # Python's own handler first: an xdist worker runs its tests with SIGINT handled otherwise
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _deferred_then_back()
    finally:
        signal.signal(signal.SIGINT, outer)


def _deferred_then_back() -> None:
    before = signal.getsignal(signal.SIGINT)
    deferred = DeferredInterrupt()
    os.kill(os.getpid(), signal.SIGINT)  # handled at the next bytecode boundary: no KeyboardInterrupt
    sum(range(1000))
    assert deferred.release() is True
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(KeyboardInterrupt):  # Python's own handler is back
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(1000))


def test_without_a_sigint_release_says_none_came() -> None:
    deferred = DeferredInterrupt()
    assert deferred.release() is False
    assert deferred.release() is False  # twice is harmless
