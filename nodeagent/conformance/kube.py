"""The suite's Kubernetes API client: the Node, the claims a driver reads, its ResourceSlices.

A DRA driver GETs every claim the kubelet names through its API server, so the suite writes
real ResourceClaims there (created, then given a status.allocation of devices from the
driver's own published slices, as the scheduler would) and reads the driver's ResourceSlices
back. kubernetes_asyncio over the kubeconfig given (or the one the embedded API server
wrote); every refusal becomes `KubeError` with the server's Status message, so a case can
name what the API said.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.client.exceptions import ApiException

from nodeagent.util.kubeclient import KubeconfigError, load_client

GROUP = "resource.k8s.io"
VERSION = "v1"
TIMEOUT = 10.0


class KubeError(Exception):
    """The API refused or could not be reached; `status` 0 when unreachable."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


def _message(err: ApiException) -> str:
    body: object = err.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        doc = json.loads(body) if isinstance(body, str) else None
    except ValueError:
        doc = None
    if isinstance(doc, dict) and doc.get("message"):
        return str(doc["message"])
    return str(err.reason or f"HTTP {err.status}")


class KubeAPI:
    """The calls the DRA suite makes, over one kubeconfig."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self._api: k8s.ApiClient | None = None

    async def _client(self) -> k8s.ApiClient:
        if self._api is None:
            try:
                self._api = await load_client(self.kubeconfig, "nodeagent-conformance")
            except KubeconfigError as err:
                raise KubeError(0, str(err)) from None
        return self._api

    async def close(self) -> None:
        api, self._api = self._api, None
        if api is not None:
            await api.close()

    async def _do(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await call(*args, _request_timeout=TIMEOUT, **kwargs)
        except ApiException as err:
            raise KubeError(int(err.status or 0), f"{what}: {_message(err)}") from None
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            raise KubeError(0, f"{what}: the API server cannot be reached: {err or type(err).__name__}") from None

    async def _custom(self) -> Any:
        return k8s.CustomObjectsApi(await self._client())

    async def ensure_node(self, name: str) -> None:
        """Create the Node the driver publishes for (its slices are owned by it), unless it exists."""
        core: Any = k8s.CoreV1Api(await self._client())
        try:
            await self._do(f"get node {name}", core.read_node, name)
            return
        except KubeError as err:
            if err.status != 404:
                raise
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name}}}
        await self._do(f"create node {name}", core.create_node, body)

    async def create_allocated_claim(
        self, namespace: str, name: str, driver: str, devices: Sequence[tuple[str, str]], node: str,
    ) -> dict[str, Any]:
        """A ResourceClaim with one request per device, allocated to (pool, device) of `driver`."""
        custom = await self._custom()
        requests = [{"name": f"req-{i}", "exactly": {"deviceClassName": "conformance.nodeagent.io"}}
                    for i in range(len(devices))]
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": namespace}, "spec": {"devices": {"requests": requests}}}
        made = await self._do(f"create ResourceClaim {namespace}/{name}", custom.create_namespaced_custom_object,
                              GROUP, VERSION, namespace, "resourceclaims", body)
        made["status"] = {"allocation": {
            "devices": {"results": [{"request": f"req-{i}", "driver": driver, "pool": pool, "device": device}
                                    for i, (pool, device) in enumerate(devices)]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]},
        }}
        out: dict[str, Any] = await self._do(
            f"allocate ResourceClaim {namespace}/{name}", custom.replace_namespaced_custom_object_status,
            GROUP, VERSION, namespace, "resourceclaims", name, made)
        return out

    async def delete_claim(self, namespace: str, name: str) -> None:
        custom = await self._custom()
        try:
            await self._do(f"delete ResourceClaim {namespace}/{name}", custom.delete_namespaced_custom_object,
                           GROUP, VERSION, namespace, "resourceclaims", name)
        except KubeError as err:
            if err.status != 404:
                raise

    async def slices(self, driver: str, node: str) -> list[dict[str, Any]]:
        """The driver's ResourceSlices for the node (resource.k8s.io/v1)."""
        custom = await self._custom()
        out = await self._do("list ResourceSlices", custom.list_cluster_custom_object, GROUP, VERSION,
                             "resourceslices", field_selector=f"spec.driver={driver},spec.nodeName={node}")
        return [dict(i) for i in out.get("items") or () if isinstance(i, Mapping)]

    async def delete_slices(self, driver: str, node: str) -> int:
        """Delete the node's slices of the driver, as a restarting kubelet does; how many went."""
        custom = await self._custom()
        gone = 0
        for item in await self.slices(driver, node):
            name = item["metadata"]["name"]
            try:
                await self._do(f"delete ResourceSlice {name}", custom.delete_cluster_custom_object, GROUP, VERSION,
                               "resourceslices", name)
                gone += 1
            except KubeError as err:
                if err.status != 404:
                    raise
        return gone
