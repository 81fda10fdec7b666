"""gotools.build_cached: a Go fixture is built once per source state and reused from outside the repo."""

from __future__ import annotations

import fcntl
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

import pytest

from tests.integration import gotools

pytestmark = [pytest.mark.skipif(gotools.go_binary() is None, reason="`go` is not installed")]


def _module(root: Path, message: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "go.mod").write_text("module example.test/hello\n\ngo 1.22\n")
    (root / "main.go").write_text(f'package main\n\nimport "fmt"\n\nfunc main() {{ fmt.Println("{message}") }}\n')
    return root


def test_reused_while_the_sources_stay_and_rebuilt_when_they_change(tmp_path: Path) -> None:
    module, cache = _module(tmp_path / "hello", "one"), tmp_path / "cache"
    first = gotools.build_cached(module, "hello", timeout=120, cache=cache)
    assert first.is_file() and first.is_relative_to(cache)
    stamp = first.stat().st_mtime_ns
    again = gotools.build_cached(module, "hello", timeout=120, cache=cache)
    assert again == first and again.stat().st_mtime_ns == stamp  # not built again
    _module(module, "two")
    changed = gotools.build_cached(module, "hello", timeout=120, cache=cache)
    assert changed != first and changed.is_file()
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []  # no staging dir left behind


def test_a_build_past_the_ci_deadline_skips_and_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """.ci/run sets a wall-clock deadline for Go builds; a build that cannot start before it skips, naming it."""
    module, cache = _module(tmp_path / "late", "late"), tmp_path / "cache"
    monkeypatch.setenv(gotools.DEADLINE_ENV, "1")  # long past
    with pytest.raises(pytest.skip.Exception, match=gotools.DEADLINE_ENV):
        gotools.build_cached(module, "late", timeout=120, cache=cache)
    assert not any(cache.glob("late-*"))


def test_builders_at_once_build_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two builders of one fixture at once (two pytest-xdist workers, or two sessions) run one build: the second
    finds the build lock held, waits, and then takes the first one's binary from the cache."""
    module, cache = _module(tmp_path / "once", "once"), tmp_path / "cache"
    building, refused, release = threading.Event(), threading.Event(), threading.Event()
    builds: list[Path] = []

    def held_build(module_dir: Path, out_dir: Path, name: str | None = None, timeout: float = 540,
                   ldflags: Sequence[str] = (), packages: Sequence[str] = ()) -> Path:
        builds.append(out_dir)
        building.set()
        assert release.wait(30), "the test never let the build finish"
        binary = out_dir / (name or module_dir.name)
        binary.write_text("#!/bin/sh\n")
        return binary

    class SpyFcntl:
        """fcntl as gotools uses it, noting when a build lock is found held."""
        LOCK_EX, LOCK_NB, LOCK_UN = fcntl.LOCK_EX, fcntl.LOCK_NB, fcntl.LOCK_UN

        def flock(self, f: IO[str], op: int) -> None:
            try:
                fcntl.flock(f, op)
            except BlockingIOError:
                refused.set()
                raise

    monkeypatch.setattr(gotools, "build", held_build)
    monkeypatch.setattr(gotools, "fcntl", SpyFcntl())
    monkeypatch.setattr(gotools, "LOCK_POLL", 0.01)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(gotools.build_cached, module, "once", 120, cache)
        assert building.wait(30)
        second = pool.submit(gotools.build_cached, module, "once", 120, cache)
        assert refused.wait(30), "the second builder did not meet the first one's lock"
        release.set()
        assert first.result(30) == second.result(30)
    assert len(builds) == 1
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []  # no staging dir left behind


def test_a_waiter_gives_up_at_the_ci_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build lock held past .ci/run's deadline for Go builds: the waiter skips, saying who holds it and why."""
    module, cache = _module(tmp_path / "stuck", "stuck"), tmp_path / "cache"
    monkeypatch.setattr(gotools, "build", lambda *a, **k: pytest.fail("built while another process held the lock"))
    key = gotools._source_key(gotools.go_binary() or "go", module, ())
    (cache / "locks").mkdir(parents=True)
    with (cache / "locks" / f"stuck-{key}.lock").open("a") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        monkeypatch.setenv(gotools.DEADLINE_ENV, "1")  # long past
        with pytest.raises(pytest.skip.Exception, match=f"being built by another process.*{gotools.DEADLINE_ENV}"):
            gotools.build_cached(module, "stuck", timeout=120, cache=cache)
