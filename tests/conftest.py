"""Shared fixtures: short socket folders (unix path limit), fake clock, fresh metrics registry."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.clock import FakeClock

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


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
