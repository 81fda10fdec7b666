"""Cron schedules as the CronJob controller reads them: github.com/robfig/cron/v3's ParseStandard
(five fields, names, ranges, steps, `?`, the @yearly/@annually/@monthly/@weekly/@daily/@midnight/
@hourly descriptors, `@every <Go duration>` and a `TZ=`/`CRON_TZ=` prefix) and its Next.

Why our own: kube-controller-manager v1.37.2 parses spec.schedule with that library
(pkg/util/parsers.ParseCronScheduleWithPanicRecovery), and when a Job runs, its name and the CronJob's
lastScheduleTime come from Next's answer, so the field bits, the day-of-month/day-of-week rule (both
must match when either is `*`, else either) and the walk over months, days, hours and minutes with its
daylight-saving corrections are reproduced here, error texts included. Times are epoch seconds; local
wall clocks come from zoneinfo, converted the way Go's time.Date picks an offset in a gap or an
overlap. Pure: no I/O beyond the zoneinfo database.

Intended difference: a schedule without a zone runs in `default_zone` (UTC by default), where
kube-controller-manager uses its host's local zone (UTC in the usual container image).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

UTC = dt.UTC
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
STAR = 1 << 63
"""robfig's starBit: the field was `*` or `?` (matters for the day rule)."""


class ScheduleError(ValueError):
    """A schedule robfig/cron refuses; the text is its error's."""


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: tuple[str, ...] = ()
    """Names from `low` up (jan=1..., sun=0...)."""


MINUTES, HOURS, DOM = _Bounds(0, 59), _Bounds(0, 23), _Bounds(1, 31)
MONTHS = _Bounds(1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))
DOW = _Bounds(0, 6, ("sun", "mon", "tue", "wed", "thu", "fri", "sat"))


def _bits(low: int, high: int, step: int = 1) -> int:
    return sum(1 << i for i in range(low, high + 1, step))


def _all(b: _Bounds) -> int:
    return _bits(b.low, b.high) | STAR


def load_zone(name: str) -> dt.tzinfo:
    """time.LoadLocation: "" and "UTC" are UTC; an unknown name raises with Go's text."""
    if name in ("", "UTC"):
        return UTC
    try:
        if name.startswith("/") or ".." in name:
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ScheduleError(f"unknown time zone {name}") from err


class Schedule:
    """A parsed schedule: `next(t)` is the first activation strictly after `t` (None: none in five years)."""

    def next(self, t: float) -> float | None:
        raise NotImplementedError


@dataclass(frozen=True)
class Every(Schedule):
    """ConstantDelaySchedule: `@every d`, d in whole seconds (at least 1)."""

    delay: int

    def next(self, t: float) -> float | None:
        return math.floor(t) + self.delay


@dataclass(frozen=True)
class Spec(Schedule):
    """SpecSchedule with robfig's standard second field (0 only)."""

    minute: int
    hour: int
    dom: int
    month: int
    dow: int
    zone: dt.tzinfo

    def _local(self, t: int) -> dt.datetime:
        return (_EPOCH + dt.timedelta(seconds=t)).astimezone(self.zone)

    def _offset(self, t: int) -> int:
        off = self._local(t).utcoffset()
        return int(off.total_seconds()) if off is not None else 0

    def _date(self, y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0) -> int:
        """time.Date in the zone: out-of-range months and days normalised, and a wall time in a gap or an
        overlap given the offset Go's Date picks (the one in force at the wall time read as UTC, unless
        the instant that gives lies outside that offset's period)."""
        y, mo = y + (mo - 1) // 12, (mo - 1) % 12 + 1
        day = dt.datetime(y, mo, 1) + dt.timedelta(days=d - 1, hours=h, minutes=mi, seconds=s)
        wall = int((day - dt.datetime(1970, 1, 1)).total_seconds())
        return wall - self._offset(wall - self._offset(wall))

    def _add_date(self, t: int, months: int = 0, days: int = 0) -> int:
        lt = self._local(t)
        return self._date(lt.year, lt.month + months, lt.day + days, lt.hour, lt.minute, lt.second)

    def _day_matches(self, lt: dt.datetime) -> bool:
        dom = bool(1 << lt.day & self.dom)
        dow = bool(1 << (lt.weekday() + 1) % 7 & self.dow)
        if self.dom & STAR or self.dow & STAR:
            return dom and dow
        return dom or dow

    def next(self, t: float) -> float | None:
        """robfig's one walk (months, days, hours, minutes, each wrapping back to the start), kept whole
        so it reads against upstream's."""
        cur = math.floor(t) + 1
        added = False
        year_limit = self._local(cur).year + 5
        while True:  # robfig's WRAP label
            lt = self._local(cur)
            if lt.year > year_limit:
                return None
            wrapped = False
            while not 1 << lt.month & self.month:
                if not added:
                    added = True
                    cur = self._date(lt.year, lt.month, 1)
                cur = self._add_date(cur, months=1)
                lt = self._local(cur)
                if lt.month == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self._day_matches(lt):
                if not added:
                    added = True
                    cur = self._date(lt.year, lt.month, lt.day)
                cur = self._add_date(cur, days=1)
                lt = self._local(cur)
                if lt.hour != 0:  # midnight moved by daylight saving
                    cur += (24 - lt.hour) * 3600 if lt.hour > 12 else -lt.hour * 3600
                    lt = self._local(cur)
                if lt.day == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not 1 << lt.hour & self.hour:
                if not added:
                    added = True
                    cur = self._date(lt.year, lt.month, lt.day, lt.hour)
                cur += 3600
                lt = self._local(cur)
                if lt.hour == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not 1 << lt.minute & self.minute:
                if not added:
                    added = True
                    cur -= cur % 60
                cur += 60
                lt = self._local(cur)
                if lt.minute == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            if lt.second != 0:  # the standard parser's second field is 0
                added = True
                cur += 60 - lt.second
                continue
            return float(cur)


