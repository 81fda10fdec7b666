"""The CronJob controller's decisions (upstream pkg/controller/cronjob, ControllerV2.sync): which Job to
start for which scheduled time, which Jobs go, and the CronJob's status.

One responsibility: from a CronJob, the Jobs it controls and `now`, what one sync writes, in upstream's
order: cleanupFinishedJobs (successful/failedJobsHistoryLimit: the oldest finished Jobs by startTime,
SuccessfulDelete "Deleted job <name>"), then syncCronJob: finished Jobs leave status.active
(SawCompletedJob), the latest completionTime becomes lastSuccessfulTime, unknown running Jobs are
reported (UnexpectedJob), active entries whose Job is gone leave (MissingJob); then, unless the CronJob
is being deleted, its timeZone unknown (UnknownTimeZone), suspended, or its schedule unparseable
(UnparseableSchedule) or impossible (InvalidSchedule): the most recent unmet scheduled time
(mostRecentScheduleTime, with startingDeadlineSeconds; TooManyMissedTimes past 100 missed), skipped
when too late (MissSchedule) or already run, held by concurrencyPolicy Forbid (JobAlreadyActive) or
replacing the active Jobs with Replace; the Job `<cronjob>-<scheduled minutes since the epoch>` with the
template's labels and annotations plus batch.kubernetes.io/cronjob-scheduled-timestamp; and when to
look again (the next scheduled time plus upstream's 100 ms). Pure: no I/O; times are epoch seconds.
"""

from __future__ import annotations

import copy
import datetime as dt
import email.utils
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.controlplane.workloads import cron
from nodeagent.controlplane.workloads import pods as P
from nodeagent.store.meta import rfc3339

API_VERSION, KIND = "batch/v1", "CronJob"
SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NEXT_DELTA = 0.1
"""nextScheduleDelta: the requeue lands 100 ms after the scheduled time."""
MANY_MISSED = 100


@dataclass
class Plan:
    delete: list[P.Obj] = field(default_factory=list)
    """Jobs to delete (background propagation), history first, then those Replace ends."""
    create: dict[str, Any] | None = None
    """The Job to start (its uid, selector and defaults are the API server's)."""
    scheduled: float | None = None
    status: dict[str, Any] = field(default_factory=dict)
    """The status to write (before the created Job joins status.active: `started`)."""
    write_status: bool = False
    events: list[tuple[str, str, str]] = field(default_factory=list)
    requeue_at: float | None = None


def finished_type(job: P.Obj) -> str:
    """getFinishedStatus/IsJobFinished: "Complete", "Failed" or ""."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return ""


def job_name(cronjob: P.Obj, scheduled: float) -> str:
    """getJobName: the CronJob's name and the scheduled time in minutes since the epoch."""
    return f"{P.name(cronjob)}-{int(scheduled) // 60}"


def job_reference(job: P.Obj) -> dict[str, Any]:
    """ref.GetReference of a created Job, as status.active lists it."""
    md = job["metadata"]
    return {"kind": "Job", "namespace": md.get("namespace"), "name": md["name"], "uid": md["uid"],
            "apiVersion": API_VERSION, "resourceVersion": md.get("resourceVersion")}


def started(plan: Plan, job: P.Obj) -> dict[str, Any]:
    """The status once `job` was created (or found created by us and missing from active)."""
    status = copy.deepcopy(plan.status)
    status["active"] = [*(status.get("active") or []), job_reference(job)]
    assert plan.scheduled is not None
    status["lastScheduleTime"] = rfc3339(plan.scheduled)
    return status


def _start_key(job: P.Obj) -> tuple[int, float, str]:
    """byJobStartTime: by status.startTime (unset last), then name."""
    start = P.parse_time((job.get("status") or {}).get("startTime"))
    return (1, 0.0, P.name(job)) if start is None else (0, start, P.name(job))


def _remove_active(status: dict[str, Any], uid: str) -> None:
    status["active"] = [r for r in status.get("active") or () if r.get("uid") != uid]
    if not status["active"]:
        del status["active"]


def _cleanup(cj: P.Obj, jobs: Sequence[P.Obj], plan: Plan) -> None:
    spec = cj.get("spec") or {}
    for ftype, limit in (("Complete", spec.get("successfulJobsHistoryLimit")),
                         ("Failed", spec.get("failedJobsHistoryLimit"))):
        if limit is None:
            continue
        done = sorted((j for j in jobs if finished_type(j) == ftype), key=_start_key)
        for job in done[: max(0, len(done) - int(limit))]:
            plan.delete.append(job)
            _remove_active(plan.status, P.uid(job))
            plan.events.append(("Normal", "SuccessfulDelete", f"Deleted job {P.name(job)}"))
            plan.write_status = True


