"""Every field of every served resource.k8s.io kind, in each served version, written through the
REST API and read back unchanged.

A driver on the upstream kubeletplugin helper compares the slice it wrote with the one the API
server gives back and logs a DroppedFieldsError on any difference; `allowMultipleAllocations:
false` once vanished that way from every slice of dra-example-driver. The objects
(tests/rpc/resource_objects.py) set every field upstream's v1.37.2 OpenAPI documents list for
the kind and version (the coverage test checks that against the documents in the Go module
cache when they are there); the API server runs with the feature gates of those fields on.
Fields of alpha gates nodeagent does not implement are dropped on write exactly as upstream
drops a disabled gate's fields: they are listed in NOT_IMPLEMENTED with their gate, and the test
checks that they are dropped and nothing else is.
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from nodeagent.apiserver.server import APIServer, APIServerOptions
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.objects.resource.validation import DEFAULT_GATES
from nodeagent.store import ObjectStore
from nodeagent.util.clock import RealClock
from tests.rpc import resource_objects as ro
from tests.rpc.test_apiserver_http import Client

pytestmark = pytest.mark.rpc

VERSIONS = ("v1", "v1beta2", "v1beta1", "v1alpha3")
GATES = {**DEFAULT_GATES, "DRAListTypeAttributes": True, "DRAOptionalNodeOperations": True,
         "DRANodeAllocatableResources": True}
"""Every gate nodeagent implements for a field of these kinds, on."""

NOT_IMPLEMENTED: dict[str, tuple[str, ...]] = {
    "DRADerivedAttributes": ("spec.devices.requests[].exactly.derivedAttributes",
                             "spec.devices.requests[].firstAvailable[].derivedAttributes",
                             "spec.devices.requests[].derivedAttributes",
                             "spec.spec.devices.requests[].exactly.derivedAttributes",
                             "spec.spec.devices.requests[].firstAvailable[].derivedAttributes",
                             "spec.spec.devices.requests[].derivedAttributes"),
    "DRADeviceCompatibilityGroups": ("spec.devices[].consumesCounters[].compatibilityGroups",
                                     "spec.devices[].basic.consumesCounters[].compatibilityGroups"),
    "DRAPartitionableDevicesType": ("spec.partitionTypeAttribute",),
}
"""Alpha gates of 1.37 (off by default) nodeagent does not implement, and the fields they govern:
with the gate off upstream's strategy drops them on write, and so does nodeagent."""

_PLURALS = {"DeviceClass": "deviceclasses", "ResourceClaim": "resourceclaims",
            "ResourceClaimTemplate": "resourceclaimtemplates", "ResourceSlice": "resourceslices",
            "DeviceTaintRule": "devicetaintrules"}
_NAMESPACED = {"ResourceClaim", "ResourceClaimTemplate"}
_UPSTREAM_OPENAPI = Path(os.environ.get("GOMODCACHE", "/root/go/pkg/mod")) / \
    "k8s.io/kubernetes@v1.37.2/api/openapi-spec/v3"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    store = ObjectStore.memory(admitted_kinds(GATES), RealClock())
    opts = APIServerOptions(bind_address="127.0.0.1:0", credentials_dir=tmp_path / "creds",
                            kubeconfig=tmp_path / "kubeconfig")
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


def _path(obj: dict[str, Any]) -> str:
    kind, name = obj["kind"], obj["metadata"]["name"]
    ns = f"/namespaces/{obj['metadata']['namespace']}" if kind in _NAMESPACED else ""
    return f"/apis/{obj['apiVersion']}{ns}/{_PLURALS[kind]}/{name}"


def _without_unimplemented(value: Any, prefix: str = "") -> Any:
    """The object as nodeagent must give it back: the fields of NOT_IMPLEMENTED gates removed."""
    dropped = {p for paths in NOT_IMPLEMENTED.values() for p in paths}
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            if path in dropped:
                continue
            sub = path + "{}" if ro.is_map(path) and isinstance(item, dict) else path
            out[key] = ({k: _without_unimplemented(v, sub) for k, v in item.items()}
                        if sub.endswith("{}") else _without_unimplemented(item, path))
        return out
    if isinstance(value, list):
        return [_without_unimplemented(v, prefix + "[]") for v in value]
    return value