def _parse_int(expr: str) -> int:
    """mustParseInt: strconv.Atoi, no negatives."""
    if not re.fullmatch(r"[+-]?[0-9]+", expr):
        raise ScheduleError(f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax')
    num = int(expr)
    if num < 0:
        raise ScheduleError(f"negative number ({num}) not allowed: {expr}")
    return num


def _int_or_name(expr: str, b: _Bounds) -> int:
    if expr.lower() in b.names:
        return b.names.index(expr.lower()) + b.low
    return _parse_int(expr)


def _range(expr: str, b: _Bounds) -> int:
    """getRange: `*`, `?`, N, N-M, each with an optional /step."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    extra = 0
    if low_high[0] in ("*", "?"):
        start, end, extra = b.low, b.high, STAR
    else:
        start = _int_or_name(low_high[0], b)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _int_or_name(low_high[1], b)
        else:
            raise ScheduleError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _parse_int(range_and_step[1])
        if len(low_high) == 1:  # "N/step" means "N-max/step"
            end = b.high
        if step > 1:
            extra = 0
    else:
        raise ScheduleError(f"too many slashes: {expr}")
    if start < b.low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({b.low}): {expr}")
    if end > b.high:
        raise ScheduleError(f"end of range ({end}) above maximum ({b.high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")
    return _bits(start, end, step) | extra


def _field(field: str, b: _Bounds) -> int:
    bits = 0
    for expr in (e for e in field.split(",") if e):
        bits |= _range(expr, b)
    return bits


_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_NUMBER = re.compile(r"([0-9]*)(\.([0-9]*))?")
_UNIT = re.compile(r"[^0-9.]*")


def parse_duration(text: str) -> float:
    """time.ParseDuration in seconds ("1h30m", "90s", "1.5h", "0"), Go's error texts."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if body == "0":
        return 0.0
    if not body:
        raise ScheduleError(f'time: invalid duration "{text}"')
    total, pos = 0.0, 0
    while pos < len(body):
        num = _NUMBER.match(body, pos)
        assert num is not None  # the pattern matches the empty string
        whole, frac = num.group(1), num.group(3) or ""
        if not whole and not frac:
            raise ScheduleError(f'time: invalid duration "{text}"')
        unit = _UNIT.match(body, num.end())
        assert unit is not None
        if not unit.group(0):
            raise ScheduleError(f'time: missing unit in duration "{text}"')
        if unit.group(0) not in _UNITS:
            raise ScheduleError(f'time: unknown unit "{unit.group(0)}" in duration "{text}"')
        total += float(f"{whole or 0}.{frac or 0}") * _UNITS[unit.group(0)]
        pos = unit.end()
    return -total if text.startswith("-") else total


def _descriptor(spec: str, zone: dt.tzinfo) -> Schedule:
    one = {"minute": 1 << 0, "hour": 1 << 0}
    if spec in ("@yearly", "@annually"):
        return Spec(**one, dom=1 << 1, month=1 << 1, dow=_all(DOW), zone=zone)
    if spec == "@monthly":
        return Spec(**one, dom=1 << 1, month=_all(MONTHS), dow=_all(DOW), zone=zone)
    if spec == "@weekly":
        return Spec(**one, dom=_all(DOM), month=_all(MONTHS), dow=1 << 0, zone=zone)
    if spec in ("@daily", "@midnight"):
        return Spec(**one, dom=_all(DOM), month=_all(MONTHS), dow=_all(DOW), zone=zone)
    if spec == "@hourly":
        return Spec(minute=1 << 0, hour=_all(HOURS), dom=_all(DOM), month=_all(MONTHS), dow=_all(DOW), zone=zone)
    if spec.startswith("@every "):
        try:
            seconds = parse_duration(spec[len("@every "):])
        except ScheduleError as err:
            raise ScheduleError(f"failed to parse duration {spec}: {err}") from err
        return Every(math.floor(max(seconds, 1.0)))
    raise ScheduleError(f"unrecognized descriptor: {spec}")


def parse(spec: str, default_zone: dt.tzinfo = UTC) -> Schedule:
    """cron.ParseStandard (Minute | Hour | Dom | Month | Dow | Descriptor)."""
    if not spec:
        raise ScheduleError("empty spec string")
    zone = default_zone
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space, eq = spec.find(" "), spec.find("=")
        if space < 0:  # Go slices spec[eq+1:-1] and panics; the controller recovers it
            raise ScheduleError("invalid schedule format: runtime error: slice bounds out of range [:-1]")
        name = spec[eq + 1:space]
        try:
            zone = load_zone(name)
        except ScheduleError as err:
            raise ScheduleError(f"provided bad location {name}: {err}") from err
        spec = spec[space:].strip()
    if spec.startswith("@"):
        return _descriptor(spec, zone)
    fields = spec.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    return Spec(minute=_field(fields[0], MINUTES), hour=_field(fields[1], HOURS), dom=_field(fields[2], DOM),
                month=_field(fields[3], MONTHS), dow=_field(fields[4], DOW), zone=zone)
