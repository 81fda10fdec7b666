"""The real kubelet tier's session: skipped with the reason where it cannot run, else one Tier (control
plane, both nodes, plugins) for every scenario."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import gotools
from tests.integration.kubeapiserver import (
    BINARY,
    BINARY_ENV,
    BUILD_TIMEOUT,
    MODULE,
    kubernetes_version,
    version_ldflags,
)
from tests.kubelet_tier import runtime

ENABLE_ENV = "NODEAGENT_KUBELET_TIER"


def _binary() -> Path:
    given = os.environ.get(BINARY_ENV)
    if given:
        return Path(given)
    return gotools.build_cached(MODULE, BINARY, timeout=BUILD_TIMEOUT, ldflags=version_ldflags(kubernetes_version()))


@pytest.fixture(scope="session")
def tier() -> Iterator[object]:
    if os.environ.get(ENABLE_ENV, "").strip().lower() not in ("1", "true", "yes"):
        pytest.skip(f"the real kubelet tier is opt-in: `make test-kubelet` (or {ENABLE_ENV}=1); it needs root, "
                    "Go with the module proxy and Debian's containerd")
    if (reason := runtime.host_reason()) is not None:
        pytest.skip(reason)
    if (reason := runtime.ensure_packages()) is not None:
        pytest.skip(reason)
    binary = _binary()
    from tests.kubelet_tier.tier import running_tier  # after the skips: imports the generated APIs

    with running_tier(binary) as t:
        yield t
