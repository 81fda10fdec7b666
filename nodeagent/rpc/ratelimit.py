"""A token bucket, as golang.org/x/time/rate's Allow() behaves for the kubelet's pod-resources limiter.

Pure and synchronous: the clock is a function passed in, so tests step time by hand.
The bucket starts full (`burst` tokens) and refills at `qps` tokens per second up to
`burst`; each allowed call takes one token. `qps=math.inf` means no limit (benchmarks).
The gRPC side (rejecting with RESOURCE_EXHAUSTED) is its neighbour rpc/interceptors.py. It lives in
rpc/, beside that interceptor, not in podresources/: the Pods API's server is limited the same way
(a bucket of its own), and rpc/ is the shared gRPC layer below both services, so it must not import
either (upstream keeps it shared too, in pkg/kubelet/apis/grpc/ratelimit.go).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from nodeagent.errors import ConfigError

# The kubelet's hard-coded defaults (pkg/kubelet/apis/podresources/constants.go).
DEFAULT_QPS = 100.0
DEFAULT_BURST = 10


class TokenBucket:
    def __init__(self, qps: float, burst: int, now: Callable[[], float]) -> None:
        if not qps > 0:
            raise ConfigError(f"podResources.qps: must be greater than 0, got {qps}")
        if burst < 1:
            raise ConfigError(f"podResources.burst: must be at least 1, got {burst}")
        self.qps = qps
        self.burst = burst
        self._now = now
        self._tokens = float(burst)
        self._last = now()

    @property
    def unlimited(self) -> bool:
        return math.isinf(self.qps)

    def allow(self) -> bool:
        """Take one token if there is one; False means the caller must reject the request."""
        if math.isinf(self.qps):
            return True
        now = self._now()
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
            self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False
