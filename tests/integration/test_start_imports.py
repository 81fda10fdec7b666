"""A start to READY=1 imports nothing that only later requests need (issue 25: restart to ready).

The table printers (the first Table a client asks for), the CEL compiler and the policy evaluation (the
first ValidatingAdmissionPolicy to check or binding that matches), the claim quota check (the first
quota to check), the protobuf tables (the first protobuf message encoded or decoded), the OpenAPI
builders (the first /openapi document) and the DRA plugin client with the generated DRA services (the
first DRA plugin to register) are imported when first used; a module-level import of one of them in a
module the start loads puts its cost back into every restart (bench/restart.py measures the time; this
checks the cause). The daemon runs in a process of its own, in process there (serve()), with the
control plane's loops off: they start right after READY=1 and import the quota check themselves. The
modules are read when the daemon logs READY=1, before the steps right after it (the table printers are
imported there, so that the first `kubectl get` does not: wiring/control_plane._load_printers). A first
start and a restart from its state are both checked.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.integration.daemon_helpers import free_port, write_config

pytestmark = [pytest.mark.integration]

LATER = ("nodeagent.apiserver.tables", "nodeagent.apiserver.jsonpath", "nodeagent.cel.admission",
         "nodeagent.cel.checker", "nodeagent.apiserver.policy.evaluation", "nodeagent.controlplane.quota",
         "nodeagent.protowire.packages", "nodeagent.apiserver.schema.openapi",
         "nodeagent.apiserver.protobuf.gnostic", "nodeagent.dra.client", "nodeagent.apis.dra.v1.api_pb2")

PROBE = """
import asyncio, logging, sys
from pathlib import Path
from nodeagent import config, daemon

AT_READY = []

class AtReady(logging.Handler):
    # the modules loaded when the daemon says READY=1 (its "ready node=" line), before the steps
    # that run right after it (Running.after_ready: the table printers' import among them)
    def emit(self, record):
        if not AT_READY and record.getMessage().startswith("ready node="):
            AT_READY.append([m for m in {later!r} if m in sys.modules])

logging.getLogger("nodeagent.daemon").addHandler(AtReady())
logging.getLogger("nodeagent.daemon").setLevel(logging.INFO)

async def main() -> None:
    ready, stop = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(daemon.serve(config.load(Path(sys.argv[1])), environ=dict(), ready=ready, stop=stop))
    waiter = asyncio.ensure_future(ready.wait())
    await asyncio.wait((task, waiter), timeout=240, return_when=asyncio.FIRST_COMPLETED)
    print("READY=" + str(ready.is_set() and bool(AT_READY)))
    print("LATER=" + ",".join(AT_READY[0] if AT_READY else ["?"]))
    stop.set()
    await task

asyncio.run(main())
"""


def test_a_start_imports_no_module_of_later_requests() -> None:
    with tempfile.TemporaryDirectory(prefix="na-si-") as tmp:
        base = Path(tmp)
        cfg = write_config(base, {}, {"controlPlane": {"enabled": False,
                                                       "apiServer": {"bindAddress": "127.0.0.1:0"}}}, free_port())
        for start in ("first start", "restart"):
            out = subprocess.run([sys.executable, "-c", PROBE.format(later=LATER), str(cfg)], capture_output=True,
                                 text=True, timeout=300, check=False)
            lines = out.stdout.splitlines()
            assert "READY=True" in lines, f"{start}: {out.stdout}{out.stderr[-3000:]}"
            imported = next(line for line in lines if line.startswith("LATER="))[len("LATER="):]
            assert imported == "", f"{start} imported {imported}"