def _reconcile_jobs(cj: P.Obj, jobs: Sequence[P.Obj], plan: Plan) -> None:
    status = plan.status
    for job in jobs:
        found = any(r.get("uid") == P.uid(job) for r in status.get("active") or ())
        ftype = finished_type(job)
        if not found and not ftype:
            plan.events.append(("Warning", "UnexpectedJob",
                                f"Saw a job that the controller did not create or forgot: {P.name(job)}"))
        elif ftype:
            if found:
                _remove_active(status, P.uid(job))
                plan.events.append(("Normal", "SawCompletedJob",
                                    f"Saw completed job: {P.name(job)}, condition: {ftype}"))
                plan.write_status = True
            completion = (job.get("status") or {}).get("completionTime")
            if ftype == "Complete":
                last = P.parse_time(status.get("lastSuccessfulTime"))
                done = P.parse_time(completion)
                if status.get("lastSuccessfulTime") is None or (done is not None and last is not None and done > last):
                    if completion is None:
                        status.pop("lastSuccessfulTime", None)
                    else:
                        status["lastSuccessfulTime"] = completion
                    plan.write_status = True
    uids = {P.uid(j) for j in jobs}
    for ref in list(status.get("active") or ()):
        if ref.get("uid") not in uids:
            plan.events.append(("Normal", "MissingJob", f"Active job went missing: {ref.get('name')}"))
            _remove_active(status, str(ref.get("uid")))
            plan.write_status = True


def most_recent(cj: P.Obj, now: float, sched: cron.Schedule, with_deadline: bool,
                ) -> tuple[float, float | None, int, str]:
    """mostRecentScheduleTime: (earliest, the most recent unmet time or None, missed schedules: 0 none,
    1 few, 2 many, error text)."""
    earliest = P.parse_time((cj.get("metadata") or {}).get("creationTimestamp")) or 0.0
    status, spec = cj.get("status") or {}, cj.get("spec") or {}
    if status.get("lastScheduleTime"):
        earliest = P.parse_time(status["lastScheduleTime"]) or earliest
    if with_deadline and spec.get("startingDeadlineSeconds") is not None:
        earliest = max(earliest, now - int(spec["startingDeadlineSeconds"]))
    t1 = sched.next(earliest)
    t2 = sched.next(t1) if t1 is not None else None
    if t1 is not None and now < t1:
        return earliest, None, 0, ""
    if t2 is not None and now < t2:
        return earliest, t1, 0, ""
    between = round(t2 - t1) if t1 is not None and t2 is not None else 0
    if t1 is None or between < 1:
        return earliest, None, 0, "time difference between two schedules is less than 1 second"
    missed = int(now - t1) // between + 1
    recent: float | None = None
    t: float | None = sched.next(t1 + (missed - 2) * between)
    while t is not None and t <= now:
        recent = t
        t = sched.next(t)
    kind = 2 if missed > MANY_MISSED else 1
    return earliest, recent, kind, ""


def _next_requeue(cj: P.Obj, now: float, sched: cron.Schedule) -> float | None:
    """nextScheduleTimeDuration as the wall time to look again."""
    earliest, recent, missed, err = most_recent(cj, now, sched, False)
    base = now if err or (recent is None and missed) else (earliest if recent is None else recent)
    nxt = sched.next(base)
    return None if nxt is None else nxt + NEXT_DELTA


def _schedule_text(cj: P.Obj, plan: Plan) -> str:
    """formatSchedule: a TZ in the schedule is warned about; spec.timeZone becomes a TZ= prefix."""
    spec = cj.get("spec") or {}
    schedule = str(spec.get("schedule") or "")
    if "TZ" in schedule:
        plan.events.append(("Warning", "UnsupportedSchedule",
                            f"CRON_TZ or TZ used in schedule {_go_quote(schedule)} is not officially supported, "
                            "see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ "
                            "for more details"))
        return schedule
    if spec.get("timeZone") is not None:
        return f"TZ={spec['timeZone']} {schedule}"
    return schedule


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _rfc1123z(t: float) -> str:
    return email.utils.format_datetime(dt.datetime.fromtimestamp(t, dt.UTC).replace(tzinfo=None)) \
        .replace("-0000", "+0000")


