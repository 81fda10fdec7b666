"""Fixtures of the integration tier: one daemon serving the Kubernetes API for the API tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.daemon_helpers import Daemon, running_daemon
from tests.integration.kubeapiserver import kube_apiserver, kube_apiserver_binary  # noqa: F401  (fixtures)


@pytest.fixture(scope="session")
def api_daemon() -> Iterator[Daemon]:
    """A daemon with the control plane and its API (a free port); tests use unique object names."""
    base = Path(tempfile.mkdtemp(prefix="na-api-", dir="/tmp"))
    try:
        with running_daemon(base) as d:
            yield d
    finally:
        shutil.rmtree(base, ignore_errors=True)
