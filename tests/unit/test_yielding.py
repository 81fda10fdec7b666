"""util/yielding.py: where a long pass on the event loop gives it up, and the one-at-a-time worker calls
(issue 25: no single request delays a /healthz or pod-resources answer by more than 100 ms)."""

from __future__ import annotations

import asyncio
import threading
import time

from nodeagent.util.yielding import CHUNK, LEAST, chunked, pure_call, sized_call


async def _turns_at_each_item(count: int, budget: float | None, slow: bool = False,
                              breath: float = 0.0) -> list[int]:
    """The loop turns another task saw before each item of a chunked pass over `count` items (`slow`:
    1 ms of work per item)."""
    turns = 0

    async def other() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    task = asyncio.ensure_future(other())
    await asyncio.sleep(0)
    seen = []
    async for _ in chunked(range(count), budget=budget, breath=breath):
        if slow:
            time.sleep(0.001)
        seen.append(turns)
    task.cancel()
    return seen


def _yields(seen: list[int]) -> list[int]:
    return [i for i in range(1, len(seen)) if seen[i] != seen[i - 1]]


def test_a_paced_pass_yields_once_its_budget_is_spent_after_least_items() -> None:
    # budget 0: spent at once, so a turn after every LEAST items
    assert _yields(asyncio.run(_turns_at_each_item(3 * LEAST + 5, 0.0))) == [LEAST, 2 * LEAST, 3 * LEAST]
    # no budget: by count only, as before
    assert _yields(asyncio.run(_turns_at_each_item(CHUNK + 5, None))) == [CHUNK]
    # a budget not spent: by count only
    assert _yields(asyncio.run(_turns_at_each_item(CHUNK + 5, 60.0))) == [CHUNK]


def test_a_paced_pass_lets_the_loop_turn_back_to_back_for_a_breath_an_unpaced_one_for_one_turn() -> None:
    """A gRPC answer needs about ten loop turns: a paced pass back in each of them delayed it ten times."""
    paced = asyncio.run(_turns_at_each_item(2 * LEAST, 0.0, breath=0.05))
    assert paced[LEAST] - paced[LEAST - 1] >= 3  # 50 ms of the other task's turns
    unpaced = asyncio.run(_turns_at_each_item(CHUNK + 1, None, breath=0.05))
    assert unpaced[CHUNK] - unpaced[CHUNK - 1] == 1


def test_a_small_pass_never_yields_however_slow_the_machine() -> None:
    assert _yields(asyncio.run(_turns_at_each_item(LEAST, 0.0, slow=True))) == []
    assert _yields(asyncio.run(_turns_at_each_item(LEAST + 1, 0.0, slow=True))) == [LEAST]


def test_pure_calls_run_in_worker_threads_one_at_a_time() -> None:
    lock, active, most, threads = threading.Lock(), [0], [0], set()

    def work(n: int, *, twice: bool) -> int:
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
            threads.add(threading.get_ident())
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return 2 * n if twice else n

    async def scenario() -> list[int]:
        return list(await asyncio.gather(*(pure_call(work, n, twice=True) for n in range(4)),
                                         sized_call(CHUNK + 1, lambda: work(9, twice=False))))

    loop_thread = threading.get_ident()
    assert asyncio.run(scenario()) == [0, 2, 4, 6, 9]
    assert most[0] == 1
    assert loop_thread not in threads
