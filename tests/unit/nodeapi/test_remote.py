"""The network port's edges without a server: errors typed from HTTP statuses and Status bodies
(as the API server sends them), the kubeconfig checked at start (ConfigError naming the file),
and the requests the kubelet's calls become (the status manager's strategic merge patch, slice
DeleteCollection by field selector)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodeagent.errors import (
    AlreadyExists,
    ConfigError,
    Conflict,
    NodeAgentError,
    NotFound,
    RequestTooLarge,
    Unavailable,
)
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
    # etcd's limit, as kube-apiserver answers it (500, no reason): refused again until the object shrinks
    (500, {"kind": "Status", "code": 500, "message": "etcdserver: request is too large"}, RequestTooLarge),
    (500, {"kind": "Status", "code": 500, "message": "rpc error: code = ResourceExhausted desc = trying to send "
                                                     "message larger than max (2829470 vs. 2097152)"}, RequestTooLarge),
    (500, {"kind": "Status", "code": 500, "reason": "InternalError", "message": "boom"}, Unavailable),
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
    await api.patch_pod_status("ns", "p", "uid-1", {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "False", "reason": "R"},
        {"type": "Custom", "status": "True"}]},
                               frozenset({"phase", "message"}), frozenset({"Ready", "Initialized"}))
    method, path, _, body, content_type = api.calls[-1]
    assert (method, path, content_type) == ("PATCH", "/api/v1/namespaces/ns/pods/p/status",
                                            "application/strategic-merge-patch+json")
    # conditions merge by type: a node condition's reason/message it no longer has are nulled, as
    # the kubelet's two-way merge patch does (a Ready turned True keeps no ContainersNotReady)
    assert body == {"metadata": {"uid": "uid-1"}, "status": {"phase": "Running", "message": None, "conditions": [
        {"type": "Ready", "status": "True", "reason": None, "message": None},
        {"type": "Initialized", "status": "False", "reason": "R", "message": None},
        {"type": "Custom", "status": "True"}]}}
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



class Claims(RemoteAPI):
    """Claims behind GET, as a node's credentials see a real kube-apiserver: single claims only
    (listing and watching them is forbidden to system:node:NAME by the Node authorizer)."""

    def __init__(self, kubeconfig: Path) -> None:
        super().__init__(kubeconfig)
        self.stored: dict[str, dict[str, Any]] = {}
        self.gets: list[str] = []
        self.refusals = 0  # the next GETs refused as the Node authorizer does before its graph has the pod

    async def request(self, method: str, path: str, *, query: Any = (), body: Any = None,
                      content_type: str = "application/json", timeout: float | None = None) -> Any:
        name = path.rsplit("/", 1)[-1]
        self.gets.append(name)
        if self.refusals:
            self.refusals -= 1
            raise typed_error(403, {"kind": "Status", "reason": "Forbidden", "message": (
                f'resourceclaims.resource.k8s.io "{name}" is forbidden: User "system:node:n1" cannot get resource '
                '"resourceclaims" in API group "resource.k8s.io" in the namespace "ns": node: no relationship '
                "found between node 'n1' and this object")}, f"GET {path}")
        if name not in self.stored:
            raise NotFound(f'GET {path}: resourceclaims.resource.k8s.io "{name}" not found')
        return self.stored[name]


async def test_prepare_reads_the_claim_from_the_api_not_the_cache(tmp_path: Path) -> None:
    """The DRA manager's fetch is the kubelet's GET at each PrepareResources: a claim the cache has
    not seen (its reflector is refused on a real kube-apiserver) is found at once and a stale cached
    copy is not used; a GET of an unchanged claim signals no change (else each retry of a waiting
    pod would GET and retry again), a changed or vanished one does."""
    from nodeagent.nodeapi.claims import NodeClaims

    (tmp_path / "k").write_text(KUBECONFIG)
    api = Claims(tmp_path / "k")
    try:
        source = NodeClaims(api.claims.get, fetch=api.claims.fetch)
        api.stored["c"] = {"metadata": {"namespace": "ns", "name": "c", "uid": "u", "resourceVersion": "1"}}
        assert await source.fetch_claim("ns", "c") == api.stored["c"]
        assert api.claims.changed.is_set()
        api.claims.changed.clear()
        assert await source.fetch_claim("ns", "c") == api.stored["c"]
        assert not api.claims.changed.is_set(), "the same resourceVersion again is no change"
        reserved = {"metadata": {"namespace": "ns", "name": "c", "uid": "u", "resourceVersion": "2"},
                    "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-1"}]}}
        api.stored["c"] = reserved
        assert await source.fetch_claim("ns", "c") == reserved  # not the cached resourceVersion 1
        assert api.claims.changed.is_set() and source.get_claim("ns", "c") == reserved
        api.claims.changed.clear()
        del api.stored["c"]
        assert await source.fetch_claim("ns", "c") is None
        assert api.claims.changed.is_set() and source.get_claim("ns", "c") is None
        assert api.gets == ["c", "c", "c", "c"]
    finally:
        await api.close()


async def test_claim_get_waits_for_the_node_authorizer_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A GET refused because the Node authorizer's graph has not seen the pod's binding yet is tried
    again (up to a second): nodeagent prepares within milliseconds of the binding, the kubelet later;
    any other refusal, or one that lasts, is the prepare's error."""
    from nodeagent.nodeapi import remote

    monkeypatch.setattr(remote, "FORBIDDEN_RETRY_DELAY", 0.0)
    (tmp_path / "k").write_text(KUBECONFIG)
    api = Claims(tmp_path / "k")
    try:
        api.stored["c"] = {"metadata": {"namespace": "ns", "name": "c", "uid": "u", "resourceVersion": "1"}}
        api.refusals = 2
        assert await api.claims.fetch("ns", "c") == api.stored["c"]
        assert api.gets == ["c", "c", "c"]
        api.refusals = remote.FORBIDDEN_RETRIES + 1
        with pytest.raises(NodeAgentError) as refused:
            await api.claims.fetch("ns", "c")
        # the server's message alone, as client-go's error prints it (the kubelet's event text)
        assert str(refused.value) == (
            'resourceclaims.resource.k8s.io "c" is forbidden: User "system:node:n1" cannot get resource '
            '"resourceclaims" in API group "resource.k8s.io" in the namespace "ns": node: no relationship '
            "found between node 'n1' and this object")
        assert len(api.gets) == 3 + remote.FORBIDDEN_RETRIES + 1
    finally:
        await api.close()


