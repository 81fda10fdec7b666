"""The runner's selection, timeouts and failure capture; the JUnit report read back by junitparser; CDI rules."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml, Skipped

from nodeagent.conformance import cdi
from nodeagent.conformance.model import Case, Outcome, Result, check, skip
from nodeagent.conformance.report import TerminalReporter, write_junit
from nodeagent.conformance.runner import SelectionError, exit_status, run_suite, select


class Ctx:
    def __init__(self, gaps: Mapping[str, str] | None = None) -> None:
        self._gaps = dict(gaps or {})
        self.cleanups = 0

    def gaps(self) -> Mapping[str, str]:
        return self._gaps

    async def after_case(self) -> None:
        self.cleanups += 1


async def ok(ctx: Ctx) -> None:
    return None


async def broken(ctx: Ctx) -> None:
    answered = 2
    check(answered == 1, "the plugin answered 2 devices, want 1")


async def crashes(ctx: Ctx) -> None:
    raise KeyError("ID")


async def hangs(ctx: Ctx) -> None:
    await asyncio.sleep(10)


async def skips(ctx: Ctx) -> None:
    skip("no devices")


CASES = [
    Case("a/ok", "passes", ok), Case("a/broken", "fails", broken), Case("b/crashes", "raises", crashes),
    Case("b/hangs", "hangs", hangs, timeout=0.05), Case("c/skips", "skips", skips),
    Case("c/needs", "needs health", ok, frozenset({"health"})),
]


@pytest.mark.parametrize(("run", "skip_", "names"), [
    (None, None, [c.name for c in CASES]),
    ("^a/", None, ["a/ok", "a/broken"]),
    (None, "hangs|crash", ["a/ok", "a/broken", "c/skips", "c/needs"]),
    ("b/", "hangs", ["b/crashes"]),
])
def test_select(run: str | None, skip_: str | None, names: list[str]) -> None:
    assert [c.name for c in select(CASES, run, skip_)] == names


def test_bad_pattern_is_a_selection_error() -> None:
    with pytest.raises(SelectionError, match="--skip"):
        select(CASES, None, "(")


async def test_every_outcome_is_a_result_and_cleanup_runs(tmp_path: Path) -> None:
    ctx = Ctx({"health": "no DRAResourceHealth advertised"})
    out = io.StringIO()
    results = await run_suite(CASES, ctx, TerminalReporter(out), timeout=5)
    got = {r.name: (r.outcome, r.message) for r in results}
    assert got["a/ok"] == (Outcome.PASS, "")
    assert got["a/broken"] == (Outcome.FAIL, "the plugin answered 2 devices, want 1")
    assert got["b/crashes"] == (Outcome.FAIL, "KeyError: 'ID'")
    assert got["b/hangs"] == (Outcome.FAIL, "no result within the case timeout of 0.05s")
    assert got["c/skips"] == (Outcome.SKIP, "no devices")
    assert got["c/needs"] == (Outcome.SKIP, "health: no DRAResourceHealth advertised")
    assert ctx.cleanups == len(CASES)
    assert exit_status(results) == 1 and exit_status([r for r in results if r.outcome is not Outcome.FAIL]) == 0
    text = out.getvalue()
    assert "[1/6] a/ok ... PASS" in text and "contract: fails" in text

    path = tmp_path / "out" / "junit.xml"
    write_junit(path, "dra-driver", results)
    xml = JUnitXml.fromfile(str(path))
    (suite,) = list(xml)
    assert (suite.tests, suite.failures, suite.skipped, suite.errors) == (6, 3, 2, 0)
    cases = {c.name: c for c in suite}
    (failure,) = cases["a/broken"].result
    assert isinstance(failure, Failure) and failure.message == "the plugin answered 2 devices, want 1"
    assert cases["a/broken"].classname == "dra-driver.a"
    (skipped,) = cases["c/needs"].result
    assert isinstance(skipped, Skipped) and "health" in (skipped.message or "")
    assert cases["a/ok"].result == []


def _spec(tmp_path: Path, doc: object, name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


GOOD = {"cdiVersion": "0.6.0", "kind": "example.com/gpu",
        "devices": [{"name": "uid-gpu-0", "containerEdits": {"env": ["A=1"]}}]}


@pytest.mark.parametrize(("change", "error"), [
    ({}, None),
    ({"cdiVersion": "six"}, "cdiVersion"),
    ({"kind": "gpu"}, "is not vendor/class"),
    ({"devices": []}, "non-empty"),
    ({"devices": [{"name": "-bad", "containerEdits": {"env": ["A=1"]}}]}, "not a valid CDI device name"),
    ({"devices": [{"name": "a"}]}, "no containerEdits"),
    ({"devices": [{"name": "a"}], "containerEdits": {"deviceNodes": [{"path": "/dev/x"}]}}, None),
    ({"devices": [{"name": "a", "containerEdits": {"env": ["A"]}}] * 2}, "duplicate"),
])
def test_cdi_spec_rules(tmp_path: Path, change: dict[str, object], error: str | None) -> None:
    path = _spec(tmp_path, {**GOOD, **change})
    if error is None:
        assert cdi.parse_spec(path).kind == "example.com/gpu"
    else:
        with pytest.raises(ValueError, match=error):
            cdi.parse_spec(path)


def test_cdi_ids_resolve(tmp_path: Path) -> None:
    specs = [cdi.parse_spec(_spec(tmp_path, GOOD))]
    assert cdi.resolve(["example.com/gpu=uid-gpu-0"], specs)["example.com/gpu=uid-gpu-0"].path.name == "s.json"
    with pytest.raises(ValueError, match="defined in no CDI spec"):
        cdi.resolve(["example.com/gpu=other"], specs)
    with pytest.raises(ValueError, match="not vendor/class=name"):
        cdi.resolve(["uid-gpu-0"], specs)


def test_result_area() -> None:
    assert Result("prepare/idempotent", "", Outcome.PASS).area == "prepare"
