"""Fixtures of the integration tier: one daemon serving the Kubernetes API for the API tests, and the Go
fixtures' binaries.

Each Go fixture is built once per session, through gotools.build_cached (so once per source state
across sessions too): the kubeletplugin driver was built twice per session before, by
test_kubeletplugin_driver.py and test_conformance.py, uncached in both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.integration import gotools
from tests.integration.daemon_helpers import BIN, Daemon, daemon_in_temp_dir
from tests.integration.kubeapiserver import kube_apiserver, kube_apiserver_binary  # noqa: F401  (fixtures)

if TYPE_CHECKING:
    from tests.integration.test_real_control_plane import RealCP


@pytest.fixture(scope="session")
def api_daemon() -> Iterator[Daemon]:
    """A daemon with the control plane and its API (a free port); tests use unique object names."""
    with daemon_in_temp_dir("na-api-") as d:
        yield d


@pytest.fixture(params=["embedded", pytest.param("real", marks=pytest.mark.kube_apiserver)])
def realcp_twin(request: pytest.FixtureRequest, short_dir: Path) -> Iterator[tuple[RealCP, bool]]:
    """The same daemon (its node and two virtual nodes) on the embedded control plane, and, in the
    kube-apiserver tier, on the real one (controlPlane.kubernetes): (daemon, real), stopped after
    the test, its log printed for a failed one."""
    from tests.integration.kubeapiserver import fixture_binary
    from tests.integration.test_real_control_plane import RealCP

    real = request.param == "real"
    for tool in ("nodeagent-device-plugin", "nodeagent-dra-driver"):
        if not (BIN / tool).exists():
            pytest.skip(f"{tool} is not installed in this environment")
    daemon = RealCP(short_dir, fixture_binary() if real else None)
    try:
        yield daemon, real
    finally:
        if daemon.proc is not None:
            daemon.stop()
        print(daemon.log()[-8000:])  # shown for a failed test


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="session")
def kubeletplugin_driver() -> Path:
    """The DRA driver built on upstream's kubeletplugin helper (skips without go or the module proxy)."""
    return gotools.build_cached(FIXTURES / "kubeletplugin-driver", "kubeletplugin-driver")


@pytest.fixture(scope="session")
def clientgo() -> Path:
    """The client-go test program (skips without go or the module proxy)."""
    return gotools.build_cached(FIXTURES / "clientgo", "clientgo")
