"""REST fuzz: schemathesis requests, generated from the API server's own /openapi/v2, against every
operation it serves, over HTTPS as the admin. Every request must be answered (no dropped connection, no
timeout) and none with a 500: a malformed input is the client's error (4xx), never the server's.

Why schemathesis: it reads the served document (Swagger 2.0, as kubectl and client generators do),
derives both valid (positive) and schema-violating (negative) requests for path, query and body from
it with hypothesis (already the project's property-testing library), so every operation, including
kinds added later, is covered without a hand-written case list.

Bounded as a tier: by default a slice of the operations with a few examples each (a few seconds, in
`make test`). `make test-rest-fuzz` (NODEAGENT_REST_FUZZ=1) is the opt-in tier: every operation, in an
order shuffled by NODEAGENT_REST_FUZZ_SEED (default: the day, so successive runs start elsewhere; printed
to replay a run), NODEAGENT_REST_FUZZ_EXAMPLES valid and as many schema-violating requests each (default
1), within NODEAGENT_REST_FUZZ_BUDGET seconds (default 240, to fit a CI run; 0: no limit). What a big
kind's schema-violating body costs to generate (4.3 CPU-seconds for a Pod) is most of the time: 587
operations at one example each take about 9 min on a loaded 2-core machine, so a budgeted run covers
what fits and prints how many operations it reached; a run with BUDGET=0 covers them all."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.rpc.test_apiserver_http import Client, serving

schemathesis = pytest.importorskip("schemathesis")
import hypothesis  # noqa: E402
import requests  # noqa: E402
from schemathesis.generation import GenerationMode  # noqa: E402

FULL = os.environ.get("NODEAGENT_REST_FUZZ", "").strip().lower() in ("1", "true", "yes")
EXAMPLES = int(os.environ.get("NODEAGENT_REST_FUZZ_EXAMPLES", "1")) if FULL else 2
BUDGET = float(os.environ.get("NODEAGENT_REST_FUZZ_BUDGET", "240")) if FULL else 0.0
SEED = int(os.environ.get("NODEAGENT_REST_FUZZ_SEED") or time.strftime("%Y%m%d", time.gmtime()))
TRACE = bool(os.environ.get("NODEAGENT_REST_FUZZ_TRACE"))
SLICE = 4  # operations in the default run (a seeded pick; about 4 s each: hypothesis builds the k8s schemas)
REQUEST_TIMEOUT = 15.0

pytestmark = [pytest.mark.rpc, pytest.mark.rest_fuzz]


@dataclass
class Tally:
    requests: int = 0
    by_code: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # 500s and unanswered requests, with what was sent
    operations: int = 0  # operations fuzzed (both generation modes done)


def _watching(case: Any) -> bool:
    """Whether kube-apiserver serves `case` as a watch: a /watch/ path, or a `watch` parameter that is neither
    "0" nor "false" (apimachinery's Convert_Slice_string_To_bool: `watch=-41066` is a watch). The harness
    read only "true" and "1" as one, and left a generated `watch=5.9e16` streaming until its read timeout:
    "unanswered" requests that were the harness's, not the server's."""
    if "/watch/" in case.formatted_path:
        return True
    query = case.query or {}
    if "watch" not in query:
        return False
    value = query["watch"]
    first = value[0] if isinstance(value, list) and value else value
    if isinstance(first, bool):
        return first
    return str(first) != "0" and str(first).lower() != "false" and not (isinstance(value, list) and not value)


def _send(case: Any, session: requests.Session, base: str, token: str, tally: Tally) -> None:
    tally.requests += 1
    if _watching(case):  # a watch answers at once and streams until its timeout: keep that short
        case.query = {**(case.query or {}), "timeoutSeconds": 1}
    sent = f"{case.method} {case.formatted_path} query={case.query} body={str(case.body)[:300]!r}"
    try:
        resp = case.call(base_url=base, session=session, headers={"Authorization": f"Bearer {token}"},
                         timeout=REQUEST_TIMEOUT, verify=session.verify)
    except requests.RequestException as err:
        tally.errors.append(f"unanswered ({type(err).__name__}: {err}): {sent}")
        return
    code = int(resp.status_code)
    tally.by_code[code] = tally.by_code.get(code, 0) + 1
    if code >= 500:
        tally.errors.append(f"{code}: {sent}: {resp.text[:300]}")


def fuzz(doc: dict[str, Any], base: str, ca: str, token: str, pick: Callable[[list[Any]], list[Any]]) -> Tally:
    # The document's BearerToken security scheme (an apiKey header `authorization`) makes schemathesis
    # generate that header itself, replacing the admin's token: half the requests of a run were 401s that
    # never reached an operation. The fuzz is about the operations, so the scheme is left out.
    doc = {k: v for k, v in doc.items() if k not in ("securityDefinitions", "security")}
    schema = schemathesis.openapi.from_dict(doc)
    operations = [r.ok() for r in schema.get_all_operations()]
    tally = Tally()
    deadline = time.monotonic() + BUDGET if BUDGET > 0 else None
    with requests.Session() as session:
        session.verify = ca
        for op in pick(operations):
            if deadline is not None and time.monotonic() > deadline:
                break
            _operation(op, session, base, token, tally)
            tally.operations += 1
    return tally


def _operation(op: Any, session: requests.Session, base: str, token: str, tally: Tally) -> None:
    """EXAMPLES valid and EXAMPLES schema-violating requests of one operation."""
    started = time.monotonic()
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        strategy = op.as_strategy(generation_mode=mode)

        @hypothesis.seed(SEED)
        @hypothesis.settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not FULL,
                             phases=[hypothesis.Phase.generate],
                             suppress_health_check=list(hypothesis.HealthCheck))
        @hypothesis.given(case=strategy)
        def run(case: Any) -> None:
            _send(case, session, base, token, tally)

        try:
            run()
        except hypothesis.errors.Unsatisfiable:
            continue  # no negative case exists for an operation without parameters
    if TRACE:
        print(f"{op.method.upper()} {op.path}: {time.monotonic() - started:.1f}s", flush=True)


@pytest.mark.timeout((BUDGET + 300 if BUDGET else 7200) if FULL else 120)
async def test_every_operation_is_answered_and_never_500(tmp_path: Path) -> None:
    async with serving(tmp_path, max_request_bytes=3 * 1024 * 1024) as client:
        await _run(client)


async def _run(client: Client) -> None:
    status, doc, _ = await client.call("GET", "/openapi/v2")
    assert status == 200
    doc = json.loads(json.dumps(doc))
    assert client.server.credentials is not None
    ca = str(client.server.credentials.ca_path)
    rng = random.Random(SEED if FULL else 25)
    total = [0]

    def pick(ops: list[Any]) -> list[Any]:
        total[0] = len(ops)
        return rng.sample(ops, len(ops) if FULL else min(SLICE, len(ops)))

    start, cpu = time.monotonic(), time.process_time()
    tally = await asyncio.to_thread(fuzz, doc, client.base, ca, client.token, pick)
    took, cpu = time.monotonic() - start, time.process_time() - cpu
    print(f"rest fuzz (seed {SEED}): {tally.operations} of {total[0]} operations, {tally.requests} requests in "
          f"{took:.1f}s ({cpu:.1f} CPU-s, server included; load {os.getloadavg()[0]:.1f}), "
          f"codes {dict(sorted(tally.by_code.items()))}")
    assert tally.requests > 0
    assert not tally.errors, f"{len(tally.errors)} of {tally.requests} requests: " + "\n".join(
        e[:600] for e in tally.errors[:10])


@dataclass
class _Case:
    formatted_path: str
    query: dict[str, Any] | None


@pytest.mark.parametrize(("path", "query", "watch"), [
    ("/api/v1/pods", None, False), ("/api/v1/pods", {"watch": "false"}, False), ("/api/v1/pods", {"watch": "0"}, False),
    ("/api/v1/pods", {"watch": "False"}, False), ("/api/v1/pods", {"watch": False}, False),
    ("/api/v1/pods", {"watch": "true"}, True), ("/api/v1/pods", {"watch": -41066}, True),
    ("/api/v1/pods", {"watch": 5.9e16}, True), ("/api/v1/pods", {"watch": ""}, True),
    ("/api/v1/pods", {"watch": ["x"]}, True), ("/api/v1/watch/pods", None, True)])
def test_what_kube_apiserver_serves_as_a_watch(path: str, query: dict[str, Any] | None, watch: bool) -> None:
    assert _watching(_Case(path, query)) is watch
