"""REST fuzz: schemathesis requests, generated from the API server's own /openapi/v2, against every
operation it serves, over HTTPS as the admin. Every request must be answered (no dropped connection, no
timeout) and none with a 500: a malformed input is the client's error (4xx), never the server's.

Why schemathesis: it reads the served document (Swagger 2.0, as kubectl and client generators do),
derives both valid (positive) and schema-violating (negative) requests for path, query and body from
it with hypothesis (already the project's property-testing library), so every operation, including
kinds added later, is covered without a hand-written case list.

Bounded as a tier: by default a slice of the operations with a few examples each (a few seconds, in
`make test`); NODEAGENT_REST_FUZZ=1 runs every operation, NODEAGENT_REST_FUZZ_EXAMPLES per operation
and generation mode (default 10), with the per-test timeout lifted."""

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
EXAMPLES = int(os.environ.get("NODEAGENT_REST_FUZZ_EXAMPLES", "10")) if FULL else 2
TRACE = bool(os.environ.get("NODEAGENT_REST_FUZZ_TRACE"))
SLICE = 4  # operations in the default run (a seeded pick; about 4 s each: hypothesis builds the k8s schemas)
REQUEST_TIMEOUT = 15.0

pytestmark = [pytest.mark.rpc, pytest.mark.rest_fuzz]


@dataclass
class Tally:
    requests: int = 0
    by_code: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # 500s and unanswered requests, with what was sent


def _send(case: Any, session: requests.Session, base: str, token: str, tally: Tally) -> None:
    tally.requests += 1
    watching = "/watch/" in case.formatted_path or str((case.query or {}).get("watch", "")).lower() in ("true", "1")
    if watching:  # a watch answers at once and streams until its timeout: keep that short
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
    schema = schemathesis.openapi.from_dict(doc)
    operations = [r.ok() for r in schema.get_all_operations()]
    tally = Tally()
    with requests.Session() as session:
        session.verify = ca
        for op in pick(operations):
            _operation(op, session, base, token, tally)
    return tally


def _operation(op: Any, session: requests.Session, base: str, token: str, tally: Tally) -> None:
    """EXAMPLES valid and EXAMPLES schema-violating requests of one operation."""
    started = time.monotonic()
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        strategy = op.as_strategy(generation_mode=mode)

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


@pytest.mark.timeout(3600 if FULL else 120)
async def test_every_operation_is_answered_and_never_500(tmp_path: Path) -> None:
    async with serving(tmp_path, max_request_bytes=3 * 1024 * 1024) as client:
        await _run(client)


async def _run(client: Client) -> None:
    status, doc, _ = await client.call("GET", "/openapi/v2")
    assert status == 200
    doc = json.loads(json.dumps(doc))
    assert client.server.credentials is not None
    ca = str(client.server.credentials.ca_path)
    rng = random.Random(25)

    def pick(ops: list[Any]) -> list[Any]:
        return ops if FULL else rng.sample(ops, min(SLICE, len(ops)))

    start = time.monotonic()
    tally = await asyncio.to_thread(fuzz, doc, client.base, ca, client.token, pick)
    took = time.monotonic() - start
    print(f"rest fuzz: {tally.requests} requests in {took:.1f}s, codes {dict(sorted(tally.by_code.items()))}")
    assert tally.requests > 0
    assert not tally.errors, f"{len(tally.errors)} of {tally.requests} requests: " + "\n".join(
        e[:600] for e in tally.errors[:10])
