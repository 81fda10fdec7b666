"""A CronJob's schedule and timeZone checked at the API as validateCronJobSpec checks them, with the
texts of the controller's own parser (robfig/cron's) and of Go's time.LoadLocation."""

from __future__ import annotations

import pytest

from nodeagent.apiserver.strategies_apps import cron_errors


@pytest.mark.parametrize(("spec", "expected"), [
    ({"schedule": "*/5 * * * *"}, []),
    ({"schedule": "@hourly", "timeZone": "Europe/Paris"}, []),
    ({"schedule": "foo"}, ['spec.schedule: Invalid value: "foo": expected exactly 5 fields, found 1: [foo]']),
    ({"schedule": "TZ=UTC */5 * * * *"},
     ['spec.schedule: Invalid value: "TZ=UTC */5 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone '
      "field instead"]),
    ({"schedule": "* * * * *", "timeZone": ""},
     ['spec.timeZone: Invalid value: "": timeZone must be nil or non-empty string']),
    ({"schedule": "* * * * *", "timeZone": "../etc"},
     ['spec.timeZone: Invalid value: "../etc": unknown time zone ../etc']),
    ({"schedule": "* * * * *", "timeZone": "Mars/Phobos"},
     ['spec.timeZone: Invalid value: "Mars/Phobos": unknown time zone Mars/Phobos']),
    ({"schedule": "", "timeZone": None}, []),  # Required is the declarative check's (objects/workloads.py)
])
def test_cron_errors(spec: dict[str, object], expected: list[str]) -> None:
    assert [str(e) for e in cron_errors(spec)] == expected
