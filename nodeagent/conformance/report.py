"""Where results go: a readable list on the terminal while running, and JUnit XML for CI.

The terminal list prints each case's name before it runs (progress) and its outcome after,
with the failure or skip message indented beneath, then a one-line summary. The JUnit file
follows the schema CI systems read (Jenkins / the junit-10 XSD that junitparser and
GitLab/GitHub reporters accept): <testsuites> holding one <testsuite> with tests, failures,
errors, skipped, time, timestamp and hostname; each <testcase> has classname (the case's
area), name and time, and a <failure message type> or <skipped message> child; the
contract's description goes to <system-out> so a CI page shows what was checked.
"""

from __future__ import annotations

import datetime
import socket
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from nodeagent.conformance.model import Case, Outcome, Result


class TerminalReporter:
    def __init__(self, out: TextIO | None = None, *, verbose: bool = False) -> None:
        self._out = out if out is not None else sys.stdout
        self._verbose = verbose

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()

    def header(self, title: str, total: int) -> None:
        self._write(f"{title}: {total} case{'s' if total != 1 else ''}\n")

    def started(self, index: int, total: int, case: Case[object]) -> None:
        width = len(str(total))
        self._write(f"[{index:>{width}}/{total}] {case.name} ... ")

    def finished(self, index: int, total: int, result: Result) -> None:
        self._write(f"{result.outcome.value} ({result.seconds:.2f}s)\n")
        if result.outcome is Outcome.FAIL or (result.outcome is Outcome.SKIP and result.message):
            indent = "      "
            if result.outcome is Outcome.FAIL:
                self._write(f"{indent}contract: {result.description}\n")
            for line in result.message.splitlines() or [""]:
                self._write(f"{indent}{line}\n")

    def summary(self, results: Sequence[Result]) -> None:
        counts = {o: sum(1 for r in results if r.outcome is o) for o in Outcome}
        seconds = sum(r.seconds for r in results)
        self._write(f"\n{counts[Outcome.PASS]} passed, {counts[Outcome.FAIL]} failed, "
                    f"{counts[Outcome.SKIP]} skipped in {seconds:.1f}s\n")
        failed = [r.name for r in results if r.outcome is Outcome.FAIL]
        if failed:
            self._write("FAILED: " + ", ".join(failed) + "\n")


def junit_xml(suite: str, results: Sequence[Result], *, timestamp: datetime.datetime | None = None) -> bytes:
    """The results as one JUnit <testsuites> document (UTF-8 bytes)."""
    when = (timestamp or datetime.datetime.now(datetime.UTC)).replace(microsecond=0)
    total_time = sum(r.seconds for r in results)
    failures = sum(1 for r in results if r.outcome is Outcome.FAIL)
    skipped = sum(1 for r in results if r.outcome is Outcome.SKIP)
    counts = {"tests": str(len(results)), "failures": str(failures), "errors": "0", "skipped": str(skipped),
              "time": f"{total_time:.3f}"}
    root = ET.Element("testsuites", {"name": suite, **counts})
    ts = ET.SubElement(root, "testsuite", {
        "name": suite, **counts, "timestamp": when.strftime("%Y-%m-%dT%H:%M:%S"), "hostname": socket.gethostname(),
    })
    for r in results:
        tc = ET.SubElement(ts, "testcase", {"classname": f"{suite}.{r.area}", "name": r.name,
                                            "time": f"{r.seconds:.3f}"})
        if r.outcome is Outcome.FAIL:
            first = r.message.splitlines()[0] if r.message else "failed"
            failure = ET.SubElement(tc, "failure", {"message": first, "type": "ContractViolation"})
            failure.text = f"{r.description}\n{r.message}"
        elif r.outcome is Outcome.SKIP:
            ET.SubElement(tc, "skipped", {"message": r.message})
        out = ET.SubElement(tc, "system-out")
        out.text = r.description
    ET.indent(root)
    text: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return text + b"\n"


def write_junit(path: Path, suite: str, results: Sequence[Result]) -> None:
    """Write the JUnit file atomically (a CI step reading it never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(junit_xml(suite, results))
    tmp.replace(path)
