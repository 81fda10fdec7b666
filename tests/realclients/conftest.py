"""Fixtures of the real-clients tier: each published program built once per session (cached across runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realclients import programs


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of this folder carries the real_clients marker (so `-m real_clients` selects the tier)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.real_clients)


@pytest.fixture(scope="session")
def dra_example_driver() -> Path:
    """dra-example-kubeletplugin (dra-example-controller beside it)."""
    programs.require_tier()
    return programs.build(programs.DRA_EXAMPLE_DRIVER)


@pytest.fixture(scope="session")
def sample_device_plugin() -> Path:
    programs.require_tier()
    return programs.build(programs.SAMPLE_DEVICE_PLUGIN)


@pytest.fixture(scope="session")
def nfd_topology_updater() -> Path:
    programs.require_tier()
    return programs.build(programs.NFD_TOPOLOGY_UPDATER)


@pytest.fixture(scope="session")
def helm() -> Path:
    """The Helm CLI (helm.sh/helm/v3), for the charts the programs publish."""
    programs.require_tier()
    return programs.build(programs.HELM)
