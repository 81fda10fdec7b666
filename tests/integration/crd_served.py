"""Waiting for a new CRD's resource: kube-apiserver serves it only once the CRD is Established (a
404 page before), nodeagent at once; the comparison tests wait the same way on both sides."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_served(list_code: Callable[[], int], timeout: float = 60) -> None:
    """Until `list_code` (the answer code of a list of the CRD's resource) is 200."""
    deadline = time.monotonic() + timeout
    while list_code() != 200:
        assert time.monotonic() < deadline, "the CRD was never served"
        time.sleep(0.2)
