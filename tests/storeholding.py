"""A worker thread inside an object store transaction, as a huge pod's status write holds the store for
0.1-1 s (issue 25): for tests of what the event loop does meanwhile."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from nodeagent.store import ObjectStore


@contextlib.contextmanager
def held_by_a_worker(store: ObjectStore, longest: float = 5.0) -> Iterator[Callable[[], None]]:
    """`store`'s transaction taken by another thread for the `with` body (at most `longest` seconds, so
    code that waits for it on the loop fails a test rather than hanging it); the yielded call ends the
    transaction early and waits for the thread."""
    inside, leave = threading.Event(), threading.Event()

    def write() -> None:
        with store.transaction():
            inside.set()
            leave.wait(longest)

    worker = threading.Thread(target=write)
    worker.start()
    assert inside.wait(5), "the worker's transaction did not begin"

    def release() -> None:
        leave.set()
        worker.join()

    try:
        yield release
    finally:
        release()
