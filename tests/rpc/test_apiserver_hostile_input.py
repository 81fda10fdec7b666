"""Hostile input through the real API server: committed-then-broken quotas, lone surrogates and
unbounded echoes in error texts, YAML bombs. Each is refused with a Status and the server keeps answering."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.rpc.test_apiserver_http import Client, serving
from tests.unit.objects.test_yaml_budget import bomb

pytestmark = pytest.mark.rpc
QUOTAS = "/api/v1/namespaces/default/resourcequotas"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    """The API server over a store with the hooks the daemon registers (objects.kinds.admitted_kinds)."""
    async with serving(tmp_path) as c:
        yield c


async def test_numeric_name_and_bad_hard_are_refused_and_listing_works(client: Client) -> None:
    # kube-apiserver's decoder refuses both before validation: 400 BadRequest with the Go decoder's text
    # (compared with the real kube-apiserver in tests/integration/test_kube_apiserver_edge.py)
    prefix = 'ResourceQuota in version "v1" cannot be handled as a ResourceQuota: json: cannot unmarshal '
    for body, message in (
        ({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": 12345}},
         prefix + "number into Go struct field ObjectMeta.metadata.name of type string"),
        ({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": "x"}},
         prefix + "string into Go struct field ResourceQuotaSpec.spec.hard of type v1.ResourceList"),
    ):
        status, doc, _ = await client.call("POST", QUOTAS, body=body)
        assert (status, doc["reason"], doc["message"]) == (400, "BadRequest", message), doc
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
