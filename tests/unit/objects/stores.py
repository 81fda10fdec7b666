"""An admission store for the unit tests of the kinds' strategies: every admitted kind under the
given feature gates, on a real clock, closed when the test is done."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import RealClock


@contextlib.contextmanager
def admission_store(path: Path, gates: Mapping[str, bool] | None = None) -> Iterator[ObjectStore]:
    store = ObjectStore(path, admitted_kinds(gates) if gates is not None else admitted_kinds(), RealClock())
    try:
        yield store
    finally:
        store.close()
