"""The kubelet endpoint of a node (HTTPS, authenticated and authorized as the kubelet's) and the embedded
API server's ways to it: nodes/NAME/proxy, pods/log, and the exec/attach/portforward refusal.

Real clients only: kubectl (get --raw, logs, exec), curl with the admin token, with a wrong token, with client
certificates issued by the cluster CA, and without credentials; the upstream texts of 401 and 403 checked.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("curl") is None or shutil.which("kubectl") is None,
                                 reason="curl and kubectl are needed")]

REPO = Path(__file__).resolve().parents[2]
NODE = "test-node"
POD = """
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - name: app
    image: example/app
    env:
    - {name: GREETING, value: hello}
    - {name: FAKE_GPU_DEVICES, value: from-spec}
    resources:
      limits: {example.com/gpu: "1"}
  - name: side
    image: example/side
"""


def skip_unless_proxyable(node: dict[str, Any]) -> None:
    """kube-apiserver (and nodeagent's API server, as it) refuses to proxy to a loopback node address: on a
    machine without a default route the node's InternalIP is 127.0.0.1."""
    address = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
    if address.startswith("127.") or address == "::1":
        pytest.skip(f"the node's InternalIP is {address} (no default route): not proxied, as upstream")


def kubelet_port(d: Daemon) -> int:
    node = d.kubectl_json("get", "node", NODE)
    return int(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"])


def token(d: Daemon) -> str:
    return str(yaml.safe_load(d.kubeconfig.read_text())["users"][0]["user"]["token"])


def client_cert(d: Daemon, folder: Path, user: str, groups: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """A client certificate for `user` in `groups`, signed by the embedded API server's CA (as an admin would)."""
    ca_dir = d.base / "state" / "apiserver"
    ca = x509.load_pem_x509_certificate((ca_dir / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((ca_dir / "ca.key").read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups),
                         x509.NameAttribute(NameOID.COMMON_NAME, user)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = folder / f"{user}.crt", folder / f"{user}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def curl(url: str, *args: str) -> tuple[int, str]:
    """(HTTP status, body) of curl -k (the kubelet's certificate is self-signed, as a kubelet's is)."""
    out = subprocess.run(["curl", "-sk", "-w", "\n%{http_code}", *args, url], capture_output=True, text=True,
                         timeout=30)
    body, _, code = out.stdout.rpartition("\n")
    return int(code or 0), body


def gpu_agent(base: Path) -> dict[str, Any]:
    return {"plugins": [{"name": "fake-gpu", "command": [
        sys.executable, "-m", "plugins.fake_device_plugin", "--config", str(REPO / "configs/plugins/fake-gpu.yaml")],
        "env": {"PYTHONPATH": str(REPO)}}]}


@pytest.fixture(scope="module")
def daemon() -> Any:
    import shutil as sh
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="na-ke-", dir="/tmp"))
    try:
        with running_daemon(base, agent=gpu_agent(base)) as d:
            wait_for(lambda: d.kubectl_json("get", "node", NODE)["status"].get("allocatable", {})
                     .get("example.com/gpu") == "4", timeout=30, what="the fake gpus")
            d.kubectl("apply", "-f", "-", input=POD)
            wait_for(lambda: d.kubectl_json("get", "pod", "web").get("status", {}).get("phase") == "Running",
                     timeout=30, what="pod web running")
            yield d
    finally:
        sh.rmtree(base, ignore_errors=True)


def test_the_node_registers_its_kubelet_port_and_the_proxy_reaches_it(daemon: Daemon) -> None:
    port = kubelet_port(daemon)
    assert port > 0
    skip_unless_proxyable(daemon.kubectl_json("get", "node", NODE))
    configz = json.loads(daemon.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/configz").stdout)
    assert configz["kubeletconfig"]["maxPods"] == 110
    pods = json.loads(daemon.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/pods").stdout)
    assert pods["kind"] == "PodList" and [p["metadata"]["name"] for p in pods["items"]] == ["web"]
    assert daemon.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/healthz").stdout == "ok"
    assert daemon.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/healthz?verbose").stdout == \
        "[+]ping ok\n[+]log ok\n[+]syncloop ok\nhealthz check passed\n"
    assert daemon.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/healthz/syncloop").stdout == "ok"
    summary = json.loads(daemon.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/stats/summary").stdout)
    assert summary["node"]["nodeName"] == NODE
    resource = daemon.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/metrics/resource").stdout
    assert "# TYPE node_cpu_usage_seconds_total counter" in resource
    assert 'container_memory_working_set_bytes{container="app",namespace="default",pod="web"}' in resource
    assert "resource_scrape_error 0.0" in resource
    probes = daemon.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/metrics/probes").stdout
    assert "process_start_time_seconds" in probes
    metrics = daemon.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/metrics").stdout
    assert "kubelet_" in metrics or "nodeagent_" in metrics
    missing = daemon.kubectl("get", "--raw", "/api/v1/nodes/nowhere/proxy/configz", check=False)
    assert missing.returncode != 0 and 'nodes "nowhere" not found' in missing.stderr


def test_tokens_are_reviewed_and_refused_with_the_kubelets_texts(daemon: Daemon) -> None:
    url = f"https://127.0.0.1:{kubelet_port(daemon)}"
    code, body = curl(f"{url}/configz", "-H", f"Authorization: Bearer {token(daemon)}")
    assert code == 200 and json.loads(body)["kubeletconfig"]["maxPods"] == 110
    assert curl(f"{url}/configz", "-H", "Authorization: Bearer not-a-token") == (401, "Unauthorized")
    assert curl(f"{url}/configz") == (401, "Unauthorized")  # anonymous is off, as the kubelet's default
    assert curl(f"{url}/nowhere", "-H", f"Authorization: Bearer {token(daemon)}") == (404, "404 page not found\n")
    code, body = curl(f"{url}/pods", "-X", "POST", "-H", f"Authorization: Bearer {token(daemon)}")
    assert code == 405


def test_client_certificates_from_the_cluster_ca_and_a_refused_review(daemon: Daemon, short_dir: Path) -> None:
    url = f"https://127.0.0.1:{kubelet_port(daemon)}"
    cert, key = client_cert(daemon, short_dir, "alice")
    code, body = curl(f"{url}/configz", "--cert", str(cert), "--key", str(key))
    # KubeletFineGrainedAuthz: nodes/configz first, then nodes/proxy; both refused by the API server's review
    assert (code, body) == (403, "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[configz proxy])\n")
    code, body = curl(f"{url}/stats/summary", "--cert", str(cert), "--key", str(key))
    assert (code, body) == (403, "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[stats])\n")
    admin_cert, admin_key = client_cert(daemon, short_dir, "root-admin", ("system:masters",))
    code, body = curl(f"{url}/metrics/resource", "--cert", str(admin_cert), "--key", str(admin_key))
    assert code == 200 and "node_memory_working_set_bytes" in body


def test_the_api_server_answers_token_and_access_reviews(daemon: Daemon) -> None:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token(daemon)}}
    out = json.loads(daemon.kubectl("create", "--raw", "/apis/authentication.k8s.io/v1/tokenreviews", "-f", "-",
                                    input=json.dumps(review)).stdout)
    assert out["status"]["authenticated"] is True and "system:masters" in out["status"]["user"]["groups"]
    review["spec"] = {"token": "wrong"}
    out = json.loads(daemon.kubectl("create", "--raw", "/apis/authentication.k8s.io/v1/tokenreviews", "-f", "-",
                                    input=json.dumps(review)).stdout)
    assert "authenticated" not in out["status"]
    sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": "bob", "groups": ["system:authenticated"],
        "resourceAttributes": {"verb": "get", "resource": "nodes", "subresource": "proxy", "name": NODE}}}
    out = json.loads(daemon.kubectl("create", "--raw", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                    "-f", "-", input=json.dumps(sar)).stdout)
    # answered by the Node,RBAC authorizers: no role gives bob nodes/proxy, and no reason is given (as upstream)
    assert out["status"] == {"allowed": False}
    sar["spec"]["groups"] = ["system:masters"]
    out = json.loads(daemon.kubectl("create", "--raw", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                    "-f", "-", input=json.dumps(sar)).stdout)
    assert out["status"] == {"allowed": True}


def test_kubectl_logs_shows_what_the_node_knows_and_exec_says_why_not(daemon: Daemon) -> None:
    skip_unless_proxyable(daemon.kubectl_json("get", "node", NODE))
    out = daemon.kubectl("logs", "web", "-c", "app").stdout
    lines = out.splitlines()
    assert lines[0].startswith("nodeagent runs no containers: this is not the output of container app")
    assert "  GREETING=hello\t# spec" in lines
    # the device plugin's Allocate env comes first, the container's own value of the same name wins
    assert "  FAKE_GPU_DEVICES=from-spec\t# spec" in lines
    assert "Normal Started: Container started" in [line[23:] for line in lines], out
    tail = daemon.kubectl("logs", "web", "-c", "app", "--tail", "2").stdout.splitlines()
    assert tail == lines[-2:]
    # kubectl picks the first container itself; the API server wants one named when a pod has several
    both = daemon.kubectl("get", "--raw", "/api/v1/namespaces/default/pods/web/log", check=False)
    assert both.returncode != 0
    assert "a container name must be specified for pod web, choose one of: [app side]" in both.stderr
    bad = daemon.kubectl("logs", "web", "-c", "nope", check=False)
    assert "container nope is not valid for pod web" in bad.stderr
    ex = daemon.kubectl("exec", "web", "-c", "app", "--", "true", check=False)
    assert ex.returncode != 0 and "nodeagent runs no containers" in ex.stderr, ex.stderr


def test_the_python_client_reads_the_proxy_and_pod_logs(daemon: Daemon) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    skip_unless_proxyable(daemon.kubectl_json("get", "node", NODE))
    api = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(daemon.kubeconfig)))
    configz = api.connect_get_node_proxy_with_path(NODE, "configz")
    assert "kubeletconfig" in configz
    text = api.read_namespaced_pod_log("web", "default", container="side", timestamps=True, tail_lines=3)
    lines = text.splitlines()
    assert len(lines) == 3 and all(line[:4].isdigit() and line[29] == "Z" for line in lines), lines
    with pytest.raises(kubernetes.client.ApiException) as refused:
        api.connect_get_namespaced_pod_portforward("web", "default", ports="80")
    assert refused.value.status == 400 and "nodeagent runs no containers" in str(refused.value.body)


