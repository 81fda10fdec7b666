"""Fixtures for the object store tests: a store in a real SQLite file under tmp_path."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nodeagent.store import KindRegistry, ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.unit.store.builders import claim_spec_immutable, validate_claim

OpenStore = Callable[..., ObjectStore]


@pytest.fixture
def kinds() -> KindRegistry:
    return builtin_kinds().with_hooks(
        {"ResourceClaim": {"validate": validate_claim, "validate_update": claim_spec_immutable}}
    )


@pytest.fixture
def open_store(tmp_path: Path, kinds: KindRegistry, fake_clock: FakeClock) -> Iterator[OpenStore]:
    """Open (or reopen) the store file; every store opened is closed at the end."""
    opened: list[ObjectStore] = []

    def _open(**kwargs: Any) -> ObjectStore:
        kwargs.setdefault("rng", random.Random(len(opened)))
        store = ObjectStore(tmp_path / "objects.db", kinds, fake_clock, **kwargs)
        opened.append(store)
        return store

    yield _open
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: OpenStore) -> ObjectStore:
    return open_store()
