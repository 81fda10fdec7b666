"""Deep copies of big JSON values in pieces, so that no single C call holds the GIL for the whole value.

Why: the store and the pod parser copy JSON values by an orjson round trip (one dumps, one loads),
the fastest copy there is, but each of the two is one C call that holds the GIL throughout: reading
back a pod of 10,000 containers (~3 MB of JSON) held it 50-100 ms on a loaded machine, in a worker
thread, and the event loop waited that long for it at its next bytecode (issue 25: no request may
delay a /healthz or pod-resources answer by more than 100 ms). A value whose encoding is big is
copied member by member instead, and a list or an object of more than PIECE_ITEMS items in slices
of that many, each slice its own round trip: between two calls the interpreter hands the GIL to a
thread that asked for it (sys.getswitchinterval), so the loop waits for one slice at most. The copy
is the same value; small values (the common case) pay only a length test.
"""

from __future__ import annotations

from typing import Any

import orjson

BIG_BYTES = 256 * 1024
"""An encoding this long is read back in pieces (a pod of ~800 simple containers)."""
PIECE_ITEMS = 512
"""Items of a list (members of an object) read back per round trip."""
_IMMUTABLE = (str, int, float, bool)


def loads_copy(value: Any, text: bytes) -> Any:
    """A deep copy of `value`, given `text` = orjson.dumps(value) (the caller encodes anyway: to copy, to
    check what orjson accepts). Small: orjson.loads(text). Big: copied in pieces (module docstring)."""
    if len(text) < BIG_BYTES:
        return orjson.loads(text)
    return _pieces(value)


def _pieces(value: Any, depth: int = 8) -> Any:
    """Copy `value`: below `depth` levels (deep enough for a pod's managedFields' containers), or a
    list or object of at most PIECE_ITEMS items, member by member; a longer one in slices."""
    kind = type(value)
    if kind in _IMMUTABLE or value is None:
        return value
    if kind is dict:
        if len(value) > PIECE_ITEMS:
            out: dict[str, Any] = {}
            items = list(value.items())
            for start in range(0, len(items), PIECE_ITEMS):
                out.update(orjson.loads(orjson.dumps(dict(items[start:start + PIECE_ITEMS]))))
            return out
        if depth:
            return {key: _pieces(item, depth - 1) for key, item in value.items()}
    elif kind is list:
        if len(value) > PIECE_ITEMS:
            copied: list[Any] = []
            for start in range(0, len(value), PIECE_ITEMS):
                copied.extend(orjson.loads(orjson.dumps(value[start:start + PIECE_ITEMS])))
            return copied
        if depth:
            return [_pieces(item, depth - 1) for item in value]
    # deep enough, or a subclass or another type orjson encodes: one round trip, as the small case
    return orjson.loads(orjson.dumps(value))
