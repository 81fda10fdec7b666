"""The OpenAPI documents over HTTPS as kubectl reads them: /openapi/v2 in gnostic protobuf (content
negotiation, ETag and 304, gzip, 406), the /openapi/v3 index and group-version documents (hash
redirect, immutable caching, 406 for the v3 protobuf type), and the real kubectl, newest and the
oldest minor installed beside it, creating and applying a v1 List against the in-process server."""

from __future__ import annotations

import asyncio
import gzip
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import yaml

from nodeagent.apis.openapi.v2 import openapiv2_pb2 as pb
from nodeagent.apiserver.openapi_http import JSON, PROTO_V2, PROTO_V2_DEPRECATED, PROTO_V3, PROTO_V3_DEPRECATED
from tests.rpc.test_apiserver_http import Client, serving

pytestmark = pytest.mark.rpc

LIST = """
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: listed-settings}
    data: {mode: fast}
  - apiVersion: v1
    kind: Pod
    metadata: {name: listed-a, labels: {app: listed}}
    spec:
      containers: [{name: main, image: nginx:1.25}]
  - apiVersion: v1
    kind: Pod
    metadata: {name: listed-b}
    spec:
      containers: [{name: main, image: nginx:1.25}]
  - apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: listed.example.com}
    spec:
      selectors:
        - cel: {expression: 'device.driver == "listed.example.com"'}
"""
CREATED = ("configmap/listed-settings created", "pod/listed-a created", "pod/listed-b created",
           "deviceclass.resource.k8s.io/listed.example.com created")


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    async with serving(tmp_path) as c:
        yield c


async def fetch(client: Client, path: str, **headers: str) -> tuple[int, bytes, aiohttp.ClientResponse]:
    hdrs = {"Authorization": f"Bearer {client.token}", "Accept-Encoding": "identity", **headers}
    async with client.session.get(client.base + path, headers=hdrs, allow_redirects=False,
                                  auto_decompress=False) as resp:
        return resp.status, await resp.read(), resp


def _ext(exts: object, name: str) -> object:
    return next(yaml.safe_load(e.value.yaml) for e in exts if e.name == name)  # type: ignore[attr-defined]


# --- /openapi/v2 ------------------------------------------------------------------------------


@pytest.mark.parametrize("accept", [PROTO_V2_DEPRECATED, PROTO_V2, f"{PROTO_V2_DEPRECATED}, {JSON}",
                                    f"{JSON};q=0.5, {PROTO_V2};q=0.9"])
async def test_v2_protobuf_for_the_protobuf_accept_types(client: Client, accept: str) -> None:
    status, body, resp = await fetch(client, "/openapi/v2", Accept=accept)
    assert status == 200
    assert resp.headers["Content-Type"] == PROTO_V2  # the deprecated spelling is answered with the current one
    doc = pb.Document.FromString(body)
    assert doc.swagger == "2.0"
    defs = {d.name: d.value for d in doc.definitions.additional_properties}
    pod = defs["io.k8s.api.core.v1.Pod"]
    assert _ext(pod.vendor_extension, "x-kubernetes-group-version-kind") == [
        {"group": "", "kind": "Pod", "version": "v1"}]
    assert list(pod.type.value) == ["object"]
    props = {p.name: p.value for p in pod.properties.additional_properties}
    assert props["spec"]._ref == "#/definitions/io.k8s.api.core.v1.PodSpec"
    containers = {p.name: p.value for p in defs["io.k8s.api.core.v1.PodSpec"].properties.additional_properties}[
        "containers"]
    assert list(containers.type.value) == ["array"]
    assert containers.items.schema[0]._ref == "#/definitions/io.k8s.api.core.v1.Container"
    assert _ext(containers.vendor_extension, "x-kubernetes-patch-merge-key") == "name"
    cm = {p.name: p.value for p in defs["io.k8s.api.core.v1.ConfigMap"].properties.additional_properties}
    assert cm["data"].additional_properties.schema.type.value == ["string"]
    assert _ext(defs["io.k8s.api.resource.v1.DeviceClass"].vendor_extension, "x-kubernetes-group-version-kind") == [
        {"group": "resource.k8s.io", "kind": "DeviceClass", "version": "v1"}]
    paths = {p.name: p.value for p in doc.paths.path}
    patch = paths["/api/v1/namespaces/{namespace}/pods/{name}"].patch
    assert patch.operation_id == "patchCoreV1NamespacedPod"
    assert _ext(patch.vendor_extension, "x-kubernetes-action") == "patch"
    queries = [p.parameter.non_body_parameter.query_parameter_sub_schema.name for p in patch.parameters
               if p.parameter.non_body_parameter.HasField("query_parameter_sub_schema")]
    assert "fieldValidation" in queries
    body_param = next(p.parameter.body_parameter for p in patch.parameters if p.parameter.HasField("body_parameter"))
    assert body_param.schema._ref == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
    assert doc.security_definitions.additional_properties[0].value.api_key_security.name == "authorization"


