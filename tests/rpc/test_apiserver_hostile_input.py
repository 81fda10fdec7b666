"""Hostile input through the real API server: committed-then-broken quotas, lone surrogates and
unbounded echoes in error texts, YAML bombs. Each is refused with a Status and the server keeps answering."""

from __future__ import annotations

import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from nodeagent.apiserver.server import APIServer, APIServerOptions
from nodeagent.clock import RealClock
from nodeagent.objects import core_misc, resource
from nodeagent.store import ObjectStore, builtin_kinds
from tests.rpc.test_apiserver_http import Client
from tests.unit.objects.test_yaml_budget import bomb

pytestmark = pytest.mark.rpc
QUOTAS = "/api/v1/namespaces/default/resourcequotas"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    """The API server over a store with the hooks the daemon registers (wiring.control_plane.open_store)."""
    store = ObjectStore.memory(builtin_kinds().with_hooks({**resource.hooks(), **core_misc.hooks()}), RealClock())
    opts = APIServerOptions(bind_address="127.0.0.1:0", credentials_dir=tmp_path / "creds",
                            kubeconfig=tmp_path / "kubeconfig", max_request_bytes=64 * 1024)
    server = APIServer(store, RealClock(), opts)
    await server.start()
    assert server.credentials is not None
    ctx = ssl.create_default_context(cafile=str(server.credentials.ca_path))
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx))
    try:
        yield Client(server, session, server.credentials.token)
    finally:
        await session.close()
        await server.stop()
        store.close()


async def test_numeric_name_and_bad_hard_are_refused_and_listing_works(client: Client) -> None:
    for body in ({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": 12345}},
                 {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": "x"}}):
        status, doc, _ = await client.call("POST", QUOTAS, body=body)
        assert status == 422, doc
        assert doc["reason"] == "Invalid"
    status, doc, _ = await client.call("GET", QUOTAS)
    assert status == 200 and doc["items"] == []


async def test_lone_surrogate_and_long_values_in_error_texts(client: Client) -> None:
    raw = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a\\ud83d"}}'
    status, doc, _ = await client.call("POST", "/api/v1/namespaces/default/configmaps", raw=raw)
    assert status == 422 and '"a\ufffd"' in doc["message"]
    long = "A" * 20_000
    status, doc, _ = await client.call("POST", "/api/v1/namespaces/default/configmaps",
                                       body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": long}})
    assert status == 422 and len(doc["message"]) < 8 * 1024  # under gRPC's and clients' metadata limits
    assert doc["details"]["causes"][0]["message"].startswith('Invalid value: "' + "A" * 1024 + '..."')


async def test_yaml_bomb_is_refused_quickly(client: Client) -> None:
    start = time.monotonic()
    status, doc, _ = await client.call("POST", "/api/v1/namespaces/default/configmaps", raw=bomb().encode(),
                                       content_type="application/yaml")
    assert time.monotonic() - start < 2
    assert status == 400 and "yaml: document contains excessive aliasing" in doc["message"]
    status, _, _ = await client.call("GET", "/healthz", token=False)
    assert status == 200
