"""Runs selected cases one after the other, each under a timeout, and never lets one escape.

Selection is csi-sanity's / go test's: `--run REGEX` keeps the cases whose name matches
(re.search), `--skip REGEX` drops those that match. Before each case the context's `gaps()`
names the capabilities the plugin lacks (capability -> reason); a case needing one is
skipped with that reason. Whatever a case raises becomes its result: CaseSkipped a SKIP,
a timeout a FAIL naming the limit, anything else a FAIL with the exception's text, so a
misbehaving plugin can never crash the suite.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from nodeagent.conformance.model import Case, CaseFailed, CaseSkipped, Outcome, Result

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0


class SelectionError(ValueError):
    """A --run / --skip pattern that is no regular expression (a usage error)."""


class SuiteContext(Protocol):
    def gaps(self) -> Mapping[str, str]:
        """Capabilities the plugin under test lacks, with the reason (for skips)."""
        ...

    async def after_case(self) -> None:
        """Undo what the case left behind (claims, allocations); never raises."""
        ...


class Reporter(Protocol):
    def started(self, index: int, total: int, case: Case[object]) -> None: ...

    def finished(self, index: int, total: int, result: Result) -> None: ...


Ctx = TypeVar("Ctx", bound=SuiteContext)


def _compile(flag: str, pattern: str | None) -> re.Pattern[str] | None:
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as err:
        raise SelectionError(f"{flag} {pattern!r}: not a regular expression: {err}") from None


def select(cases: Sequence[Case[Ctx]], run: str | None = None, skip: str | None = None) -> list[Case[Ctx]]:
    """The cases `--run` keeps and `--skip` does not drop, in suite order."""
    keep, drop = _compile("--run", run), _compile("--skip", skip)
    return [c for c in cases
            if (keep is None or keep.search(c.name)) and (drop is None or not drop.search(c.name))]


def _text(err: BaseException) -> str:
    text = str(err).strip()
    return text if text else type(err).__name__


async def run_case(case: Case[Ctx], ctx: Ctx, timeout: float) -> Result:
    limit = case.timeout if case.timeout is not None else timeout
    missing = [f"{need}: {reason}" for need, reason in ctx.gaps().items() if need in case.needs]
    if missing:
        return Result(case.name, case.description, Outcome.SKIP, "; ".join(missing))
    start = time.monotonic()
    outcome, message = Outcome.PASS, ""
    try:
        await asyncio.wait_for(case.run(ctx), limit)
    except CaseSkipped as err:
        outcome, message = Outcome.SKIP, _text(err)
    except CaseFailed as err:
        outcome, message = Outcome.FAIL, _text(err)
    except TimeoutError:
        outcome, message = Outcome.FAIL, f"no result within the case timeout of {limit:g}s"
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        outcome, message = Outcome.FAIL, "the case was cancelled (a call was cancelled under it)"
    except Exception as err:  # the plugin did something no case foresaw: still only this case's failure
        logger.debug("case %s raised", case.name, exc_info=True)
        outcome, message = Outcome.FAIL, f"{type(err).__name__}: {_text(err)}"
    return Result(case.name, case.description, outcome, message, time.monotonic() - start)


async def run_suite(
    cases: Sequence[Case[Ctx]], ctx: Ctx, reporter: Reporter, *, timeout: float = DEFAULT_TIMEOUT
) -> list[Result]:
    results: list[Result] = []
    total = len(cases)
    for index, case in enumerate(cases, 1):
        reporter.started(index, total, case)  # type: ignore[arg-type]
        result = await run_case(case, ctx, timeout)
        try:
            await asyncio.wait_for(ctx.after_case(), timeout)
        except Exception:  # cleanup against a broken plugin must not end the suite
            logger.debug("cleanup after %s failed", case.name, exc_info=True)
        reporter.finished(index, total, result)
        results.append(result)
    return results


def exit_status(results: Sequence[Result]) -> int:
    """0 when nothing failed (skips allowed), 1 otherwise."""
    return 1 if any(r.outcome is Outcome.FAIL for r in results) else 0
