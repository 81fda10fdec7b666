"""`nodeagent run` under cProfile, switched on by SIGUSR1 and written out by SIGUSR2 (bench/scheduler_peer.py's
--profile: only the measured batch is profiled, not the start or the init batch).

Usage: python bench/profiled_daemon.py OUT.prof run --config FILE (the arguments after OUT go to nodeagent's cli).
cProfile sees the event loop's thread only; the worker threads (big bodies, the store's SQLite commits
when offloaded) are not in the file.
OUT ending in `.mem`: no cProfile but tracemalloc from the start (NODEAGENT_TRACEMALLOC_FRAMES frames, default 8;
it slows the daemon about twice), and SIGUSR2 writes the snapshot of what is allocated then (after the run: what
the daemon keeps), for `python -m tracemalloc`-style reading with tracemalloc.Snapshot.load.
"""

from __future__ import annotations

import cProfile
import signal
import sys
import time
import tracemalloc
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    out, argv = sys.argv[1], sys.argv[2:]
    if out.endswith(".mem"):
        import os

        tracemalloc.start(int(os.environ.get("NODEAGENT_TRACEMALLOC_FRAMES") or 8))

        def snapshot(_sig: int, _frame: FrameType | None) -> None:
            tracemalloc.take_snapshot().dump(out)

        signal.signal(signal.SIGUSR1, lambda _sig, _frame: None)
        signal.signal(signal.SIGUSR2, snapshot)
        from nodeagent.cli import main as cli_main

        return cli_main(argv)
    prof = cProfile.Profile(time.process_time)  # CPU time: the machine's load does not move the figures

    def start(_sig: int, _frame: FrameType | None) -> None:
        prof.enable()

    def stop(_sig: int, _frame: FrameType | None) -> None:
        prof.disable()
        prof.dump_stats(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    from nodeagent.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
