"""HealthBoard feed, ClaimFlow idempotency and checkpoint, control command framing (no sockets)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nodeagent.errors import ConfigError, NotFound
from plugins.dra_kit.claims import ClaimAllocation
from plugins.dra_kit.control import ControlServer
from plugins.dra_kit.flow import ClaimFlow, PreparedStore
from plugins.dra_kit.health import HealthBoard
from plugins.dra_kit.model import AllocatedDevice, ClaimRef, DeviceHealth, PreparedDevice

C1 = ClaimRef("ns", "u1", "c1")
C2 = ClaimRef("ns", "u2", "c2")


async def test_board_streams_now_on_change_and_on_resend() -> None:
    board = HealthBoard([DeviceHealth("p", "a"), DeviceHealth("p", "b")], resend=0.2)
    it = board.watch().__aiter__()
    first = await asyncio.wait_for(it.__anext__(), 1)
    assert [d.health for d in first] == ["Healthy", "Healthy"]
    assert await board.set("p", "b", "unhealthy", "hot") is True
    assert await board.set("p", "b", "Unhealthy", "hot") is False
    second = await asyncio.wait_for(it.__anext__(), 0.1)  # at once, not after the resend period
    assert [(d.device, d.health, d.message) for d in second] == [("a", "Healthy", ""), ("b", "Unhealthy", "hot")]
    third = await asyncio.wait_for(it.__anext__(), 1)  # resend without a change
    assert third == second
    with pytest.raises(KeyError):
        await board.set("p", "zz", "Healthy")
    await board.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(it.__anext__(), 1)


async def test_board_pause_silences_streams() -> None:
    board = HealthBoard([DeviceHealth("p", "a")], resend=0.05)
    await board.pause(True)
    it = board.watch().__aiter__()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(nxt := asyncio.ensure_future(it.__anext__())), 0.2)
    await board.pause(False)
    assert [d.device for d in await asyncio.wait_for(nxt, 1)] == ["a"]
    await board.close()


class Source:
    def __init__(self) -> None:
        self.calls = 0
        self.missing: set[str] = set()

    async def allocation(self, claim: ClaimRef) -> ClaimAllocation:
        self.calls += 1
        if claim.uid in self.missing:
            raise NotFound(f"ResourceClaim {claim.namespace}/{claim.name} not found")
        return ClaimAllocation((AllocatedDevice("gpu", "p", f"dev-{claim.name}"),))


class Work:
    def __init__(self) -> None:
        self.prepared: list[str] = []
        self.released: list[tuple[str, int]] = []

    async def prepare(self, claim: ClaimRef, alloc: ClaimAllocation) -> list[PreparedDevice]:
        self.prepared.append(claim.uid)
        return [PreparedDevice((d.request,), d.pool, d.device, (f"k/c={claim.uid}",)) for d in alloc.devices]

    async def release(self, claim: ClaimRef, devices: Sequence[PreparedDevice]) -> None:
        self.released.append((claim.uid, len(devices)))


async def test_flow_idempotent_with_per_claim_errors(tmp_path: Path) -> None:
    source, work = Source(), Work()
    source.missing.add("u2")
    store = PreparedStore(tmp_path / "cp.json")
    flow = ClaimFlow("d", source, store, work.prepare, work.release)
    first = await flow.prepare([C1, C2])
    assert first["u1"].devices == (PreparedDevice(("gpu",), "p", "dev-c1", ("k/c=u1",)),)
    assert first["u2"].error == "ResourceClaim ns/c2 not found"
    again = await flow.prepare([C1])
    assert again["u1"] == first["u1"]
    assert work.prepared == ["u1"] and source.calls == 2
    # a restarted driver knows the claim from its checkpoint
    reloaded = ClaimFlow("d", source, PreparedStore(tmp_path / "cp.json"), work.prepare, work.release)
    assert (await reloaded.prepare([C1]))["u1"] == first["u1"]
    assert work.prepared == ["u1"]
    assert await reloaded.unprepare([C1, C2]) == {"u1": "", "u2": ""}
    assert work.released == [("u1", 1), ("u2", 0)]
    assert json.loads((tmp_path / "cp.json").read_text()) == {"version": 1, "claims": {}}


async def test_flow_concurrent_prepare_of_one_claim_runs_once() -> None:
    source, work = Source(), Work()
    flow = ClaimFlow("d", source, PreparedStore(), work.prepare, work.release)
    a, b = await asyncio.gather(flow.prepare([C1]), flow.prepare([C1]))
    assert a == b and work.prepared == ["u1"]


async def test_flow_unexpected_exception_is_claim_error() -> None:
    async def broken(claim: ClaimRef, alloc: ClaimAllocation) -> list[PreparedDevice]:
        raise RuntimeError("disk full")

    work = Work()
    flow = ClaimFlow("d", Source(), PreparedStore(), broken, work.release)
    result = (await flow.prepare([C1]))["u1"]
    assert result.error == "driver d: prepare ns/c1: disk full"
    assert flow.store.get("u1") is None


def test_bad_checkpoint_names_file(tmp_path: Path) -> None:
    path = tmp_path / "cp.json"
    path.write_text('{"version": 9}')
    with pytest.raises(ConfigError, match=f"checkpoint {path}: cannot read: unsupported version 9"):
        PreparedStore(path)


async def test_control_framing() -> None:
    async def echo(arg: Any) -> dict[str, Any]:
        if arg == "missing":
            raise KeyError("no such thing")
        if arg == "bad":
            raise ValueError("bad argument")
        return {"echo": arg}

    ctl = ControlServer(Path("/tmp/unused.ctl"), {"echo": echo})
    assert await ctl.run(b'{"echo": 1}') == {"ok": True, "echo": 1}
    assert await ctl.run(b'{"echo": "missing"}') == {"ok": False, "code": "NotFound", "error": "no such thing"}
    assert (await ctl.run(b'{"echo": "bad"}'))["code"] == "InvalidArgument"
    assert (await ctl.run(b"nope"))["error"] == "request is not JSON"
    assert (await ctl.run(b'{"a": 1, "b": 2}'))["error"] == "expected one command object"
    assert "unknown command 'zap' (known: echo)" in (await ctl.run(b'{"zap": 1}'))["error"]
