"""What every server-side printer shares: column definitions, upstream's column descriptions,
timestamps and ages (duration.HumanDuration itself is nodeagent/util/timefmt.py, shared with describe).

Why apart from table.py: the per-kind printers (core.py, resource.py) and the table
assembly both need these, and the assembly imports the printers. Pure: no I/O; `now` is passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nodeagent.util.timefmt import human_duration

Cells = list[Any]

NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended "
    "for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATED_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. "
    "It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def column(
    name: str, description: str, *, type_: str = "string", format_: str = "", priority: int = 0
) -> dict[str, Any]:
    """A metav1.TableColumnDefinition as JSON (every field is always written, as upstream's are)."""
    return {"name": name, "type": type_, "format": format_, "description": description, "priority": priority}


NAME_COLUMN = column("Name", NAME_DOC, format_="name")
AGE_COLUMN = column("Age", CREATED_DOC)


@dataclass(frozen=True)
class Printer:
    """One kind's table: its columns and the cells of one object (`now` in Unix seconds); `conditions`
    gives the row's conditions (pods only, upstream); `for_list`, when a list prints unlike its items
    one by one (upstream's list handler: StorageClass marks the effective default), gives the cells
    function for the rows of that list."""

    columns: tuple[dict[str, Any], ...]
    cells: Callable[[Mapping[str, Any], float], Cells]
    conditions: Callable[[Mapping[str, Any]], list[dict[str, Any]]] | None = field(default=None)
    for_list: Callable[[Sequence[Mapping[str, Any]]], Callable[[Mapping[str, Any], float], Cells]] | None = field(
        default=None)


def get(obj: Any, *keys: str) -> Any:
    """obj[k1][k2]...; None when a step is missing or not an object. A dict is tested by its exact type
    first: the ABC check was most of a pod's status reason (0.15 s on the event loop for a pod of 7,400
    containers, at each `kubectl get` of it, issue 25)."""
    cur = obj
    for key in keys:
        if type(cur) is not dict and not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def text(obj: Any, *keys: str) -> str:
    value = get(obj, *keys)
    return value if isinstance(value, str) else ""


def items(obj: Any, *keys: str) -> Sequence[Any]:
    value = get(obj, *keys)
    return value if isinstance(value, list) else ()


def name_of(obj: Mapping[str, Any]) -> str:
    return text(obj, "metadata", "name")


def parse_time(value: Any) -> float | None:
    """Unix seconds of an RFC 3339 timestamp (metav1.Time / MicroTime); None when unset or malformed."""
    if not isinstance(value, str) or not value or value == "null":
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def since(value: Any, now: float) -> str:
    """Upstream's translateTimestampSince: the age of a timestamp, `<unknown>` when unset."""
    at = parse_time(value)
    if at is None:
        return "<unknown>"
    return human_duration(now - at)


def age(obj: Mapping[str, Any], now: float) -> str:
    return since(get(obj, "metadata", "creationTimestamp"), now)
