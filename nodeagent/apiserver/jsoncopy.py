"""Deep copies of decoded JSON values, for the patch and apply walks that must not change their inputs.

Why not copy.deepcopy: it keeps a memo of every node and dispatches per type through a table,
which is most of the cost of a status patch (a pod copied twice per merge patch). A decoded JSON
document is a tree of dicts, lists and immutable scalars, so a plain recursive copy gives the
same result several times faster. Anything else (a dict subclass, a value a caller built by hand)
still goes through copy.deepcopy. Pure: no I/O.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

T = TypeVar("T")

_SCALARS = (str, int, float, bool, type(None))


def json_copy(value: T) -> T:
    """A deep copy of `value`: new dicts and lists all the way down, scalars shared (immutable)."""
    return _copy(value)  # type: ignore[no-any-return]


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _SCALARS else _copy(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _SCALARS else _copy(v) for v in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)
