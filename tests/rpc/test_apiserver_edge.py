"""The API server's HTTP edge against hostile and large input, over HTTPS with aiohttp's client: every
request is answered (never a dropped connection), bodies are read whole however they arrive, and
malformed bodies get kube-apiserver's 400/413/422 texts (compared with the real v1.37.2 server),
never a 500."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.loopstall import LoopStall, daemon_runtime, probing
from tests.rpc.test_apiserver_http import CM_PATH, Client, configmap, serving

pytestmark = pytest.mark.rpc
LIMIT = 64 * 1024  # the fixture's maxRequestBytes
NS_PATH = "/api/v1/namespaces"
# Seconds the loop was held between two turns (tests/loopstall.py): 0.24-0.30 s alone on a quiet machine,
# 0.30-0.73 s beside two busy processes on 2 cores, 1.22 s once in a fresh-clone CI run (the other xdist
# worker's daemons running). Issue 25 asks for 0.1 s: the create's decode and store copies in a worker
# thread hold the GIL in C calls longer than that, and when the kernel takes the CPU from that thread
# mid-call the loop thread waits on the GIL, a wait schedstat does not count as run-queue time, so CPU
# contention inflates the figure. Before the offload the same create held the loop 3.4 s. Most of what
# was left came from the test itself: the interpreter's default collector thresholds instead of the
# daemon's (tests/loopstall.daemon_runtime) and the stdlib's decoding of the 2 MB answers in the probed loop.
# With both gone, side by side at load 7-11: create 0.16-0.37 s (0.50-0.74 s before), delete 0.61-1.53 s
# (1.06-1.79 s before; its three orjson copies of the object in the store hold the GIL 50-100 ms each,
# more when the machine is loaded). With the delete's copies gone (the registry reads the stored object
# read-only, the DELETED event weighed by the deleted row's length), at load 5.5-10: create 0.22-0.44 s,
# delete 0.07-0.16 s (2.16 s for the code before, side by side at load 10). With etcd's size limit in the
# store (store/limits.py) the pod became the largest kube-apiserver creates (LARGEST_POD), and its create
# weighs its protobuf and is tried again without managedFields, in the worker, under the store's lock:
# the RBAC authorizer's scan on the loop waited for that whole transaction (create 0.56-1.36 s). The scan
# takes no lock now: at load 3-4, create 0.14-0.15 s, delete 0.011-0.033 s (the code before, with its
# 10,000 containers, alternating: create 0.05-0.17 s, delete 0.035-0.067 s). With the daemon's 1 ms
# thread switch interval (util/gilsettings.py, applied here by daemon_runtime), alternating with the
# code before at load 2.2-2.7: create 0.040-0.073 s (0.067-0.107 s), delete 0.007-0.015 s (0.010-0.015
# s), /healthz 0.025-0.099 s wall (0.088-0.201 s); beside the unit suite on two xdist workers (load
# 4.3-4.9): create 0.072-0.086 s (0.096-0.110 s). What is left in create is mostly the worker's own
# collections (gen 1, 20-50 ms with the GIL held). Bounds: 4x and 13x the worst seen.
CREATE_STALL_BOUND = 0.35
DELETE_STALL_BOUND = 0.2
LARGEST_POD = 11_150
"""Containers {"name": "cN", "image": "x"} of the largest pod kube-apiserver v1.37.2 + etcd (its default
--max-request-bytes) create: the store's limit (store/limits.py) refuses one more, as etcd does."""


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    async with serving(tmp_path) as c:
        yield c


def sized_configmap(name: str, size: int) -> bytes:
    """A ConfigMap whose JSON encoding is exactly `size` bytes."""
    bare = json.dumps(configmap(name, blob="")).encode()
    return json.dumps(configmap(name, blob="x" * (size - len(bare)))).encode()