def test_anonymous_and_always_allow_as_configured(short_dir: Path) -> None:
    kubelet = {"authentication": {"anonymous": {"enabled": True}}, "authorization": {"mode": "AlwaysAllow"}}
    with running_daemon(short_dir, kubelet=kubelet) as d:
        wait_for(lambda: kubelet_port(d), timeout=20, what="kubelet port")
        code, body = curl(f"https://127.0.0.1:{kubelet_port(d)}/healthz")
        assert (code, body) == (200, "ok")


@pytest.mark.timeout(240)
def test_a_joined_node_is_reached_through_the_control_planes_proxy(short_dir: Path) -> None:
    """Two processes: the node registers its endpoint port and addresses over REST, reviews tokens and access
    with the control plane's API, trusts its kubeconfig's CA for client certificates."""
    from tests.integration.daemon_helpers import free_port
    from tests.integration.test_two_processes import control_plane

    with control_plane(short_dir / "cp", free_port()) as cp:
        node_base = short_dir / "n"
        node_base.mkdir()
        agent = {"cluster": {"kubeconfig": str(cp.kubeconfig)}, "controlPlane": {"apiServer": {"bindAddress": ""}}}
        with running_daemon(node_base, {}, agent):
            wait_for(lambda: cp.kubectl("get", "node", NODE, check=False).returncode == 0, timeout=30,
                     what="the node registered")
            node = cp.kubectl_json("get", "node", NODE)
            port = int(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"])
            assert node["status"]["addresses"][0]["type"] == "InternalIP"
            skip_unless_proxyable(node)
            configz = json.loads(cp.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/configz").stdout)
            assert "kubeletconfig" in configz
            cp.kubectl("apply", "-f", "-", input=POD.replace("limits: {example.com/gpu: \"1\"}", "{}"))
            wait_for(lambda: cp.kubectl_json("get", "pod", "web").get("status", {}).get("phase") == "Running",
                     timeout=60, what="pod web running on the joined node")
            out = cp.kubectl("logs", "web", "-c", "side").stdout
            assert out.startswith("nodeagent runs no containers: this is not the output of container side")
            url = f"https://127.0.0.1:{port}"
            code, _ = curl(f"{url}/pods", "-H", f"Authorization: Bearer {token(cp)}")
            assert code == 200  # a TokenReview and a SubjectAccessReview over REST, both answered by the control plane
            cert, key = client_cert(cp, short_dir, "carol")
            assert curl(f"{url}/healthz", "--cert", str(cert), "--key", str(key)) == (
                403, "Forbidden (user=carol, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n")


@pytest.mark.parametrize(("kubelet", "text"), [
    ({"authorization": {"mode": "RBAC"}}, 'KubeletConfiguration.authorization.mode: unknown authorization mode "RBAC"'),
    ({"tlsCertFile": "/nonexistent/kubelet.crt", "tlsPrivateKeyFile": "/nonexistent/kubelet.key"},
     "KubeletConfiguration.tlsCertFile: /nonexistent/kubelet.crt with tlsPrivateKeyFile"),
])
def test_bad_endpoint_settings_stop_the_start_with_a_message(short_dir: Path, kubelet: dict[str, Any],
                                                            text: str) -> None:
    from tests.integration.daemon_helpers import write_config

    cfg = write_config(short_dir, kubelet, {}, 1)
    out = subprocess.run([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(cfg)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert text in out.stderr and "Traceback" not in out.stderr
