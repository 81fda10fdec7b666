"""Shared fixtures: short socket folders (unix path limit), fake clock, fresh metrics registry; tier markers.

Each test is marked with its tier from the folder it lives in (tests/unit -> `unit`, tests/rpc ->
`rpc`, tests/linux -> `linux`, tests/integration -> `integration`), so `pytest -m unit` selects
exactly what `pytest tests/unit` runs and a new test file cannot forget its marker.

Hypothesis profiles set how many examples every property test tries (no test hard-codes a count):
`dev`, the default, a quick 10 for the edit-test loop; `ci` (HYPOTHESIS_PROFILE=ci, set by .ci/run)
the full 200 with the failing example's reproduction blob printed; neither has a per-example deadline (a loaded
machine would fail on timing alone; the per-test timeout still holds).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from prometheus_client import CollectorRegistry

from nodeagent.util.clock import FakeClock

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
settings.register_profile("dev", max_examples=10, deadline=None)  # a loaded machine is not a failure
settings.register_profile("ci", max_examples=200, print_blob=True, deadline=None)  # timing: pytest-timeout
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

TIERS = ("unit", "rpc", "linux", "integration")  # the folders under tests/, each a registered marker


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = REPO / "tests"
    for item in items:
        parts = item.path.relative_to(tests).parts if item.path.is_relative_to(tests) else ()
        if parts and parts[0] in TIERS:
            item.add_marker(parts[0])
    # Files marked `long` first (a stable sort: the order is otherwise kept). `make test TEST_WORKERS=auto`
    # hands whole files to its xdist workers in collection order; mypy's minute (tests/unit/test_lint.py),
    # collected late, would otherwise run alone at the end while the other workers idle.
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short temporary folder for unix sockets (tmp_path is often over 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="na-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


def is_root() -> bool:
    return os.geteuid() == 0
