"""A conformance case and its result, as plain data; how a case says "failed" or "skipped".

A case is a named async function with a one-line statement of the contract it checks and
the capabilities it needs (e.g. "health", "driver-command"); the runner skips a case whose
capability the plugin under test lacks, with the reason. A case fails by raising
`CaseFailed` (through `check`/`fail`) with a message that says what broke; any other
exception is the plugin misbehaving in a way the case did not foresee and is reported as a
failure too, never a crash of the suite.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, NoReturn, TypeVar

Ctx = TypeVar("Ctx")


class Outcome(enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"


class CaseFailed(AssertionError):
    """The plugin broke the case's contract; the text says how."""


class CaseSkipped(Exception):
    """The case cannot run against this plugin; the text says why."""


def fail(message: str) -> NoReturn:
    raise CaseFailed(message)


def check(condition: object, message: str) -> None:
    """Fail the case with `message` unless `condition` holds."""
    if not condition:
        raise CaseFailed(message)


def skip(reason: str) -> NoReturn:
    raise CaseSkipped(reason)


@dataclass(frozen=True)
class Case(Generic[Ctx]):
    """One named contract check: `area/what`, e.g. `prepare/idempotent`."""

    name: str
    description: str
    run: Callable[[Ctx], Awaitable[None]]
    needs: frozenset[str] = field(default_factory=frozenset)
    timeout: float | None = None  # None: the suite's per-case timeout

    @property
    def area(self) -> str:
        return self.name.split("/", 1)[0]


@dataclass(frozen=True)
class Result:
    name: str
    description: str
    outcome: Outcome
    message: str = ""
    seconds: float = 0.0

    @property
    def area(self) -> str:
        return self.name.split("/", 1)[0]


async def close_stream(stream: object) -> None:
    """Close an async generator stream (typed as AsyncIterator by the clients) so its call is cancelled."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()
