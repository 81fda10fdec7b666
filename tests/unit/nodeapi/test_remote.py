"""The network port's edges without a server: errors typed from HTTP statuses and Status bodies
(as the API server sends them), the kubeconfig checked at start (ConfigError naming the file),
and the requests the kubelet's calls become (the status manager's strategic merge patch, slice
DeleteCollection by field selector)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodeagent.errors import AlreadyExists, ConfigError, Conflict, NodeAgentError, NotFound, Unavailable
from nodeagent.nodeapi.ports import Gone
from nodeagent.nodeapi.remote import RemoteAPI, check_kubeconfig, typed_error
from nodeagent.util.kubeclient import load_client

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.mark.parametrize(("status", "body", "kind"), [
    (404, {"kind": "Status", "reason": "NotFound", "message": 'pods "p" not found'}, NotFound),
    (409, {"kind": "Status", "reason": "AlreadyExists", "message": "exists"}, AlreadyExists),
    (409, {"kind": "Status", "reason": "Conflict", "message": "the object has been modified"}, Conflict),
    (410, {"kind": "Status", "reason": "Expired", "message": "too old resource version"}, Gone),
    (429, b"slow down", Unavailable),
    (503, "<html>proxy</html>", Unavailable),
    (0, None, Unavailable),
    (403, {"kind": "Status", "reason": "Forbidden", "message": "nodes is forbidden"}, NodeAgentError),
])
def test_errors_are_typed(status: int, body: Any, kind: type[NodeAgentError]) -> None:
    err = typed_error(status, body, "GET /api/v1/pods")
    assert type(err) is kind
    assert str(err).startswith("GET /api/v1/pods: ")
    if isinstance(body, dict):
        assert body["message"] in str(err)


def test_kubeconfig_checked_at_start(tmp_path: Path) -> None:
    good = tmp_path / "kubeconfig"
    good.write_text(KUBECONFIG)
    check_kubeconfig(good)
    bad = tmp_path / "broken"
    bad.write_text("clusters: [\n")
    with pytest.raises(ConfigError, match=f"kubeconfig {bad}: does not parse"):
        check_kubeconfig(bad)
    empty = tmp_path / "empty"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    with pytest.raises(ConfigError, match="no clusters"):
        check_kubeconfig(empty)
    with pytest.raises(ConfigError, match="No such file"):
        check_kubeconfig(tmp_path / "missing")


class Recording(RemoteAPI):
    def __init__(self, kubeconfig: Path) -> None:
        super().__init__(kubeconfig)
        self.calls: list[tuple[str, str, Any, Any, str]] = []

    async def request(self, method: str, path: str, *, query: Any = (), body: Any = None,
                      content_type: str = "application/json", timeout: float | None = None) -> Any:
        self.calls.append((method, path, list(query), body, content_type))
        return {"items": [{"metadata": {"name": "s"}}]}


async def test_requests_as_the_kubelet_sends_them(tmp_path: Path) -> None:
    (tmp_path / "k").write_text(KUBECONFIG)
    api = Recording(tmp_path / "k")
    await api.patch_pod_status("ns", "p", "uid-1", {"phase": "Running", "conditions": [{"type": "Ready"}]},
                               frozenset({"phase", "message"}), frozenset({"Ready"}))
    method, path, _, body, content_type = api.calls[-1]
    assert (method, path, content_type) == ("PATCH", "/api/v1/namespaces/ns/pods/p/status",
                                            "application/strategic-merge-patch+json")
    assert body == {"metadata": {"uid": "uid-1"},
                    "status": {"phase": "Running", "message": None, "conditions": [{"type": "Ready"}]}}
    assert await api.delete_node_slices("n1", "gpu.example.com") == 1
    assert api.calls[-1][:3] == ("DELETE", "/apis/resource.k8s.io/v1/resourceslices",
                                 [("fieldSelector", "spec.nodeName=n1,spec.driver=gpu.example.com")])
    await api.close()


async def test_client_reads_the_proxy_once_not_per_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The proxy comes from the environment when the client is made (NO_PROXY honoured), as
    client-go's transport takes it; the session does not look it up again per request."""
    (tmp_path / "k").write_text(KUBECONFIG)
    monkeypatch.setenv("HTTPS_PROXY", "http://user:pw@proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    api = await load_client(tmp_path / "k", "t")
    try:
        assert api.configuration.proxy == "http://proxy.example:3128"
        assert api.configuration.proxy_headers == {"Proxy-Authorization": "Basic dXNlcjpwdw=="}
        assert api.rest_client.pool_manager.trust_env is False
    finally:
        await api.close()
    monkeypatch.setenv("NO_PROXY", "*")
    api = await load_client(tmp_path / "k", "t")
    try:
        assert not api.configuration.proxy
    finally:
        await api.close()


async def test_close_closes_the_clients_retired_after_failures(tmp_path: Path) -> None:
    """A request that cannot reach the server retires its client (closed later, once requests on
    it are over); stopping the node before that must close it too, or aiohttp logs `Unclosed
    client session` at exit (a node process stopped after its control plane logged dozens)."""
    (tmp_path / "k").write_text(KUBECONFIG)  # https://127.0.0.1:1: nothing listens
    api = RemoteAPI(tmp_path / "k", timeout=2.0)
    sessions = []
    for _ in range(3):
        client: Any = await api._client()
        sessions.append(client.rest_client.pool_manager)
        with pytest.raises(Unavailable):
            await api.request("GET", "/api/v1/nodes/n")
    assert len({id(s) for s in sessions}) == 3 and not any(s.closed for s in sessions)
    await api.close()
    assert all(s.closed for s in sessions)
