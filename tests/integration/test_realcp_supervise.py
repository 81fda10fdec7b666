"""The real control plane's supervision with stand-in programs (small Python processes), so every rule is
exercised on real processes without the Kubernetes binaries: start in order behind the readiness probe,
a start that fails says why with the component's last log lines, an exit is reported once (with its
code and last log lines) and followed by a restart after a doubling delay, and stop is reverse order,
SIGTERM and then SIGKILL for a process that ignores it, with nothing left running."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

from nodeagent.errors import StartupError
from nodeagent.realcp.plan import Component, Probe
from nodeagent.realcp.supervise import Supervisor
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import RealClock
from tests.waiting import eventually

pytestmark = [pytest.mark.integration]

STEADY = "import time; print('steady up', flush=True); time.sleep(600)"
# ignores SIGTERM: only SIGKILL ends it
STUBBORN = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('stubborn up', flush=True); "
            "time.sleep(600)")
CRASHY = ("import sys, time; print('crashy up', flush=True); time.sleep(0.3); print('crashy: fatal error', "
          "flush=True); sys.exit(3)")
EARLY = "import sys; print('cannot open the data dir', flush=True); sys.exit(1)"


def component(role: str, code: str, ready: str) -> Component:
    return Component(role, (sys.executable, "-c", code), Probe(f"log://{role}", ready, "none"))


def supervisor(base: Path, comps: list[Component], *, ready_timeout: float = 20.0) -> Supervisor:
    log = lambda role: base / "logs" / f"{role}.log"  # noqa: E731

    async def probe(p: Probe) -> bool:  # ready once the program printed its line
        path = log(p.url.removeprefix("log://"))
        return path.exists() and p.expect in path.read_text()

    return Supervisor(comps, log_path=log, clock=RealClock(), probe=probe, ready_timeout=ready_timeout,
                      stop_timeout=0.5, env=dict(os.environ), restart_backoff=Backoff(0.3, 0.6))


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


async def test_crash_reported_once_restarted_with_backoff_and_stopped_in_reverse(
        short_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="nodeagent.realcp.supervise")
    sup = supervisor(short_dir, [component("steady", STEADY, "steady up"), component("stubborn", STUBBORN,
                                                                                      "stubborn up"),
                                 component("crashy", CRASHY, "crashy up")])
    await sup.start()
    try:
        started = [r.getMessage() for r in caplog.records if "started role=" in r.getMessage()]
        assert [m.split("role=")[1].split()[0] for m in started] == ["steady", "stubborn", "crashy"]
        first = sup.pids()["crashy"]

        def exits() -> list[str]:
            return [r.getMessage() for r in caplog.records if "component exited role=crashy" in r.getMessage()]

        await eventually(lambda: len(exits()) >= 2, timeout=15, what="crashy exited twice (restarted once)")
        one, two = exits()[:2]
        assert f"pid={first} code=3 restart_in=0.3s" in one and one.endswith("crashy up\ncrashy: fatal error")
        assert "restart_in=0.6s" in two  # doubled, never a hot loop
        assert all(r.levelno == logging.ERROR for r in caplog.records if "component exited" in r.getMessage())
        assert len({m.split("pid=")[1].split()[0] for m in exits()}) == len(exits())  # one report per exit
        assert set(sup.pids()) >= {"steady", "stubborn"}
    finally:
        pids = dict(sup.pids())
        await sup.stop()
    stopped = [r.getMessage().split("role=")[1].split()[0] for r in caplog.records
               if "component stopped role=" in r.getMessage()]
    assert stopped == ["crashy", "stubborn", "steady"]  # reverse start order
    assert any("did not stop within 0.5s, killing role=stubborn" in r.getMessage() for r in caplog.records)
    assert not [pid for pid in pids.values() if alive(pid)]


async def test_a_component_that_exits_before_ready_fails_the_start(short_dir: Path) -> None:
    sup = supervisor(short_dir, [component("steady", STEADY, "steady up"), component("early", EARLY, "never")])
    try:
        with pytest.raises(StartupError) as err:
            await sup.start()
        assert str(err.value).startswith("kubernetes component early exited with code 1 before it was ready; the "
                                         f"last lines of {short_dir}/logs/early.log:\ncannot open the data dir")
    finally:
        pids = dict(sup.pids())
        await sup.stop()
    assert not [pid for pid in pids.values() if alive(pid)]


async def test_a_component_never_ready_fails_the_start_in_its_bound(short_dir: Path) -> None:
    sup = supervisor(short_dir, [component("slow", STEADY, "never printed")], ready_timeout=1.0)
    try:
        with pytest.raises(StartupError, match=r"kubernetes component slow not ready within 1s \(log://slow\)"):
            await sup.start()
    finally:
        await sup.stop()
