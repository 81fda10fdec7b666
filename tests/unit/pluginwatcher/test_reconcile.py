"""The pure plugin-watcher core: plan(desired, actual) and the per-socket Backoff."""

from __future__ import annotations

import pytest

from nodeagent.pluginwatcher.model import Backoff, PluginInfo, RegisteredPlugin, SocketFile
from nodeagent.pluginwatcher.reconcile import Register, Unregister, plan


def sock(path: str, gen: int = 1) -> SocketFile:
    return SocketFile(path, (gen, gen))


def reg(path: str, gen: int = 1) -> RegisteredPlugin:
    return RegisteredPlugin(sock(path, gen), PluginInfo("DRAPlugin", "d", "/e", ("v1.DRAPlugin",), path))


def describe(ops: list[Register | Unregister]) -> list[str]:
    return [f"{'+' if isinstance(op, Register) else '-'}{op.key}" for op in ops]


@pytest.mark.parametrize(
    ("desired", "actual", "expected"),
    [
        ({}, {}, []),
        ({"/r/a": sock("/r/a")}, {}, ["+/r/a"]),
        ({}, {"/r/a": reg("/r/a")}, ["-/r/a"]),
        ({"/r/a": sock("/r/a")}, {"/r/a": reg("/r/a")}, []),
        # re-created under the same path: out with the old, in with the new
        ({"/r/a": sock("/r/a", 2)}, {"/r/a": reg("/r/a", 1)}, ["-/r/a", "+/r/a"]),
        # removals first, then additions, each sorted by path
        (
            {"/r/c": sock("/r/c"), "/r/b": sock("/r/b"), "/r/keep": sock("/r/keep")},
            {"/r/z": reg("/r/z"), "/r/y": reg("/r/y"), "/r/keep": reg("/r/keep")},
            ["-/r/y", "-/r/z", "+/r/b", "+/r/c"],
        ),
    ],
)
def test_plan(
    desired: dict[str, SocketFile], actual: dict[str, RegisteredPlugin], expected: list[str]
) -> None:
    assert describe(plan(desired, actual)) == expected


def test_plan_is_idempotent_once_applied() -> None:
    desired = {"/r/a": sock("/r/a"), "/r/b": sock("/r/b")}
    actual: dict[str, RegisteredPlugin] = {}
    for op in plan(desired, actual):
        assert isinstance(op, Register)
        actual[op.key] = RegisteredPlugin(op.socket, reg(op.key).info)
    assert plan(desired, actual) == []


def test_backoff_doubles_to_cap_and_resets() -> None:
    b = Backoff(initial=0.5, cap=2.0)
    assert b.ready("k", 0.0)
    assert b.failed("k", 0.0) == 0.5
    assert not b.ready("k", 0.49)
    assert b.ready("k", 0.5)
    assert b.failed("k", 0.5) == 1.0
    assert b.failed("k", 1.5) == 2.0
    assert b.failed("k", 3.5) == 2.0  # capped
    assert not b.ready("k", 5.4) and b.ready("k", 5.5)
    assert b.ready("other", 0.0)  # keys are independent
    b.succeeded("k")
    assert b.ready("k", 0.0)
    assert b.failed("k", 10.0) == 0.5  # starts afresh


def test_backoff_forgets_gone_keys() -> None:
    b = Backoff()
    b.failed("gone", 0.0)
    b.failed("kept", 0.0)
    b.forget_except({"kept": object()})
    assert set(b.pending()) == {"kept"}
    assert b.ready("gone", 0.0)


def test_default_backoff_is_the_kubelets() -> None:
    b = Backoff()
    delays = [b.failed("k", 0.0) for _ in range(10)]
    assert delays[:3] == [0.5, 1.0, 2.0]
    assert delays[-1] == 122.0
