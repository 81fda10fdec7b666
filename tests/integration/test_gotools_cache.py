"""gotools.build_cached: a Go fixture is built once per source state and reused from outside the repo."""

from __future__ import annotations

from pathlib import Path

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