def plan(cj: P.Obj, jobs: Sequence[P.Obj], now: float) -> Plan:
    """One sync of `cj` over the Jobs it controls."""
    out = Plan(status=copy.deepcopy(dict(cj.get("status") or {})))
    _cleanup(cj, jobs, out)
    _reconcile_jobs(cj, jobs, out)
    if P.deleting(cj):
        return out
    spec = cj.get("spec") or {}
    if spec.get("timeZone") is not None:
        try:
            cron.load_zone(str(spec["timeZone"]))
        except cron.ScheduleError as err:
            out.events.append(("Warning", "UnknownTimeZone",
                               f"invalid timeZone: {_go_quote(str(spec['timeZone']))}: {err}"))
            return out
    if spec.get("suspend"):
        return out
    try:
        sched = cron.parse(_schedule_text(cj, out))
    except cron.ScheduleError as err:
        out.events.append(("Warning", "UnparseableSchedule",
                           f"unparseable schedule: {_go_quote(str(spec.get('schedule') or ''))} : {err}"))
        return out
    _, scheduled, missed, err_text = most_recent(cj, now, sched, True)
    if scheduled is not None and missed == 2:
        out.events.append(("Warning", "TooManyMissedTimes", "too many missed start times. Set or decrease "
                           ".spec.startingDeadlineSeconds or check clock skew"))
    if err_text:
        out.events.append(("Warning", "InvalidSchedule", f"invalid schedule: {spec.get('schedule')} : {err_text}"))
        return out
    out.requeue_at = _next_requeue({**cj, "status": out.status}, now, sched)
    if scheduled is None:
        return out
    deadline = spec.get("startingDeadlineSeconds")
    if deadline is not None and scheduled + int(deadline) < now:
        out.events.append(("Warning", "MissSchedule", f"Missed scheduled time to start a job: {_rfc1123z(scheduled)}"))
        return out
    name = job_name(cj, scheduled)
    if any(r.get("name") == name for r in out.status.get("active") or ()) \
            or P.parse_time(out.status.get("lastScheduleTime")) == scheduled:
        return out
    policy = spec.get("concurrencyPolicy") or "Allow"
    if policy == "Forbid" and out.status.get("active"):
        out.events.append(("Normal", "JobAlreadyActive",
                           "Not starting job because prior execution is running and concurrency policy is Forbid"))
        return out
    if policy == "Replace":
        by_uid = {P.uid(j): j for j in jobs}
        for ref in list(out.status.get("active") or ()):
            job = by_uid.get(str(ref.get("uid")))
            if job is not None:
                out.delete.append(job)
                _remove_active(out.status, P.uid(job))
                out.events.append(("Normal", "SuccessfulDelete", f"Deleted job {P.name(job)}"))
                out.write_status = True
    out.create = job_from_template(cj, scheduled)
    out.scheduled = scheduled
    out.requeue_at = _next_requeue({**cj, "status": {**out.status, "lastScheduleTime": rfc3339(scheduled)}},
                                   now, sched)
    return out


def scheduled_stamp(scheduled: float, zone: dt.tzinfo) -> str:
    """The scheduled time in RFC 3339 in the CronJob's zone (Go's "Z07:00": Z at offset 0)."""
    local = dt.datetime.fromtimestamp(scheduled, dt.UTC).astimezone(zone)
    text = local.isoformat(timespec="seconds")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def job_from_template(cj: P.Obj, scheduled: float) -> dict[str, Any]:
    """getJobFromTemplate2: the jobTemplate's labels, annotations (plus the scheduled timestamp) and
    spec, named for the scheduled minute, controlled by the CronJob."""
    spec = cj.get("spec") or {}
    template: Mapping[str, Any] = spec.get("jobTemplate") or {}
    tmd = template.get("metadata") or {}
    zone = cron.load_zone(str(spec.get("timeZone") or ""))
    annotations = dict(tmd.get("annotations") or {})
    annotations[SCHEDULED_ANNOTATION] = scheduled_stamp(scheduled, zone)
    md: dict[str, Any] = {"name": job_name(cj, scheduled), "namespace": P.namespace(cj),
                          "annotations": annotations,
                          "ownerReferences": [P.owner_reference(cj, API_VERSION, KIND)]}
    if tmd.get("labels"):
        md["labels"] = dict(tmd["labels"])
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": md,
            "spec": copy.deepcopy(dict(template.get("spec") or {}))}
