"""A pod of more than util.yielding.CHUNK containers has its record committed, and deleted, in a worker
thread, not on the event loop (issue 25: a 10,000-container pod's record held the loop 0.3-1.5 s per
status change); a small pod's stays on the loop. Either way the record is durable before the manager
answers, and a restarted manager reads the big pod back as it was."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nodeagent.objects.pod.model import RUNNING
from nodeagent.state.db import StateDB, Txn
from nodeagent.util.clock import FakeClock
from nodeagent.util.yielding import CHUNK

from .fakes import make_pod
from .test_manager import build


class ThreadNotingDB(StateDB):
    """A StateDB that notes, per write, whether it ran on the test's (event loop's) thread."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.loop_thread = threading.get_ident()
        self.writes: list[bool] = []  # True: on the loop's thread

    @contextmanager
    def transaction(self) -> Iterator[Txn]:
        self.writes.append(threading.get_ident() == self.loop_thread)
        with super().transaction() as txn:
            yield txn


async def test_a_big_pods_record_is_written_off_the_loop(tmp_path: Path, fake_clock: FakeClock) -> None:
    db = ThreadNotingDB(tmp_path / "state.db")
    rig = build(db, fake_clock)
    big = make_pod("big", fake_clock, cpu="1", containers=CHUNK + 1)
    try:
        await rig.manager.apply(big)
        assert db.writes and not any(db.writes), db.writes  # admission's commit and record: a worker's
        assert rig.manager.status(big.uid).phase == RUNNING
        assert db.get("pods", big.uid) is not None  # durable before apply returned
        db.writes.clear()
        small = make_pod("small", fake_clock, cpu="1")
        await rig.manager.apply(small)
        assert db.writes and all(db.writes), db.writes
        before = rig.manager.list()
    finally:
        await rig.manager.close()
        db.close()

    second = build(ThreadNotingDB(tmp_path / "state.db"), fake_clock)
    try:
        assert await second.manager.restore() == 2
        assert second.manager.list() == before
        assert len(second.manager.status(big.uid).container_statuses) == CHUNK + 1
        assert {p.name for p in second.manager.active_pods()} == {"big", "small"}
        assert isinstance(second.db, ThreadNotingDB)
        second.db.writes.clear()
        await second.manager.delete("default", "big")
        assert second.db.writes and not any(second.db.writes), second.db.writes
        assert second.db.get("pods", big.uid) is None
        assert [p.name for p in second.manager.active_pods()] == ["small"]
    finally:
        await second.manager.close()
        second.db.close()
