"""string() in cel-go's words (nodeagent/cel/gostrings.py): the expected texts are what Go v1.37.2's
toolchain prints for the same values (fmt %g, strconv 'f' -1, time.RFC3339Nano), and what CEL programs
compiled by the three compile paths (CRD rules, admission policies, device selectors) answer."""

from __future__ import annotations

import datetime as dt

import pytest

from nodeagent.cel import checker as C
from nodeagent.cel import gostrings
from nodeagent.cel.admission import Declarations, compile_expression
from nodeagent.cel.crdrules import compile_rule

UTC = dt.UTC


@pytest.mark.parametrize(("value", "text"), [
    (1e20, "1e+20"), (0.1, "0.1"), (1.0, "1"), (-0.0, "-0"), (1e-7, "1e-07"), (123456789012.0, "1.23456789012e+11"),
    (2.0 / 3.0, "0.6666666666666666"), (100000.0, "100000"), (1e6, "1e+06"), (1234567.0, "1.234567e+06"),
    (0.0001, "0.0001"), (0.00001, "1e-05"), (1.5e300, "1.5e+300"), (5e-324, "5e-324"), (float("nan"), "NaN"),
    (float("-inf"), "-Inf"),
    (dt.timedelta(seconds=90), "90s"), (dt.timedelta(milliseconds=-1500), "-1.5s"), (dt.timedelta(0), "0s"),
    (dt.timedelta(hours=1), "3600s"), (dt.timedelta(microseconds=1500), "0.0015s"),
    (dt.timedelta(microseconds=-1), "-0.000001s"),
    (dt.datetime(2026, 1, 1, tzinfo=dt.timezone(dt.timedelta(minutes=90))), "2026-01-01T00:00:00+01:30"),
    (dt.datetime(2026, 1, 1, 0, 0, 0, 120000, tzinfo=UTC), "2026-01-01T00:00:00.12Z"),
    (dt.datetime(2026, 1, 1, tzinfo=dt.timezone(-dt.timedelta(hours=5))), "2026-01-01T00:00:00-05:00"),
    (True, "true"), (7, "7"), (b"ab", "ab"), ("s", "s"),
])
def test_go_string(value: object, text: str) -> None:
    assert gostrings.go_string(value) == text


def test_invalid_utf8_bytes() -> None:
    with pytest.raises(ValueError, match="invalid UTF-8 in bytes, cannot convert to string"):
        gostrings.go_string(b"\xff")


def test_rewrite_leaves_literals_methods_and_other_names() -> None:
    got = gostrings.rewrite("string(a) + 'string(' + \"string(\" + x.string(1) + mystring(2) + string (3)")
    assert got == ("__nodeagent_string(a) + 'string(' + \"string(\" + x.string(1) + mystring(2) + "
                   "__nodeagent_string (3)")
    assert gostrings.rewrite("'string(' + a") is None


def test_programs_convert_as_cel_go() -> None:
    expr = "string(timestamp('2026-01-01T00:00:00Z')) + ' ' + string(duration('90s')) + ' ' + string(1e20)"
    want = "2026-01-01T00:00:00Z 90s 1e+20"
    assert compile_expression(expr, Declarations(), "string").evaluate({}) == want
    rule = compile_rule(expr, C.STRING, {}, optional_old_self=False, message=True)
    assert rule.evaluate("x", None, False, False) == want
