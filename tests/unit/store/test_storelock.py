"""The store's lock notes an event loop's waits for it (store/storelock.py) and nobody else's."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from nodeagent.store import StoreBusy
from nodeagent.store.storelock import LoopWaits, StoreLock
from tests.storeholding import held_by_a_worker as held_store
from tests.unit.store.conftest import OpenStore


@contextmanager
def held_by_a_worker(lock: StoreLock, seconds: float) -> Iterator[None]:
    """`lock` taken by another thread, which lets it go after `seconds`."""
    inside = threading.Event()

    def hold() -> None:
        with lock:
            inside.set()
            threading.Event().wait(seconds)

    worker = threading.Thread(target=hold)
    worker.start()
    assert inside.wait(5)
    try:
        yield
    finally:
        worker.join()


async def test_a_wait_on_the_event_loop_is_counted_and_logged_with_its_caller(caplog: pytest.LogCaptureFixture) -> None:
    lock = StoreLock()
    caplog.set_level(logging.WARNING, "nodeagent.store.storelock")
    with held_by_a_worker(lock, 0.05), lock:
        pass
    assert lock.waits.count == 1 and 0.02 < lock.waits.longest == lock.waits.seconds
    [record] = caplog.records
    assert "event loop waited for the object store" in record.getMessage()
    assert "test_storelock.py" in record.getMessage()  # the caller, outside the store
    with held_by_a_worker(lock, 0.02), lock:
        pass
    assert lock.waits.count == 2 and len(caplog.records) == 1  # once per interval
    lock.waits = LoopWaits()
    with held_by_a_worker(lock, 0.002), lock:
        pass
    assert lock.waits.count == 1 and len(caplog.records) == 1  # counted, too short to log


def test_a_worker_threads_wait_and_an_uncontended_take_are_not_noted() -> None:
    lock = StoreLock()
    with held_by_a_worker(lock, 0.02), lock:  # no event loop runs in this thread: waiting is fine
        pass
    with lock, lock:  # re-entrant
        pass
    assert lock.waits.count == 0


async def test_a_non_blocking_take_refuses_at_once() -> None:
    lock = StoreLock()
    with held_by_a_worker(lock, 0.05):
        assert lock.acquire(blocking=False) is False
    assert lock.waits.count == 0


async def test_the_store_reports_its_loop_waits_behind_a_worker_threads_transaction(open_store: OpenStore) -> None:
    store = open_store()
    with held_store(store, longest=0.03):
        assert store.busy
        store.try_get("ConfigMap", "default", "x")  # on the event loop: waits for the worker's commit
    assert store.loop_waits.count == 1
    assert store.peek("ConfigMap", "default", "x") is None and store.loop_waits.count == 1  # lock-free


async def test_not_waiting_a_transaction_refuses_at_once_and_writes_nothing(open_store: OpenStore) -> None:
    store = open_store()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
    with held_store(store), store.not_waiting(), pytest.raises(StoreBusy):
        store.create(cm)
    assert store.loop_waits.count == 0 and store.peek("ConfigMap", "default", "x") is None
    store.create(cm)  # outside the block, as before
    assert store.peek("ConfigMap", "default", "x") is not None
