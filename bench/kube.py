"""The benchmarks' client of the daemon's Kubernetes API: the kubeconfig's server, CA and token over aiohttp.

Why not kubectl: a bench creates hundreds of objects and polls them back to back, and a process
start per call would be what it measured. JSON through orjson: the client shares the machine's
cores with the daemon it measures, so its own work is kept small. Only what the benches need: create from a manifest,
list, watch, get, delete, a status write (what a controller does, for claims allocated up front) and a
pod binding (what the scheduler does).
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

# kind -> (API path prefix, plural, namespaced), for the kinds the benches touch
KINDS: dict[str, tuple[str, str, bool]] = {
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
}


Items = list[dict[str, Any]]  # an alias: inside KubeAPI the `list` method shadows the builtin


class APIError(Exception):
    """The API server answered with an error Status; the message is its text."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


def path(kind: str, namespace: str = "default", name: str = "") -> str:
    prefix, plural, namespaced = KINDS[kind]
    out = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced else f"{prefix}/{plural}"
    return f"{out}/{name}" if name else out


class KubeAPI:
    def __init__(self, kubeconfig: Path, timeout: float = 30.0) -> None:
        cfg = yaml.safe_load(kubeconfig.read_text())
        cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
        self.server = str(cluster["server"])
        ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=ctx),
            headers={"Authorization": f"Bearer {user['token']}", "Accept": "application/json"},
            timeout=aiohttp.ClientTimeout(total=timeout),
        )

    async def close(self) -> None:
        await self._session.close()

    async def _call(self, method: str, url_path: str, body: Mapping[str, Any] | None = None) -> Any:
        data = None if body is None else orjson.dumps(body)
        headers = None if body is None else {"Content-Type": "application/json"}
        async with self._session.request(method, self.server + url_path, data=data, headers=headers) as resp:
            raw = await resp.read()
            doc = orjson.loads(raw) if raw.strip() else None
            if resp.status >= 400:
                raise APIError(resp.status, str((doc or {}).get("message", resp.reason)))
            return doc

    async def create(self, manifest: str, namespace: str = "default") -> list[dict[str, Any]]:
        """POST every document of a YAML manifest, in order; the stored objects."""
        return await self.create_docs([doc for doc in yaml.safe_load_all(manifest) if doc], namespace)

    async def create_docs(self, docs: Sequence[Mapping[str, Any]], namespace: str = "default"
                          ) -> list[dict[str, Any]]:
        """POST every object, in order; the stored objects. For timed creates: the YAML parsing
        of `create` (pure Python, ~1 ms a document) would count the client's work as the daemon's."""
        out = []
        for doc in docs:
            ns = (doc.get("metadata") or {}).get("namespace") or namespace
            out.append(await self._call("POST", path(doc["kind"], ns), doc))
        return out

    async def list(self, kind: str, namespace: str = "default") -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = (await self._call("GET", path(kind, namespace)))["items"]
        return items

    async def list_version(self, kind: str, namespace: str = "default") -> tuple[Items, str]:
        """The items and the list's resourceVersion (where a watch starts without a gap)."""
        doc = await self._call("GET", path(kind, namespace))
        return doc["items"], str(doc["metadata"]["resourceVersion"])

    async def watch(self, kind: str, resource_version: str, namespace: str = "default"
                    ) -> AsyncIterator[dict[str, Any]]:
        """The watch events ({"type", "object"}) after `resource_version`, as they come: a bench
        waiting for many objects follows them instead of listing them back to back (which loads
        the daemon it measures)."""
        url = f"{self.server}{path(kind, namespace)}?watch=1&resourceVersion={resource_version}"
        async with self._session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
            if resp.status >= 400:
                raise APIError(resp.status, (await resp.text())[:200])
            async for line in resp.content:
                if line.strip():
                    event: dict[str, Any] = orjson.loads(line)
                    yield event

    async def get(self, kind: str, name: str, namespace: str = "default") -> dict[str, Any]:
        obj: dict[str, Any] = await self._call("GET", path(kind, namespace, name))
        return obj

    async def delete(self, kind: str, name: str, namespace: str = "default") -> None:
        await self._call("DELETE", path(kind, namespace, name))

    async def bind(self, name: str, node: str, namespace: str = "default") -> None:
        """POST pods/binding (what the scheduler does): the pod is the node's from then on."""
        await self._call("POST", path("Pod", namespace, name) + "/binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}})

    async def update_status(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        """PUT the status subresource (the object as read, with its status set)."""
        meta = obj["metadata"]
        written: dict[str, Any] = await self._call(
            "PUT", path(kind, meta.get("namespace", ""), meta["name"]) + "/status", obj)
        return written
