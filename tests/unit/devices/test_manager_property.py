"""Property test: the device manager over random sequences of pod create/delete, health
changes, failing Allocates and plugin restarts, with an in-process fake plugin (no sockets).

Invariants checked after every step: no device is held by two pods (nor by two app
containers of one pod), node allocatable is never negative nor above capacity, admitted
pods hold exactly what they asked for, and a manager rebuilt from the same StateDB sees
the same allocations.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.manager import DeviceManager
from nodeagent.devices.model import ContainerAllocation, Device, PluginOptions
from nodeagent.errors import PluginCallError
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock

GPU = "example.com/gpu"
IDS = [f"gpu-{i}" for i in range(5)]


class FakeConn:
    def __init__(self, plugin: FakePlugin) -> None:
        self.plugin = plugin
        self.queue: asyncio.Queue[list[Device] | None] = asyncio.Queue()
        self.queue.put_nowait(plugin.snapshot())

    async def get_options(self) -> PluginOptions:
        return PluginOptions(get_preferred_allocation_available=True, pre_start_required=True)

    async def list_and_watch(self) -> AsyncIterator[list[Device]]:
        while (item := await self.queue.get()) is not None:
            yield item

    async def get_preferred_allocation(
        self, available: Sequence[str], must_include: Sequence[str], size: int
    ) -> tuple[str, ...]:
        return tuple(reversed(available))[:size]  # any answer: the manager must stay within bounds

    async def allocate(self, device_ids: Sequence[str]) -> ContainerAllocation:
        if self.plugin.fail_next:
            self.plugin.fail_next = False
            raise PluginCallError("Allocate: injected failure")
        return ContainerAllocation(envs={"IDS": ",".join(device_ids)})

    async def pre_start_container(self, device_ids: Sequence[str]) -> None:
        return None

    async def close(self) -> None:
        self.queue.put_nowait(None)


class FakePlugin:
    def __init__(self) -> None:
        self.health = dict.fromkeys(IDS, "Healthy")
        self.fail_next = False
        self.conns: list[FakeConn] = []

    def snapshot(self) -> list[Device]:
        return [Device(i, h, (n % 2,)) for n, (i, h) in enumerate(self.health.items())]

    async def dial(self, resource: str, socket_path: Path) -> FakeConn:
        conn = FakeConn(self)
        self.conns.append(conn)
        return conn

    def push(self) -> None:
        if self.conns:
            self.conns[-1].queue.put_nowait(self.snapshot())


def make_pod(uid: str, init: int, counts: Sequence[int]) -> Pod:
    return Pod(
        uid=uid, name=uid,
        init_containers=(Container("init", limits={GPU: init}),) if init else (),
        containers=tuple(Container(f"c{n}", limits={GPU: c}) for n, c in enumerate(counts)),
    )


ops = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.integers(0, 5), st.integers(0, 2),
                  st.lists(st.integers(0, 3), min_size=1, max_size=3)),
        st.tuples(st.just("delete"), st.integers(0, 5)),
        st.tuples(st.just("health"), st.sampled_from(IDS), st.booleans()),
        st.tuples(st.just("restart")),
        st.tuples(st.just("stop")),
        st.tuples(st.just("fail")),
    ),
    max_size=25,
)


async def settle() -> None:
    for _ in range(6):
        await asyncio.sleep(0)


def check(manager: DeviceManager, admitted: dict[str, Pod]) -> None:
    cap, alloc = manager.extended_resources()
    for r in cap:
        assert 0 <= alloc[r] <= cap[r]
    owner: dict[str, str] = {}
    for uid, pod in admitted.items():
        held = manager.pod_allocations(uid)
        app_ids: list[str] = []
        for c in pod.all_containers():
            ids = held.get(c.name, {}).get(GPU)
            assert len(ids.device_ids if ids else ()) == c.limits.get(GPU, 0)
            if ids and c.name != "init":
                app_ids.extend(ids.device_ids)
            for i in ids.device_ids if ids else ():
                assert owner.setdefault(i, uid) == uid, f"{i} held by {owner[i]} and {uid}"
        assert len(app_ids) == len(set(app_ids))


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=ops)
def test_random_sequences_keep_invariants(steps: list[tuple[object, ...]]) -> None:
    asyncio.run(_run(steps))


async def _run(steps: list[tuple[object, ...]]) -> None:
    db = StateDB.memory()
    plugin = FakePlugin()
    clock = FakeClock()
    manager = DeviceManager(dialer=plugin, checkpoint=Checkpoint(db), clock=clock,
                            device_plugins_dir=Path("/dp"), numa_nodes=(0, 1))
    await manager.start()
    await manager.register("v1beta1", "gpu.sock", GPU)
    await settle()
    admitted: dict[str, Pod] = {}
    try:
        for step in steps:
            kind = step[0]
            if kind == "create":
                _, n, init, counts = step
                pod = make_pod(f"pod-{n}", int(init), list(counts))  # type: ignore[call-overload]
                if pod.uid not in admitted:
                    result = await manager.admit(pod, list(admitted.values()))
                    if result.admit:
                        admitted[pod.uid] = pod
                    else:
                        assert manager.pod_allocations(pod.uid) == {}
            elif kind == "delete":
                uid = f"pod-{step[1]}"
                await manager.remove(admitted.pop(uid) if uid in admitted else make_pod(uid, 0, [1]))
            elif kind == "health":
                plugin.health[str(step[1])] = "Healthy" if step[2] else "Unhealthy"
                plugin.push()
            elif kind == "restart":
                await manager.register("v1beta1", "gpu.sock", GPU)
            elif kind == "stop":
                if plugin.conns:
                    await plugin.conns[-1].close()
            elif kind == "fail":
                plugin.fail_next = True
            await settle()
            check(manager, admitted)
        rebuilt = DeviceManager(dialer=plugin, checkpoint=Checkpoint(db), clock=clock,
                                device_plugins_dir=Path("/dp"))
        for uid in admitted:
            assert rebuilt.pod_allocations(uid) == manager.pod_allocations(uid)
        assert rebuilt.reconcile(set(admitted)) == []
    finally:
        await manager.stop()
        db.close()
