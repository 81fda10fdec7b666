"""The kubelet endpoint's pure parts: auth.go's path mapping, the settings and their defaults, the
containerLogs text, the review caches; and the API server's reviews and node-proxy rules."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nodeagent.apiserver import nodeproxy
from nodeagent.apiserver.authn.chain import Authenticator
from nodeagent.apiserver.authn.tokens import TokenRow, TokenTable
from nodeagent.apiserver.authn.user import UserInfo
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.reviews import Reviews, review_kind
from nodeagent.errors import ConfigError
from nodeagent.kubeletserver import auth, logs
from nodeagent.kubeletserver.options import ServerOptions, server_options
from nodeagent.kubeletserver.webhook import WebhookReviews
from nodeagent.util.clock import FakeClock


@pytest.mark.parametrize(("path", "fine", "want"), [
    ("/configz", True, ["configz", "proxy"]),
    ("/configz", False, ["proxy"]),
    ("/pods", True, ["pods", "proxy"]),
    ("/pods/", True, ["pods", "proxy"]),
    ("/podsx", True, ["proxy"]),
    ("/healthz", True, ["healthz", "proxy"]),
    ("/runningpods/", True, ["pods", "proxy"]),
    ("/stats/summary", True, ["stats"]),
    ("/stats", True, ["stats"]),
    ("/metrics", True, ["metrics"]),
    ("/metrics/resource", False, ["metrics"]),
    ("/metrics/probes", True, ["metrics"]),
    ("/logs/", True, ["log"]),
    ("/containerLogs/ns/p/c", True, ["proxy"]),
    ("/checkpoint/ns/p/c", True, ["checkpoint"]),
    ("/flagz", True, ["configz"]),
    ("/statusz", True, ["statusz"]),
    ("/exec/ns/p/c", True, ["proxy"]),
])
def test_request_paths_map_to_subresources_as_auth_go(path: str, fine: bool, want: list[str]) -> None:
    assert auth.subresources(path, fine_grained=fine) == want


def test_attributes_and_the_forbidden_text() -> None:
    attrs = auth.request_attributes("GET", "/configz", "n1", fine_grained=True)
    assert [(a.verb, a.subresource, a.name) for a in attrs] == [("get", "configz", "n1"), ("get", "proxy", "n1")]
    assert auth.forbidden_text(auth.User("alice"), attrs) == \
        "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[configz proxy])\n"
    assert auth.request_attributes("OPTIONS", "/pods", "n1", fine_grained=False)[0].verb == ""


def test_certificate_subject_and_bearer_parsing() -> None:
    subject = ((("organizationName", "g1"),), (("organizationName", "g2"),), (("commonName", "bob"),))
    assert auth.user_of_certificate(subject) == auth.User("bob", ("g1", "g2"))
    assert auth.user_of_certificate(((("organizationName", "g1"),),)) is None
    # the x509 authenticator's uid (userId) and credential id (the certificate's SHA-256), as upstream's
    with_id = auth.user_of_certificate(((("commonName", "bob"),), (("userId", "u-1"),)), b"DER")
    digest = hashlib.sha256(b"DER").hexdigest()
    assert with_id == auth.User("bob", (), "u-1", (("authentication.kubernetes.io/credential-id",
                                                     (f"X509SHA256={digest}",)),))
    assert auth.bearer_token("Bearer abc") == "abc"
    assert auth.bearer_token("bearer  abc") is None  # split on single spaces, as upstream
    assert auth.bearer_token("Basic abc") is None and auth.bearer_token(None) is None


def test_server_options_defaults_and_fields() -> None:
    assert server_options({}) == ServerOptions()
    opts = server_options({"address": "0.0.0.0", "port": 0, "enableServer": True,
                           "tlsCertFile": "/c", "tlsPrivateKeyFile": "/k",
                           "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False,
                                                                                         "cacheTTL": "10s"},
                                              "x509": {"clientCAFile": "/ca"}},
                           "authorization": {"mode": "AlwaysAllow", "webhook": {"cacheAuthorizedTTL": "1m"}}})
    assert (opts.address, opts.port, opts.tls_cert_file, opts.client_ca_file) == ("0.0.0.0", 0, Path("/c"), Path("/ca"))
    assert opts.anonymous and not opts.webhook_authentication and opts.token_cache_ttl == 10.0
    assert opts.authorization_mode == "AlwaysAllow" and opts.authorized_ttl == 60.0 and opts.unauthorized_ttl == 30.0
    assert not server_options({"enableServer": False}).enabled


@pytest.mark.parametrize(("doc", "text"), [
    ({"port": 70000}, "port (--port) 70000 must be between 1 and 65535, inclusive"),
    ({"readOnlyPort": -1}, "readOnlyPort (--read-only-port) -1 must be between 0 and 65535, inclusive"),
    ({"authorization": {"mode": "RBAC"}}, 'unknown authorization mode "RBAC"'),
    ({"tlsCertFile": "/c"}, "tlsCertFile and tlsPrivateKeyFile are given together"),
    ({"authentication": {"anonymous": {"enabled": "yes"}}}, "authentication.anonymous.enabled: expected boolean"),
])
def test_server_options_refused(doc: Mapping[str, Any], text: str) -> None:
    with pytest.raises(ConfigError, match=text.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        server_options(doc)


def test_environment_order_cdi_and_rendering() -> None:
    specs = [{"cdiVersion": "0.6.0", "kind": "example.com/gpu", "containerEdits": {"env": ["COMMON=1"]},
              "devices": [{"name": "g0", "containerEdits": {"env": ["GPU=g0", "SHARED=cdi"]}}]}]
    cdi = logs.cdi_env("example.com/gpu=g0", specs)
    assert cdi is not None and cdi.values == (("COMMON", "1"), ("GPU", "g0"), ("SHARED", "cdi"))
    assert logs.cdi_env("example.com/gpu=g9", specs) is None and logs.cdi_env("nonsense", specs) is None
    spec = logs.spec_env({"env": [{"name": "SHARED", "value": "spec"}, {"name": "REF", "valueFrom": {
        "secretKeyRef": {"name": "s", "key": "k"}}}]})
    assert spec.values == (("SHARED", "spec"), ("REF", "<secretKeyRef s/k>"))
    plugin = logs.EnvSource("device plugin example.com/gpu", (("SHARED", "plugin"), ("DP", "x")))
    assert logs.resolve([plugin, spec, cdi]) == [
        ("SHARED", "cdi", "CDI example.com/gpu=g0"), ("DP", "x", "device plugin example.com/gpu"),
        ("REF", "<secretKeyRef s/k>", "spec"), ("COMMON", "1", "CDI example.com/gpu=g0"),
        ("GPU", "g0", "CDI example.com/gpu=g0")]
    lines = logs.container_text("ns", "p", "c", events=[logs.LogEvent(0.0, "Normal", "Started", "Started container c")],
                                sources=[spec], state="running", unresolved=["x.com/y=z"])
    text = logs.render(lines, now=1.0).decode()
    assert text.startswith("nodeagent runs no containers: this is not the output of container c of pod ns/p")
    assert "  1970-01-01T00:00:00Z Normal Started: Started container c\n" in text
    assert text.endswith("  # CDI device x.com/y=z: no spec found in the CDI directories, its edits unknown\n")
    stamped = logs.render(lines, now=1.0, timestamps=True, tail_lines=1).decode()
    assert stamped.startswith("1970-01-01T00:00:01.000000000Z   # CDI device") and stamped.count("\n") == 1
    assert logs.render(lines, now=1.0, limit_bytes=10) == text.encode()[:10]
    assert logs.render(lines, now=1.0, tail_lines=0) == b""


async def test_reviews_are_cached_for_their_ttl() -> None:
    clock = FakeClock()
    calls: list[str] = []

    async def post(path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        calls.append(path)
        if path.endswith("tokenreviews"):
            ok = body["spec"]["token"] == "good"
            return {"status": {"authenticated": True, "user": {"username": "u", "groups": ["g"]}} if ok else {}}
        return {"status": {"allowed": body["spec"]["user"] == "u"}}

    reviews = WebhookReviews(post, clock.monotonic, token_ttl=120, authorized_ttl=300, unauthorized_ttl=30)
    user = await reviews.authenticate("good")
    assert user == auth.User("u", ("g", "system:authenticated"))
    assert await reviews.authenticate("bad") is None
    await reviews.authenticate("good")
    assert len(calls) == 2
    attrs = auth.request_attributes("GET", "/stats/summary", "n", fine_grained=True)[0]
    assert await reviews.authorize(user, attrs) == (True, "")
    assert await reviews.authorize(auth.User("x"), attrs) == (False, "")
    await reviews.authorize(user, attrs)
    await reviews.authorize(auth.User("x"), attrs)
    assert len(calls) == 4
    clock.advance(31)  # the refusal expires first
    await reviews.authorize(user, attrs)
    await reviews.authorize(auth.User("x"), attrs)
    assert len(calls) == 5
    clock.advance(100)
    await reviews.authenticate("good")
    assert len(calls) == 6


def _reviews(token: str, *, anonymous: bool = False) -> Reviews:
    admin = UserInfo("nodeagent-admin", groups=("system:masters",))
    return Reviews(Authenticator(TokenTable([TokenRow(token, admin)]), anonymous=anonymous), lambda: 0.0)


def test_the_api_servers_reviews() -> None:
    reviews = _reviews("secret")
    out = reviews.create("TokenReview", {"spec": {"token": "secret", "audiences": ["a"]}})
    assert out["apiVersion"] == "authentication.k8s.io/v1" and out["status"]["authenticated"] is True
    assert out["status"]["user"] == {"username": "nodeagent-admin", "groups": ["system:masters",
                                                                              "system:authenticated"]}
    assert out["status"]["audiences"] == ["a"]
    # upstream's TokenReview REST: the authenticator's error (bearertoken's invalidToken) in status.error
    assert reviews.create("TokenReview", {"spec": {"token": "nope"}})["status"] == {
        "user": {}, "error": "invalid bearer token"}
    with pytest.raises(APIError, match="token is required for TokenReview in authentication"):
        reviews.create("TokenReview", {"spec": {}})
    sar = {"spec": {"user": "bob", "resourceAttributes": {"verb": "get", "resource": "nodes"}}}
    assert reviews.create("SubjectAccessReview", sar)["status"]["allowed"] is False
    sar["spec"]["groups"] = ["system:masters"]
    assert reviews.create("SubjectAccessReview", sar)["status"] == {"allowed": True}
    with pytest.raises(APIError, match="at least one of user or group must be specified"):
        reviews.create("SubjectAccessReview", {"spec": {"resourceAttributes": {}}})
    with pytest.raises(APIError, match="exactly one of nonResourceAttributes or resourceAttributes"):
        reviews.create("SubjectAccessReview", {"spec": {"user": "u"}})
    assert _reviews("secret", anonymous=True).create("SubjectAccessReview", sar)["status"]["allowed"] is True
    assert review_kind("/apis/authorization.k8s.io/v1/subjectaccessreviews") == "SubjectAccessReview"
    assert review_kind("/apis/authentication.k8s.io/v1/tokenreviews") == "TokenReview"
    assert review_kind("/api/v1/pods") is None


def test_node_proxy_paths_addresses_and_containers() -> None:
    assert nodeproxy.match("/api/v1/nodes/n1/proxy") == ("proxy", "n1", "")
    assert nodeproxy.match("/api/v1/nodes/n1/proxy/stats/summary") == ("proxy", "n1", "/stats/summary")
    assert nodeproxy.match("/api/v1/namespaces/ns/pods/p/log") == ("log", "ns", "p")
    assert nodeproxy.match("/api/v1/namespaces/ns/pods/p/exec") == ("exec", "ns", "p")
    assert nodeproxy.match("/api/v1/namespaces/ns/pods/p/status") is None
    assert nodeproxy.match("/api/v1/nodes/n1/status") is None
    node = {"status": {"addresses": [{"type": "Hostname", "address": "h"},
                                     {"type": "InternalIP", "address": "10.0.0.1"}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": 12345}}}}
    assert nodeproxy.preferred_address(node) == "10.0.0.1" and nodeproxy.kubelet_port(node) == 12345
    assert nodeproxy.kubelet_port({}) == 10250
    with pytest.raises(APIError, match=r"no preferred addresses found; known addresses: \[\]"):
        nodeproxy.preferred_address({"status": {}})
    pod = {"metadata": {"name": "p"}, "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}]}}
    assert nodeproxy.validate_container(pod, "") == "a" and nodeproxy.validate_container(pod, "i") == "i"
    with pytest.raises(APIError, match="container z is not valid for pod p"):
        nodeproxy.validate_container(pod, "z")
    pod["spec"]["containers"].append({"name": "b"})
    with pytest.raises(APIError, match=r"a container name must be specified for pod p, choose one of: \[i a b\]"):
        nodeproxy.validate_container(pod, "")


async def test_loopback_nodes_are_not_proxied_as_upstream() -> None:
    for host in ("127.0.0.1", "::1", "169.254.1.1"):
        with pytest.raises(APIError, match="address not allowed"):
            await nodeproxy.check_proxyable(host)
    await nodeproxy.check_proxyable("192.0.2.2")


def test_the_documented_config_shows_the_endpoints_defaults() -> None:
    from nodeagent.config import load

    cfg = load(Path(__file__).resolve().parents[3] / "configs" / "nodeagent.yaml")
    assert server_options(cfg.kubelet.raw) == ServerOptions()


def test_virtual_nodes_without_an_endpoint_are_refused() -> None:
    from nodeagent.controlplane.controllers.virtual_nodes import LABEL_VIRTUAL

    assert nodeproxy.VIRTUAL_LABEL == LABEL_VIRTUAL
    virtual = {"metadata": {"name": "v1", "labels": {LABEL_VIRTUAL: "true"}}, "status": {}}
    refusal = nodeproxy.without_endpoint(virtual)
    assert refusal is not None and refusal.code == 503 and "virtual node" in refusal.message
    virtual["status"] = {"daemonEndpoints": {"kubeletEndpoint": {"Port": 1}}}
    assert nodeproxy.without_endpoint(virtual) is None
    assert nodeproxy.without_endpoint({"metadata": {"name": "real"}, "status": {}}) is None


def test_default_addresses(caplog: pytest.LogCaptureFixture) -> None:
    from nodeagent.wiring.kubelet_server import _hosts

    def local(ip: str) -> bool:
        return ip != "10.1.2.3"

    assert _hosts("", ["192.0.2.2"], local) == ["192.0.2.2", "127.0.0.1"]
    assert _hosts("", ["127.0.0.2"], local) == ["127.0.0.2"]  # one of several nodes of a machine: not 127.0.0.1
    assert _hosts("", ["127.0.0.1"], local) == ["127.0.0.1"]
    assert _hosts("0.0.0.0", ["192.0.2.2"], local) == [None]
    assert _hosts("[::1]", ["192.0.2.2"], local) == ["::1"]
    assert not caplog.records
    # a node IP that is not an address of this host (a fake node's) is left out and said in the log
    with caplog.at_level(logging.WARNING, logger="nodeagent.wiring.kubelet_server"):
        assert _hosts("", ["10.1.2.3"], local) == ["127.0.0.1"]
        assert _hosts("", ["10.1.2.3", "192.0.2.2"], local) == ["192.0.2.2", "127.0.0.1"]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and all("not listening on node IP 10.1.2.3: not an address of this host" in m for m in said)
    # ...but an address written in the configuration is bound as written, whether local or not
    assert _hosts("10.1.2.3", ["10.1.2.3"], local) == ["10.1.2.3"]


def test_local_address_is_the_kernels_answer() -> None:
    from nodeagent.wiring.kubelet_server import is_local_address

    assert is_local_address("127.0.0.1") and is_local_address("127.0.0.2")  # all of 127.0.0.0/8 on Linux
    nonlocal_bind = Path("/proc/sys/net/ipv4/ip_nonlocal_bind")
    if nonlocal_bind.exists() and nonlocal_bind.read_text().strip() == "0":
        assert not is_local_address("192.0.2.77")  # TEST-NET-1, held by no interface here
    assert not is_local_address("not-an-ip")


async def test_access_reviews_carry_the_users_uid_and_extra() -> None:
    specs: list[Mapping[str, Any]] = []

    async def post(path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        if path.endswith("tokenreviews"):
            return {"status": {"authenticated": True, "user": {
                "username": "u", "uid": "1", "extra": {"k": ["v1", "v2"]}}}}
        specs.append(body["spec"])
        return {"status": {"allowed": True}}

    reviews = WebhookReviews(post, FakeClock().monotonic)
    user = await reviews.authenticate("t")
    assert user == auth.User("u", ("system:authenticated",), "1", (("k", ("v1", "v2")),))
    attrs = auth.request_attributes("GET", "/pods", "n1", fine_grained=False)[0]
    assert await reviews.authorize(user, attrs) == (True, "")
    assert specs[0]["uid"] == "1" and specs[0]["extra"] == {"k": ["v1", "v2"]}
