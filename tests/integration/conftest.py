"""Fixtures of the integration tier: one daemon serving the Kubernetes API for the API tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.daemon_helpers import Daemon, daemon_in_temp_dir
from tests.integration.kubeapiserver import kube_apiserver, kube_apiserver_binary  # noqa: F401  (fixtures)


@pytest.fixture(scope="session")
def api_daemon() -> Iterator[Daemon]:
    """A daemon with the control plane and its API (a free port); tests use unique object names."""
    with daemon_in_temp_dir("na-api-") as d:
        yield d