async def test_v2_json_protobuf_share_the_etag_and_if_none_match_gives_304(client: Client) -> None:
    status, body, resp = await fetch(client, "/openapi/v2", Accept=JSON)
    assert status == 200 and resp.headers["Content-Type"] == JSON and body.startswith(b"{")
    etag = resp.headers["Etag"]
    assert etag.startswith('"') and len(etag) == 130
    status, _, proto = await fetch(client, "/openapi/v2", Accept=PROTO_V2)
    assert status == 200 and proto.headers["Etag"] == etag
    for accept in (JSON, PROTO_V2_DEPRECATED):
        status, body, resp = await fetch(client, "/openapi/v2", Accept=accept, **{"If-None-Match": etag})
        assert (status, body) == (304, b"")
        assert resp.headers["Etag"] == etag
    status, _, _ = await fetch(client, "/openapi/v2", Accept=PROTO_V2, **{"If-None-Match": '"stale"'})
    assert status == 200


async def test_v2_gzip_when_asked(client: Client) -> None:
    _, plain, _ = await fetch(client, "/openapi/v2", Accept=PROTO_V2, **{"Accept-Encoding": "identity"})
    status, packed, resp = await fetch(client, "/openapi/v2", Accept=PROTO_V2, **{"Accept-Encoding": "gzip"})
    assert status == 200 and resp.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in resp.headers["Vary"]
    assert gzip.decompress(packed) == plain and len(packed) < len(plain)


@pytest.mark.parametrize("accept", ["text/html", "application/yaml", PROTO_V3])
async def test_v2_406_for_an_unsupported_accept(client: Client, accept: str) -> None:
    status, body, _ = await fetch(client, "/openapi/v2", Accept=accept)
    assert (status, body) == (406, b"")


# --- /openapi/v3 ------------------------------------------------------------------------------


async def test_v3_index_and_group_documents(client: Client) -> None:
    status, body, resp = await fetch(client, "/openapi/v3")
    assert status == 200 and resp.headers["Content-Type"] == JSON
    status, _, _ = await fetch(client, "/openapi/v3", **{"If-None-Match": resp.headers["Etag"]})
    assert status == 304
    url = yaml.safe_load(body)["paths"]["apis/resource.k8s.io/v1"]["serverRelativeURL"]
    status, doc, resp = await fetch(client, url, Accept=JSON)
    assert status == 200 and resp.headers["Cache-Control"] == "public, immutable"
    assert resp.headers["Etag"] == f'"{url.split("hash=")[1]}"'
    assert "io.k8s.api.resource.v1.DeviceClass" in yaml.safe_load(doc)["components"]["schemas"]
    status, _, _ = await fetch(client, url, Accept=JSON, **{"If-None-Match": resp.headers["Etag"]})
    assert status == 304
    status, _, resp = await fetch(client, "/openapi/v3/apis/resource.k8s.io/v1?hash=0BAD", Accept=JSON)
    assert status == 301 and resp.headers["Location"] == url
    status, _, resp = await fetch(client, "/openapi/v3/apis/resource.k8s.io/v1")
    assert status == 200 and "Cache-Control" not in resp.headers
    for accept in (PROTO_V3, PROTO_V3_DEPRECATED, "text/html"):
        status, body, _ = await fetch(client, url, Accept=accept)
        assert (status, body) == (406, b"")
    status, _, _ = await fetch(client, "/openapi/v3/apis/nosuch.example.com/v1", Accept=JSON)
    assert status == 404


