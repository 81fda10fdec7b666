"""A registry over an in-memory store with every hook the daemon's store has (objects/kinds.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nodeagent.apiserver.catalog import Catalog, Resource, builtin_resources
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.registry import Registry
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock

CATALOG = Catalog(builtin_resources())
DEFS = builtin_definitions()


def res(plural: str, group: str = "", version: str = "v1") -> Resource:
    found = CATALOG.find(group, version, plural)
    assert found is not None, plural
    return found


@pytest.fixture
def reg() -> Registry:
    clock = FakeClock()
    store = ObjectStore.memory(admitted_kinds(), clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return Registry(store, Catalog(builtin_resources()), DEFS, builtin_strategies(), clock)


def failure(call: Callable[[], object]) -> APIError:
    with pytest.raises(APIError) as err:
        call()
    return err.value
