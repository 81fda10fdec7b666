"""KubeAccess over real HTTP against the fake API server: requests, typed errors, watch, kubeconfig changes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from nodeagent.errors import AlreadyExists, Conflict, NotFound, Unavailable
from plugins.dra_kit.kube import APIError, Gone, KubeAccess, WatchEvent
from plugins.dra_kit.slices import field_selector, new_slice
from tests.unit.dra_kit.fake_apiserver import FakeAPIServer
from tests.unit.dra_kit.memory_api import MemoryAPI

SELECTOR = field_selector("gpu.example.com", "node-a")


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[FakeAPIServer, KubeAccess]]:
    server = FakeAPIServer(MemoryAPI())
    await server.start()
    access = KubeAccess(server.kubeconfig(tmp_path / "kubeconfig"), timeout=5)
    try:
        yield server, access
    finally:
        await access.close()
        await server.stop()


def query(path: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(path).query)


def claim(name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "team", "uid": uid}, "status": {}}


async def test_get_node_and_claim_with_version_fallback(served: tuple[FakeAPIServer, KubeAccess]) -> None:
    server, access = served
    node = await access.get_node("node-a")
    assert node["metadata"]["uid"] == "node-uid-1"
    server.api.put_claim(claim("c1", "u1"))
    assert (await access.get_claim("team", "c1"))["apiVersion"] == "resource.k8s.io/v1"
    # a server without resource.k8s.io/v1: v1beta2, then v1beta1, as the kubeletplugin helper
    server.api.claim_versions = {"v1beta1"}
    server.requests.clear()
    got = await access.get_claim("team", "c1")
    assert got["apiVersion"] == "resource.k8s.io/v1beta1"
    assert [p for _, p, _ in server.requests] == [
        f"/apis/resource.k8s.io/{v}/namespaces/team/resourceclaims/c1" for v in ("v1", "v1beta2", "v1beta1")]


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        ("claim", NotFound, 'resourceclaims.resource.k8s.io "ghost" not found'),
        ("node", NotFound, 'nodes "node-z" not found'),
    ],
)
async def test_not_found_carries_the_status_message(served: tuple[FakeAPIServer, KubeAccess], call: str,
                                                    error: type[Exception], text: str) -> None:
    _, access = served
    with pytest.raises(error) as err:
        if call == "claim":
            await access.get_claim("team", "ghost")
        else:
            await access.get_node("node-z")
    assert str(err.value) == text


async def test_wrong_token_is_an_api_error(served: tuple[FakeAPIServer, KubeAccess], tmp_path: Path) -> None:
    server, _ = served
    bad = KubeAccess(server.kubeconfig(tmp_path / "bad", token="nope"))
    try:
        with pytest.raises(APIError) as err:
            await bad.get_node("node-a")
        assert (err.value.status, str(err.value)) == (401, "Unauthorized")
    finally:
        await bad.close()


async def test_slice_create_update_delete(served: tuple[FakeAPIServer, KubeAccess]) -> None:
    server, access = served
    made = await access.create_slice(new_slice("gpu.example.com", "node-a", "node-uid-1", "p", [{"name": "d"}], 1))
    name = made["metadata"]["name"]
    assert name.startswith("node-a-gpu.example.com-") and made["metadata"]["uid"]
    assert server.requests[-1][:2] == ("POST", "/apis/resource.k8s.io/v1/resourceslices")
    # update with the current resourceVersion, then with the stale one: Conflict
    made["spec"]["devices"] = [{"name": "e"}]
    updated = await access.update_slice(made)
    assert updated["spec"]["devices"] == [{"name": "e"}]
    with pytest.raises(Conflict, match="the object has been modified"):
        await access.update_slice(made)
    with pytest.raises(AlreadyExists):
        await access.create_slice(updated | {"metadata": {"name": name}})
    # delete with preconditions: a stale resourceVersion is refused, the right one deletes
    with pytest.raises(Conflict, match="Precondition failed: ResourceVersion in precondition"):
        await access.delete_slice(name, uid=made["metadata"]["uid"],
                                  resource_version=made["metadata"]["resourceVersion"])
    await access.delete_slice(name, uid=updated["metadata"]["uid"],
                              resource_version=updated["metadata"]["resourceVersion"])
    method, path, body = server.requests[-1]
    assert (method, path) == ("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{name}")
    assert body == {"preconditions": {"uid": updated["metadata"]["uid"],
                                      "resourceVersion": updated["metadata"]["resourceVersion"]}}
    with pytest.raises(NotFound):
        await access.delete_slice(name, uid="", resource_version="")


async def test_list_then_watch_from_its_resource_version(served: tuple[FakeAPIServer, KubeAccess]) -> None:
    server, access = served
    mine = await server.api.create_slice(new_slice("gpu.example.com", "node-a", "u", "p", [], 1))
    await server.api.create_slice(new_slice("other.example.com", "node-a", "u", "p", [], 1))
    items, rv = await access.list_slices(SELECTOR)
    assert [i["metadata"]["name"] for i in items] == [mine["metadata"]["name"]]
    assert rv == str(server.api.rv)
    assert query(server.requests[-1][1]) == {"fieldSelector": [SELECTOR]}

    events: list[WatchEvent] = []

    async def follow() -> None:
        async for event in access.watch_slices(SELECTOR, rv):
            events.append(event)

    task = asyncio.ensure_future(follow())
    try:
        while not events:
            await asyncio.sleep(0.01)
        assert events[0].type == "BOOKMARK" and events[0].resource_version == rv
        server.api.remove_slice(mine["metadata"]["name"])
        await server.api.create_slice(new_slice("other.example.com", "node-a", "u", "q", [], 1))  # filtered out
        again = await server.api.create_slice(new_slice("gpu.example.com", "node-a", "u", "p", [], 1))
        while len(events) < 3:
            await asyncio.sleep(0.01)
        assert [(e.type, e.object["metadata"]["name"]) for e in events[1:]] == [
            ("DELETED", mine["metadata"]["name"]), ("ADDED", again["metadata"]["name"])]
        (watch,) = [query(p) for _, p, _ in server.requests if "watch" in query(p)]
        assert watch == {"fieldSelector": [SELECTOR], "watch": ["True"], "resourceVersion": [rv],
                         "allowWatchBookmarks": ["True"], "timeoutSeconds": ["300"]}
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_watch_from_a_compacted_version_is_gone(served: tuple[FakeAPIServer, KubeAccess]) -> None:
    server, access = served
    await server.api.create_slice(new_slice("gpu.example.com", "node-a", "u", "p", [], 1))
    server.api.compact()
    with pytest.raises(Gone, match="too old resource version"):
        async for _ in access.watch_slices(SELECTOR, "1"):
            pass


async def test_a_watch_answered_with_a_list_is_an_api_error(served: tuple[FakeAPIServer, KubeAccess]) -> None:
    server, access = served
    server.watch_as_list = True
    with pytest.raises(APIError, match=r"^watch resourceslices: Malformed JSON response"):
        async for _ in access.watch_slices(SELECTOR, "1"):
            pass


async def test_watch_ends_when_the_server_times_it_out(served: tuple[FakeAPIServer, KubeAccess]) -> None:
    _, access = served
    access.watch_timeout = 1
    seen = [e.type async for e in access.watch_slices(SELECTOR, "")]
    assert seen == ["BOOKMARK"]


async def test_kubeconfig_missing_then_rewritten_for_a_new_port(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    access = KubeAccess(path, timeout=2)
    first = FakeAPIServer(MemoryAPI(node_uid="first"))
    second = FakeAPIServer(MemoryAPI(node_uid="second"))
    try:
        with pytest.raises(Unavailable, match="No such file"):
            await access.get_node("node-a")
        await first.start()
        first.kubeconfig(path)
        assert (await access.get_node("node-a"))["metadata"]["uid"] == "first"
        await first.stop()
        with pytest.raises(Unavailable, match=r"kubernetes API http://127\.0\.0\.1:"):
            await access.get_node("node-a")
        await second.start()  # a restarted daemon on another port writes its kubeconfig again
        second.kubeconfig(path)
        assert (await access.get_node("node-a"))["metadata"]["uid"] == "second"
    finally:
        await access.close()
        await first.stop()
        await second.stop()