# --- kubectl ----------------------------------------------------------------------------------


def _kubectls() -> list[str]:
    """The newest and the oldest kubectl minor installed (the Cloud SDK keeps them as kubectl.1.N
    beside its kubectl dispatcher), or the kubectl on PATH when there are none."""
    found = shutil.which("kubectl")
    if found is None:
        return []
    home = Path(os.path.realpath(found)).parent
    minors = sorted((int(p.name.rsplit(".", 1)[1]), str(p)) for p in home.glob("kubectl.1.*")
                    if p.name.rsplit(".", 1)[1].isdigit() and os.access(p, os.X_OK))
    if not minors:
        return [found]
    return list(dict.fromkeys((minors[-1][1], minors[0][1])))


async def kubectl(binary: str, kubeconfig: Path, *args: str, stdin: str = "") -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        binary, f"--kubeconfig={kubeconfig}", f"--cache-dir={kubeconfig.parent / 'cache'}", *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.skipif(not _kubectls(), reason="kubectl is not installed")
@pytest.mark.parametrize("binary", _kubectls(), ids=lambda p: Path(p).name)
async def test_kubectl_create_and_apply_a_v1_list(client: Client, tmp_path: Path, binary: str) -> None:
    config = tmp_path / "kubeconfig"
    rc, out, err = await kubectl(binary, config, "create", "-f", "-", stdin=LIST)
    assert rc == 0, err
    assert out.splitlines() == list(CREATED)
    rc, out, err = await kubectl(binary, config, "apply", "-f", "-",
                                 stdin=LIST.replace("mode: fast", "mode: slow"))
    assert rc == 0, err
    assert "configmap/listed-settings configured" in out.splitlines()
    rc, out, err = await kubectl(binary, config, "get", "configmap", "listed-settings", "-o",
                                 "jsonpath={.data.mode}")
    assert (rc, out) == (0, "slow"), err
    rc, out, err = await kubectl(binary, config, "delete", "-f", "-", stdin=LIST)
    assert rc == 0, err
    # explain's v2 output reads the same protobuf document
    rc, out, err = await kubectl(binary, config, "explain", "deviceclasses.spec.selectors",
                                 "--output=plaintext-openapiv2")
    assert rc == 0, err
    assert out.startswith("KIND:     DeviceClass\nVERSION:  resource.k8s.io/v1\n\nRESOURCE: selectors <[]Object>")
    assert "FIELDS:\n   cel\t<Object>" in out


@pytest.mark.skipif(not _kubectls(), reason="kubectl is not installed")
@pytest.mark.parametrize("binary", _kubectls(), ids=lambda p: Path(p).name)
async def test_kubectl_strict_validation_of_a_list(client: Client, tmp_path: Path, binary: str) -> None:
    """kubectl validates a List's items itself, against the protobuf v2 schema: an unknown field at
    the top of an item and one inside a $ref'd array element are both named with their path."""
    cases = [
        (LIST.replace("    data: {mode: fast}", "    data: {mode: fast}\n    dta: {mode: typo}"),
         'ValidationError(ConfigMap): unknown field "dta" in io.k8s.api.core.v1.ConfigMap'),
        (LIST.replace("image: nginx:1.25}]", "imagee: nginx:1.25}]", 1),
         'ValidationError(Pod.spec.containers[0]): unknown field "imagee" in io.k8s.api.core.v1.Container'),
        (LIST.replace("selectors:", "selector:"),
         'ValidationError(DeviceClass.spec): unknown field "selector" in io.k8s.api.resource.v1.DeviceClassSpec'),
    ]
    for bad, message in cases:
        rc, out, err = await kubectl(binary, tmp_path / "kubeconfig", "create", "--validate=strict", "-f", "-",
                                     stdin=bad)
        assert rc == 1 and out == ""
        assert err == (f'error: error validating "STDIN": error validating data: {message}; if you choose to ignore '
                       "these errors, turn validation off with --validate=false\n")