def _differences(want: Any, got: Any, path: str = "") -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for key in sorted(set(want) | set(got)):
            sub = f"{path}.{key}" if path else key
            if key not in got:
                out.append(f"{sub}: dropped (sent {json.dumps(want[key])[:80]})")
            elif key not in want:
                out.append(f"{sub}: added {json.dumps(got[key])[:80]}")
            else:
                out += _differences(want[key], got[key], sub)
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [d for i, (w, g) in enumerate(zip(want, got, strict=True)) for d in _differences(w, g, f"{path}[{i}]")]
    return [] if want == got else [f"{path}: sent {json.dumps(want)[:80]}, got {json.dumps(got)[:80]}"]


def _body(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}


@pytest.mark.parametrize("version", VERSIONS)
async def test_every_field_round_trips(client: Client, version: str) -> None:
    problems: list[str] = []
    for obj, status in ro.objects(version):
        if obj["kind"] == "ResourceClaim" or obj["kind"] == "ResourceClaimTemplate":
            await client.call("POST", "/api/v1/namespaces", body={
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": obj["metadata"]["namespace"]}})
        path = _path(obj)
        collection = path.rsplit("/", 1)[0]
        code, made, _ = await client.call("POST", collection, body=obj)
        assert code == 201, f"{version} {obj['kind']} {obj['metadata']['name']}: {made}"
        if status is not None:
            made["status"] = status
            code, made, _ = await client.call("PUT", path + "/status", body=made)
            assert code == 200, f"{version} {obj['kind']} status: {made}"
        want = _without_unimplemented({**_body(obj), **({"status": status} if status else {})})
        code, got, _ = await client.call("GET", path)
        assert code == 200
        label = f"{version} {obj['kind']} {obj['metadata']['name']}"
        problems += [f"{label} {d}" for d in _differences(want, _body(got))]
        for listed in (await client.call("GET", collection))[1]["items"]:
            if listed["metadata"]["name"] == obj["metadata"]["name"]:
                problems += [f"{label} (list) {d}" for d in _differences(want, _body(listed))]
        await client.call("DELETE", path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_objects_set_every_field_upstream_lists(version: str) -> None:
    document = _UPSTREAM_OPENAPI / f"apis__resource.k8s.io__{version}_openapi.json"
    if not document.exists():
        pytest.skip(f"upstream's OpenAPI document is not in the Go module cache ({document}): "
                    "run `go mod download k8s.io/kubernetes@v1.37.2` to check the coverage")
    schemas = json.loads(document.read_text())["components"]["schemas"]
    set_paths: dict[str, set[str]] = {}
    for obj, status in ro.objects(version):
        paths = ro.field_paths(obj) | ({f"status.{p}" for p in ro.field_paths(status)} if status else set())
        set_paths.setdefault(obj["kind"], set()).update(paths)
    for kind, paths in set_paths.items():
        upstream = _schema_paths(schemas, f"io.k8s.api.resource.{version}.{kind}")
        assert upstream - paths == set(), f"{version} {kind}: fields the objects do not set"
        assert paths - upstream == set(), f"{version} {kind}: fields upstream does not have"


_OPAQUE_TYPES = ("ObjectMeta", "Quantity", "Time", "MicroTime", "RawExtension", "Condition", "core.v1.NodeSelector")


def _schema_paths(schemas: dict[str, Any], name: str, prefix: str = "", seen: frozenset[str] = frozenset()) -> set[str]:
    """Leaf paths of a kind in upstream's OpenAPI v3 document, in resource_objects.field_paths' notation."""
    if name.endswith(_OPAQUE_TYPES):
        return {prefix}
    properties = schemas[name].get("properties")
    if not properties:
        return {prefix}
    out: set[str] = set()
    for key, prop in properties.items():
        if not prefix and key in ("apiVersion", "kind", "metadata"):
            continue
        path = f"{prefix}.{key}" if prefix else key
        prop = prop.get("allOf", [prop])[0]
        if prop.get("type") == "array":
            path, prop = path + "[]", prop["items"].get("allOf", [prop["items"]])[0]
        elif prop.get("type") == "object" and "additionalProperties" in prop:
            item = prop["additionalProperties"]
            path, prop = path + "{}", item.get("allOf", [item])[0]
        ref = prop.get("$ref", "").rsplit("/", 1)[-1]
        out |= _schema_paths(schemas, ref, path, seen | {ref}) if ref and ref not in seen else {path}
    return out
