"""Waiting for a new CRD's resource: kube-apiserver serves it only once the CRD is Established (a
404 page before), nodeagent at once; the comparison tests wait the same way on both sides."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_served(list_code: Callable[[], int], timeout: float = 60) -> None:
    """Until `list_code` (the answer code of a list of the CRD's resource) is 200."""
    deadline = time.monotonic() + timeout
    while list_code() != 200:
        assert time.monotonic() < deadline, "the CRD was never served"
        time.sleep(0.2)


def wait_present(what: str, probe: Callable[[], T | None], timeout: float = 60) -> T:
    """`probe()`'s first answer that is not None (an empty list counts: the probe says when it has
    its answer), e.g. a definition the real server publishes a moment after the CRD is served."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got is not None:
            return got
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.2)
