"""NodeAgentConfiguration.faults: the fault timeline, parsed when the config is loaded.

A list of entries, each with `at` (a duration after the daemon is ready) and either a fault rule in
the spelling of nodeagent.faults.model.parse_rule or `action: kubelet-restart`:

    faults:
    - {at: "10s", method: Allocate, action: fail, code: UNAVAILABLE, count: 2}
    - {at: "30s", action: kubelet-restart}

`parse_timeline` validates with field paths (`NodeAgentConfiguration.faults[1].at: ...`);
nodeagent/faults/timeline.py plays the entries after start. Why here and not in faults/: parsing the
config file is config/'s job, and faults/ (the injector, its gRPC service) sits above config/. A rule's
own spelling stays in faults/model.py, a pure module the admin API and the CLI parse with too; config/
imports only that module of faults/.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.faults.model import KUBELET_RESTART, TimelineEntry, parse_rule, parse_seconds


def parse_timeline(items: Sequence[Any], path: str) -> tuple[TimelineEntry, ...]:
    """Validate the timeline; raises ValidationError naming the entry's field (`faults[1].at: ...`)."""
    out: list[TimelineEntry] = []
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            raise ValidationError(p, f"expected object, got {type(item).__name__}")
        if item.get("at") is None:
            raise ValidationError(f"{p}.at", "Required value: when, after start (e.g. \"10s\")")
        at = parse_seconds(item["at"], f"{p}.at")
        if item.get("action") == KUBELET_RESTART:
            extra = sorted(set(item) - {"at", "action"})
            if extra:
                raise ValidationError(f"{p}.{extra[0]}", f"a {KUBELET_RESTART} entry takes only at and action")
            out.append(TimelineEntry(at))
            continue
        out.append(TimelineEntry(at, parse_rule(item, p, frozenset({"at"}))))
    return tuple(sorted(out, key=lambda e: e.at))