async def test_a_joined_node_gets_claims_and_never_lists_them(tmp_path: Path) -> None:
    """The DRA manager's claim source on a joined node is the kubelet's: each claim by GET when a pod is
    prepared, and nothing in the background. A reflector over every ResourceClaim (list + watch at
    cluster scope) is refused a node identity by kube-apiserver's Node authorizer: it logged 403s on
    every joined node (the kubelet tier's 50-static-pod)."""
    from nodeagent.wiring.control_plane import claim_source

    class Recording(Claims):
        def __init__(self, kubeconfig: Path) -> None:
            super().__init__(kubeconfig)
            self.spawned: list[str] = []

        def spawn(self, coro: Any, name: str) -> Any:
            self.spawned.append(name)
            return super().spawn(coro, name)

        def stream(self, path: str, query: Any, **kwargs: Any) -> Any:
            raise AssertionError(f"the node watched {path}")

    (tmp_path / "k").write_text(KUBECONFIG)
    api = Recording(tmp_path / "k")
    try:
        source = claim_source(api)
        api.stored["c"] = {"metadata": {"namespace": "ns", "name": "c", "uid": "u", "resourceVersion": "1"}}
        assert await source.fetch_claim("ns", "c") == api.stored["c"]
        assert api.spawned == [], "nothing runs in the background for claims"
        assert api.gets == ["c"]
    finally:
        await api.close()
