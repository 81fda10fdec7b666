"""Fixtures of the integration tier: one daemon serving the Kubernetes API for the API tests, and the Go
fixtures' binaries.

Each Go fixture is built once per session, through gotools.build_cached (so once per source state
across sessions too): the kubeletplugin driver was built twice per session before, by
test_kubeletplugin_driver.py and test_conformance.py, uncached in both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import gotools
from tests.integration.daemon_helpers import Daemon, daemon_in_temp_dir
from tests.integration.kubeapiserver import kube_apiserver, kube_apiserver_binary  # noqa: F401  (fixtures)


@pytest.fixture(scope="session")
def api_daemon() -> Iterator[Daemon]:
    """A daemon with the control plane and its API (a free port); tests use unique object names."""
    with daemon_in_temp_dir("na-api-") as d:
        yield d


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="session")
def kubeletplugin_driver() -> Path:
    """The DRA driver built on upstream's kubeletplugin helper (skips without go or the module proxy)."""
    return gotools.build_cached(FIXTURES / "kubeletplugin-driver", "kubeletplugin-driver")


@pytest.fixture(scope="session")
def clientgo() -> Path:
    """The client-go test program (skips without go or the module proxy)."""
    return gotools.build_cached(FIXTURES / "clientgo", "clientgo")
