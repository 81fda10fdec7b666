"""Protobuf answers of the real API server app over HTTPS: GET, LIST, WATCH, errors, metadata views,
the JSON fallback of kinds without a message, and the 406s, as kube-apiserver negotiates them.

Why over HTTPS with aiohttp: negotiation and framing are HTTP behaviour (Accept, Content-Type,
chunked length-prefixed frames), so they are checked on the wire; the answers are read back with the
decoder (its own unit tests tie it to Go's bytes) and compared with the JSON answer of the same read.
The comparison with the real kube-apiserver is tests/kube_apiserver_tier/test_protobuf_answers.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from nodeagent.apiserver.protobuf import decoder
from tests.rpc.test_apiserver_http import CM_PATH, Client, configmap, serving

pytestmark = pytest.mark.rpc

PB = "application/vnd.kubernetes.protobuf"
CLIENT_GO = f"{PB}, */*"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    async with serving(tmp_path) as c:
        yield c


async def _raw(client: Client, method: str, path: str, accept: str, body: Any = None) -> tuple[int, str, bytes]:
    hdrs = {"Authorization": f"Bearer {client.token}", "Accept": accept, "Content-Type": "application/json"}
    data = None if body is None else json.dumps(body).encode()
    async with client.session.request(method, client.base + path, data=data, headers=hdrs) as resp:
        return resp.status, resp.headers["Content-Type"], await resp.read()


async def test_get_and_list_answer_protobuf_equal_to_json(client: Client) -> None:
    await client.call("POST", CM_PATH, body=configmap("pb", k="v"))
    status, media, body = await _raw(client, "GET", f"{CM_PATH}/pb", CLIENT_GO)
    assert (status, media) == (200, PB)
    _, as_json, _ = await client.call("GET", f"{CM_PATH}/pb")
    assert decoder.decode_answer(body) == as_json
    status, media, body = await _raw(client, "GET", CM_PATH, CLIENT_GO)
    assert (status, media) == (200, PB)
    listed = decoder.decode_answer(body)
    _, list_json, _ = await client.call("GET", CM_PATH)
    assert listed["kind"] == "ConfigMapList" and listed["metadata"] == list_json["metadata"]
    # list items carry no apiVersion/kind in protobuf (they are the List's repeated messages)
    assert listed["items"] == [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
                               for o in list_json["items"]]


async def test_writes_answer_protobuf(client: Client) -> None:
    status, media, body = await _raw(client, "POST", CM_PATH, CLIENT_GO, configmap("w", a="1"))
    assert (status, media) == (201, PB)
    assert decoder.decode_answer(body)["data"] == {"a": "1"}
    status, media, body = await _raw(client, "DELETE", f"{CM_PATH}/w", CLIENT_GO)
    assert (status, media) == (200, PB)


async def test_errors_are_a_protobuf_status(client: Client) -> None:
    status, media, body = await _raw(client, "GET", f"{CM_PATH}/missing", CLIENT_GO)
    assert (status, media) == (404, PB)
    assert decoder.decode_answer(body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'configmaps "missing" not found', "reason": "NotFound",
        "details": {"name": "missing", "kind": "configmaps"}, "code": 404}


async def test_metadata_view_in_protobuf_table_in_json(client: Client) -> None:
    await client.call("POST", CM_PATH, body=configmap("m"))
    status, media, body = await _raw(
        client, "GET", CM_PATH, f"{PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json")
    assert (status, media) == (200, PB)
    doc = decoder.decode_answer(body)
    assert doc["kind"] == "PartialObjectMetadataList" and "m" in [i["metadata"]["name"] for i in doc["items"]]
    status, media, _ = await _raw(client, "GET", CM_PATH,
                                  f"{PB};as=Table;g=meta.k8s.io;v=v1, application/json;as=Table;g=meta.k8s.io;v=v1")
    assert (status, media) == (200, "application/json")


async def test_custom_resource_definitions_are_answered_in_protobuf(client: Client) -> None:
    """CustomResourceDefinitions have their messages (protowire/apiextensions.py): answered in protobuf
    to client-go's Accept and to protobuf alone, as kube-apiserver answers them."""
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for accept in (CLIENT_GO, PB):
        status, media, body = await _raw(client, "GET", path, accept)
        assert (status, media) == (200, PB)
        assert decoder.decode_answer(body)["kind"] == "CustomResourceDefinitionList"


async def test_watch_stream_is_length_framed_protobuf(client: Client) -> None:
    await client.call("POST", CM_PATH, body=configmap("before"))
    hdrs = {"Authorization": f"Bearer {client.token}", "Accept": CLIENT_GO}
    url = client.base + CM_PATH + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=10"
    events: list[tuple[str, dict[str, Any]]] = []
    pending = b""
    async with client.session.get(url, headers=hdrs) as resp:
        assert (resp.status, resp.headers["Content-Type"]) == (200, f"{PB};stream=watch")
        async with asyncio.timeout(10):
            async for chunk in resp.content.iter_any():
                got, pending = decoder.decode_watch(pending + chunk)
                for typ, obj in got:
                    events.append((typ, obj))
                    if typ == "ADDED" and obj["metadata"]["name"] == "before":
                        await client.call("POST", CM_PATH, body=configmap("after"))
                if any(t == "ADDED" and o["metadata"]["name"] == "after" for t, o in events) and \
                        any(t == "BOOKMARK" for t, _ in events):
                    break
    added = [o["metadata"]["name"] for t, o in events if t == "ADDED"]
    assert [n for n in added if n != "kube-root-ca.crt"] == ["before", "after"]
    assert all(o["kind"] == "ConfigMap" and o["apiVersion"] == "v1" for _, o in events)
    bookmark = next(o for t, o in events if t == "BOOKMARK")
    assert bookmark["metadata"]["resourceVersion"]
