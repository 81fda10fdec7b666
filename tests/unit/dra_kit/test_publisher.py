"""SlicePublisher on MemoryAPI: publish, keep published, bump generations, list again when the watch breaks."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from plugins.dra_kit.publisher import SlicePublisher
from tests.unit.dra_kit.memory_api import MemoryAPI
from tests.waiting import eventually

DRIVER, NODE = "gpu.example.com", "node-a"
DEVICES = [{"name": "gpu-0"}, {"name": "gpu-1"}]


@pytest.fixture
async def running() -> AsyncIterator[tuple[MemoryAPI, SlicePublisher]]:
    api = MemoryAPI(NODE)
    pub = SlicePublisher(api, DRIVER, {"pool-a": DEVICES}, node_name=NODE, interval=0.05)
    pub.start()
    try:
        yield api, pub
    finally:
        await pub.stop()


def only(api: MemoryAPI) -> dict[str, Any]:
    (obj,) = api.slices.values()
    return obj


async def test_publishes_one_owned_slice_and_leaves_it_alone(running: tuple[MemoryAPI, SlicePublisher]) -> None:
    api, pub = running
    await asyncio.wait_for(pub.published.wait(), 3)
    obj = only(api)
    assert obj["metadata"]["name"].startswith("node-a-gpu.example.com-")
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": "node-uid-1", "controller": True}]
    assert obj["spec"] == {"driver": DRIVER, "nodeName": NODE, "devices": DEVICES,
                           "pool": {"name": "pool-a", "generation": 1, "resourceSliceCount": 1}}
    await asyncio.sleep(0.3)  # several rounds and its own watch event: nothing more written
    assert (pub.creates, pub.updates, pub.deletes, pub.lists) == (1, 0, 0, 1)
    assert api.calls.count("get_node") == 1


async def test_republished_after_deletion_and_generation_bumped_on_change(
        running: tuple[MemoryAPI, SlicePublisher]) -> None:
    api, pub = running
    await asyncio.wait_for(pub.published.wait(), 3)
    api.remove_slice(only(api)["metadata"]["name"])  # the daemon deleted the node's slices
    await eventually(lambda: len(api.slices) == 1)
    assert only(api)["spec"]["pool"]["generation"] == 1
    await pub.set_pools({"pool-a": [{"name": "gpu-0"}]})
    await eventually(lambda: only(api)["spec"]["devices"] == [{"name": "gpu-0"}])
    assert only(api)["spec"]["pool"]["generation"] == 2
    assert (pub.creates, pub.updates) == (2, 1)


async def test_someone_elses_edit_is_reverted_and_extra_slices_deleted(
        running: tuple[MemoryAPI, SlicePublisher]) -> None:
    api, pub = running
    await asyncio.wait_for(pub.published.wait(), 3)
    obj = only(api)
    edited = {**obj, "spec": {**obj["spec"], "devices": [{"name": "rogue"}]}}
    await api.update_slice(edited)
    await eventually(lambda: only(api)["spec"]["devices"] == DEVICES)
    assert only(api)["spec"]["pool"]["generation"] == 2
    # an older generation of the pool left behind by an earlier run goes
    stale = await api.create_slice({"metadata": {"name": "stale"}, "spec": {
        "driver": DRIVER, "nodeName": NODE, "devices": [], "pool": {"name": "pool-a", "generation": 1,
                                                                    "resourceSliceCount": 1}}})
    assert stale["metadata"]["name"] == "stale"
    await eventually(lambda: "stale" not in api.slices)
    # a pool that is no longer wanted goes too; another driver's or node's slices are not ours
    await api.create_slice({"metadata": {"name": "other-node"}, "spec": {
        "driver": DRIVER, "nodeName": "node-b", "devices": [], "pool": {"name": "x", "generation": 1}}})
    await pub.set_pools({})
    await eventually(lambda: set(api.slices) == {"other-node"})


async def test_server_form_of_devices_is_not_fought(running: tuple[MemoryAPI, SlicePublisher]) -> None:
    api, pub = running
    await asyncio.wait_for(pub.published.wait(), 3)
    original = api.create_slice

    async def normalizing(obj: Any) -> dict[str, Any]:
        stored = copy.deepcopy(obj)
        for d in stored["spec"]["devices"]:
            d.setdefault("attributes", {})  # the server stores (and returns, and watches) a default
        return await original(stored)

    api.create_slice = normalizing  # type: ignore[method-assign]
    api.remove_slice(only(api)["metadata"]["name"])
    await eventually(lambda: len(api.slices) == 1)
    await asyncio.sleep(0.3)
    assert pub.updates == 0  # the stored form counts as published, no update loop


async def test_relists_after_gone_and_after_the_api_was_away(running: tuple[MemoryAPI, SlicePublisher]) -> None:
    api, pub = running
    await asyncio.wait_for(pub.published.wait(), 3)
    # the API goes away (daemon restart): watch and every call fail for a while
    api.disconnect()
    await asyncio.sleep(0.2)
    api.fail.clear()
    api.remove_slice(only(api)["metadata"]["name"])  # the new daemon deleted the slices at start
    api.compact()  # and the history is gone: a watch from the old resourceVersion gets 410
    api.put_node(NODE, "node-uid-2")
    await eventually(lambda: len(api.slices) == 1)
    assert pub.lists >= 2
    assert only(api)["metadata"]["ownerReferences"][0]["uid"] == "node-uid-2"  # the Node was read again


async def test_nothing_published_without_the_node() -> None:
    api = MemoryAPI(node="")
    pub = SlicePublisher(api, DRIVER, {"p": DEVICES}, node_name=NODE, interval=0.05)
    pub.start()
    try:
        await asyncio.sleep(0.2)
        assert not api.slices and not pub.published.is_set()
        api.put_node(NODE, "late")
        await asyncio.wait_for(pub.published.wait(), 3)
        assert only(api)["metadata"]["ownerReferences"][0]["uid"] == "late"
    finally:
        await pub.stop()