async def raw_request(client: Client, method: str, path: str, head: dict[str, str],
                      pieces: list[bytes], pause: float = 0.0) -> tuple[int, dict[str, Any]]:
    """One HTTP/1.1 request written by hand over TLS (chunked or not, as `head` says), the body in
    `pieces` with `pause` seconds between them; the status and the decoded answer."""
    server = client.server
    assert server.credentials is not None
    ctx = ssl.create_default_context(cafile=str(server.credentials.ca_path))
    host, port = server.url.removeprefix("https://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port), ssl=ctx, server_hostname=host)
    try:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"Authorization: Bearer {client.token}",
                 "Content-Type: application/json", "Connection: close", *(f"{k}: {v}" for k, v in head.items())]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        chunked = head.get("Transfer-Encoding") == "chunked"
        for piece in pieces:
            writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked else piece)
            await writer.drain()
            if pause:
                await asyncio.sleep(pause)
        if chunked:
            writer.write(b"0\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    head_text, _, body = answer.partition(b"\r\n\r\n")
    status = int(head_text.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head_text.lower():
        body = _unchunk(body)
    return status, json.loads(body)


def _unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_text, _, data = data.partition(b"\r\n")
        size = int(size_text, 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2:]
    return out


def split(body: bytes, piece: int) -> list[bytes]:
    return [body[i:i + piece] for i in range(0, len(body), piece)]


@pytest.mark.parametrize("size", [1024, 16 * 1024, 63 * 1024, LIMIT])
@pytest.mark.parametrize("how", ["length", "chunked", "slow-chunked"])
async def test_bodies_up_to_the_limit_are_read_whole(client: Client, size: int, how: str) -> None:
    name = f"b{size}-{how}"
    body = sized_configmap(name, size)
    assert len(body) == size
    head = {"Content-Length": str(size)} if how == "length" else {"Transfer-Encoding": "chunked"}
    pieces = split(body, 7 * 1024 if how == "slow-chunked" else 16 * 1024 + 3)
    status, doc = await raw_request(client, "POST", CM_PATH, head, pieces, pause=0.03 if how == "slow-chunked" else 0)
    assert status == 201, doc
    status, got, _ = await client.call("GET", f"{CM_PATH}/{name}")
    assert status == 200 and len(got["data"]["blob"]) == len(json.loads(body)["data"]["blob"])


@pytest.mark.parametrize("how", ["length", "chunked"])
async def test_a_body_one_byte_over_the_limit_is_413(client: Client, how: str) -> None:
    body = sized_configmap("over", LIMIT + 1)
    head = {"Content-Length": str(len(body))} if how == "length" else {"Transfer-Encoding": "chunked"}
    status, doc = await raw_request(client, "POST", CM_PATH, head, split(body, 8192))
    assert (status, doc["reason"], doc["message"]) == (413, "RequestEntityTooLarge",
                                                        f"Request entity too large: limit is {LIMIT}")
    status, _, _ = await client.call("GET", f"{CM_PATH}/over")
    assert status == 404


async def test_a_control_character_in_a_field_name_is_answered_and_the_object_listed(client: Client) -> None:
    """A create whose unknown field name holds control characters was stored and never answered (the
    Warning header carrying the name could not be written); it is answered with the name escaped as
    strconv.Quote writes it, and the object is listed because the write was acknowledged."""
    raw = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ctl","x\\ny":1},"b\\u0001o\\u007fgus":1}'
    status, doc, resp = await client.call("POST", CM_PATH + "?fieldValidation=Warn", raw=raw)
    assert status == 201, doc
    assert resp.headers.getall("Warning") == ['299 - "unknown field \\"metadata.x\\\\ny\\""',
                                              '299 - "unknown field \\"b\\\\x01o\\\\x7fgus\\""']
    status, listed, _ = await client.call("GET", CM_PATH)
    assert "ctl" in {o["metadata"]["name"] for o in listed["items"]}
    status, doc, _ = await client.call("POST", CM_PATH + "?fieldValidation=Strict",
                                       raw=raw.replace(b'"ctl"', b'"ctl2"'))
    assert (status, doc["message"]) == (400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict '
                                        'decoding error: unknown field "metadata.x\\ny", unknown field '
                                        '"b\\x01o\\x7fgus"')
    status, _, _ = await client.call("GET", f"{CM_PATH}/ctl2")
    assert status == 404


UNRECOGNIZED = ("the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; "
                "json parse error: ")


@pytest.mark.parametrize(("depth", "message"), [
    (190, None),
    (201, UNRECOGNIZED + "invalid character '[' exceeded max depth ({\"apiVersion\":\"v1\",\"kind\":\"Con ...)"),
    (300, UNRECOGNIZED + "invalid character '[' exceeded max depth ({\"apiVersion\":\"v1\",\"kind\":\"Con ...)"),
    (1000, UNRECOGNIZED + "invalid character '[' exceeded max depth ({\"apiVersion\":\"v1\",\"kind\":\"Con ...)"),
    (20000, UNRECOGNIZED + "invalid character '[' exceeded max depth ({\"apiVersion\":\"v1\",\"kind\":\"Con ...)"),
])
async def test_deep_nesting_is_a_400_never_a_500(client: Client, depth: int, message: str | None) -> None:
    """JSON nested beyond orjson's limits answered 500 (Recursion limit reached); MAX_DEPTH (200) bounds a
    body, refused with Go's max-depth text (upstream's bound is 10,000: see decoding.MAX_DEPTH)."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    raw = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep","x":' + inner.encode() + b"}}"
    status, doc, _ = await client.call("POST", CM_PATH, raw=raw)
    if message is None:  # an unknown field, dropped: upstream takes it (201) and so do we
        assert status == 201, doc
    else:
        assert (status, doc["reason"], doc["message"]) == (400, "BadRequest", message)
    patch = b'{"metadata":{"annotations":{"a":' + b"[" * depth + b"]" * depth + b"}}}"
    status, doc, _ = await client.call("PATCH", f"{CM_PATH}/deep", raw=patch,
                                       content_type="application/merge-patch+json")
    assert status in (400, 404, 422), doc


NS_CASES = [  # (metadata, message) as kube-apiserver v1.37.2 answers POST namespaces
    ("x", "json: cannot unmarshal string into Go struct field Namespace.metadata of type v1.ObjectMeta"),
    ([], "json: cannot unmarshal array into Go struct field Namespace.metadata of type v1.ObjectMeta"),
    ({"name": 1}, "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string"),
    ({"name": "a", "labels": []},
     "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string"),
    ({"name": "a", "labels": {"a": 1}},
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"),
    ({"name": "a", "finalizers": "x"},
     "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.finalizers of type []string"),
    ({"name": "a", "ownerReferences": [1]},
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.ownerReferences of type "
     "v1.OwnerReference"),
    ({"name": "a", "uid": 3}, "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.uid of type "
     "types.UID"),
    ({"name": "a", "generation": "x"},
     "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.generation of type int64"),
    ({"name": "a", "creationTimestamp": "notatime"},
     'parsing time "notatime" as "2006-01-02T15:04:05Z07:00": cannot parse "notatime" as "2006"'),
    ({"name": "a", "managedFields": [{"time": "bad"}]},
     'parsing time "bad" as "2006-01-02T15:04:05Z07:00": cannot parse "bad" as "2006"'),
]


@pytest.mark.parametrize(("metadata", "message"), NS_CASES)
async def test_wrong_typed_namespace_metadata_is_upstreams_400(client: Client, metadata: Any, message: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}
    status, doc, _ = await client.call("POST", NS_PATH, body=body)
    assert (status, doc["reason"], doc["message"]) == (
        400, "BadRequest", f'Namespace in version "v1" cannot be handled as a Namespace: {message}')


async def test_null_fields_decode_as_absent(client: Client) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nulls", "labels": None}, "spec": None}
    status, doc, _ = await client.call("POST", NS_PATH, body=body)
    assert status == 201 and doc["metadata"]["labels"] == {"kubernetes.io/metadata.name": "nulls"}


@pytest.mark.parametrize(("raw", "message"), [
    (b"[1, 2]", 'json: cannot unmarshal array into Go value of type struct { APIVersion string '
                '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" } (5b312c20325d)'),
    (b'{"apiVersion": 5}', 'json: cannot unmarshal number into Go struct field .apiVersion of type string '
                           '({"apiVersion": 5})'),
    (b'{"apiVersion":"v1","kind":"ConfigMap",}', "invalid character '}' looking for beginning of object key "
                                                  'string ({"apiVersion":"v1","kind":"Con ...)'),
])
async def test_bodies_that_are_no_object_are_upstreams_400(client: Client, raw: bytes, message: str) -> None:
    status, doc, _ = await client.call("POST", CM_PATH, raw=raw)
    assert (status, doc["message"]) == (400, UNRECOGNIZED + message)


@pytest.mark.parametrize(("body", "message"), [
    ({"target": "x"}, "json: cannot unmarshal string into Go struct field Binding.target of type v1.ObjectReference"),
    ({"metadata": "x", "target": {"name": "n"}},
     "json: cannot unmarshal string into Go struct field Binding.metadata of type v1.ObjectMeta"),
    ({"target": {"name": 1}},
     "json: cannot unmarshal number into Go struct field ObjectReference.target.name of type string"),
])
async def test_wrong_typed_binding_is_upstreams_400(client: Client, body: Any, message: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bp"},
           "spec": {"containers": [{"name": "c", "image": "x"}]}}
    status, doc, _ = await client.call("POST", "/api/v1/namespaces/default/pods", body=pod)
    assert status in (201, 409), doc
    status, doc, _ = await client.call("POST", "/api/v1/namespaces/default/pods/bp/binding", body=body)
    assert (status, doc["message"]) == (400, f'Binding in version "v1" cannot be handled as a Binding: {message}')


async def test_a_patch_to_a_wrong_type_is_upstreams_422(client: Client) -> None:
    status, _, _ = await client.call("POST", CM_PATH, body=configmap("p", a="b"))
    assert status == 201
    status, doc, _ = await client.call("PATCH", f"{CM_PATH}/p", body={"data": "x"},
                                       content_type="application/merge-patch+json")
    assert (status, doc["reason"]) == (422, "Invalid")
    assert doc["message"].startswith(' "" is invalid: patch: Invalid value: "{\\"apiVersion\\":\\"v1\\",\\"data\\":')
    assert doc["message"].endswith('": json: cannot unmarshal string into Go struct field ConfigMap.data of type '
                                   "map[string]string")
    status, got, _ = await client.call("GET", f"{CM_PATH}/p")
    assert got["data"] == {"a": "b"}


async def _healthz_during(client: Client, stall: LoopStall, request: Any) -> Any:
    """`request`'s outcome, /healthz polled (its latency noted in `stall`) while it runs."""
    async def poll() -> None:
        while True:
            start = time.monotonic()
            async with client.session.get(client.base + "/healthz") as resp:
                await resp.read()
            stall.answered("/healthz", time.monotonic() - start)
            await asyncio.sleep(0.005)

    poller = asyncio.create_task(poll())
    try:
        return await request
    finally:
        poller.cancel()
        await asyncio.gather(poller, return_exceptions=True)


async def _undecoded(client: Client, method: str, path: str, body: bytes | None = None) -> int:
    """The answer's code, its body read and not decoded: the client shares the probed loop, and decoding
    the 2 MB pod there (the stdlib's json) held it 20-60 ms, the test's own work, not the server's."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {client.token}"}
    async with client.session.request(method, client.base + path, data=body, headers=headers) as resp:
        await resp.read()
        return resp.status


async def test_a_huge_pod_does_not_stall_the_other_sockets(tmp_path: Path) -> None:
    """The largest pod of this shape a real cluster takes: 11,150 containers (kube-apiserver v1.37.2 over
    etcd's default 1.5 MiB request limit, stored without managedFields; one more is refused, see
    tests/integration/test_object_size.py). A pod of 10,000 (1.0 MB of JSON, within the 3 MiB body
    limit) took the registry seconds of Python on the event loop, and /healthz waited the whole time
    (3.4 s measured). Its decoding and write now run in a worker thread (http.OFFLOAD_BYTES). The
    stall is the loop's own (tests/loopstall.py: a probe in the server's loop, less the time a loaded
    machine kept it from a CPU), not /healthz's wall latency against the write's, a ratio that flaked
    (0.661 s against 0.654 s); the wall figures are in the report."""
    pods = "/api/v1/namespaces/default/pods"
    body = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "huge"},
                       "spec": {"nodeName": "elsewhere",
                                "containers": [{"name": f"c{i}", "image": "x"} for i in range(LARGEST_POD)]}}).encode()
    with daemon_runtime():
        async with serving(tmp_path, max_request_bytes=3 * 1024 * 1024) as client, probing() as stall:
            stall.phase = "create"
            status = await _healthz_during(client, stall, _undecoded(client, "POST", pods, body))
            assert status == 201
            stall.phase = "delete"
            status = await _healthz_during(
                client, stall, _undecoded(client, "DELETE", f"{pods}/huge?gracePeriodSeconds=0"))
            assert status == 200
    print(stall.report())
    assert stall.stall["create"] < CREATE_STALL_BOUND, stall.report()
    assert stall.stall["delete"] < DELETE_STALL_BOUND, stall.report()
