"""nodeagent's cron schedules (controlplane/workloads/cron.py) against github.com/robfig/cron/v3 v3.0.1, the
parser kube-controller-manager v1.37.2's CronJob controller uses: the same next activation (or the same
error text) for every schedule form (fields, names, ranges, steps, descriptors, @every, TZ=/CRON_TZ=) from
random instants and around daylight-saving transitions in zones with gaps, overlaps and half-hour shifts.

Needs Go and the module proxy (tests/fixtures/cron-next); skipped with the reason otherwise.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from nodeagent.controlplane.workloads import cron
from tests.integration import gotools

pytestmark = [pytest.mark.integration]

MODULE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "cron-next"
SCHEDULES = (
    "* * * * *", "*/5 * * * *", "0 * * * *", "30 6-16/4 * * 1-5", "0 0 1 * *", "0 0 * * 0", "0 0 13 * 5",
    "15 2 * * *", "TZ=Europe/Berlin 30 2 * * *", "CRON_TZ=America/New_York 0 1 * * *",
    "TZ=America/Sao_Paulo 0 0 * * *", "@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly",
    "@annually", "@every 1h30m", "@every 90s", "@every 1.5m", "@every 300ms", "59 23 31 2 *", "0 0 29 2 *",
    "5 4 * jan,jun sun", "0 12 ? * MON-FRI", "1-10/3 * * * *", "5/15 * * * *", "0 0 31 * *",
    "TZ=Australia/Lord_Howe 0 2 * * *", "TZ=Europe/London 30 1 * * *", "TZ=Asia/Kolkata 0 9 * * *",
    "a * * * *", "* * * *", "60 * * * *", "*/0 * * * *", "5-2 * * * *", "1-2-3 * * * *", "*/2/3 * * * *",
    "@bogus", "@every x", "@every 5", "@every 1q", "TZ=Nowhere/City 0 * * * *", "0 0 * * 7", "-1 * * * *",
    "", "TZ=UTC", "0 0 * * sun-sat/2",
)
DST = ("TZ=Europe/Berlin 30 2 * * *", "TZ=Europe/Berlin 0 * * * *", "TZ=Europe/London 30 1 * * *",
       "TZ=America/New_York */30 * * * *", "TZ=Australia/Lord_Howe */10 * * * *")
TRANSITIONS = (1711846800, 1729987200, 1710054000, 1730613600, 1712415600, 1696089600)


@pytest.fixture(scope="module")
def robfig() -> Path:
    return gotools.build_cached(MODULE, "cron-next")


def ours(at: int, spec: str) -> str:
    try:
        when = cron.parse(spec).next(at)
    except cron.ScheduleError as err:
        return f"ERR {err}"
    return "ZERO" if when is None else str(int(when))


def test_next_activation_as_robfig_cron_computes_it(robfig: Path) -> None:
    rnd = random.Random(23)
    cases = [(rnd.randint(1_600_000_000, 1_900_000_000), s) for s in SCHEDULES if s for _ in range(40)]
    cases += [(1_700_000_000, "")]
    cases += [(base + d, s) for s in DST for base in TRANSITIONS for d in range(-7200, 7200, 599)]
    proc = subprocess.run([str(robfig)], input="".join(f"{t}|{s}\n" for t, s in cases), capture_output=True,
                          text=True, check=True, timeout=120)
    theirs = proc.stdout.splitlines()
    assert len(theirs) == len(cases)
    diffs = [(t, s, want, got) for (t, s), want in zip(cases, theirs, strict=True) if (got := ours(t, s)) != want]
    assert diffs == [], diffs[:10]
    assert ours(0, "") == "ERR empty spec string"
