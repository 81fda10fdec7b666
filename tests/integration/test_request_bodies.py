"""Request bodies from 1 KiB to maxRequestBytes (3 MiB, the default) through kubectl and the official
Python client against a running daemon: each is read whole and stored, up to what etcd stores (bodies
above 64-128 KiB were once refused with a false `unexpected end of JSON input`: read in part), past it
refused with the etcd client's byte count of the whole object, one past the limit is
kube-apiserver's 413 `Request entity too large: limit is 3145728`, and server-side applies of 48 KiB
objects side by side all succeed (38 of 338 failed once). Raw chunked and slow uploads are in
tests/rpc/test_apiserver_edge.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]
LIMIT = 3 * 1024 * 1024
NS = "bodies"
SIZES = [1024, 64 * 1024, 128 * 1024 + 7, 1024 * 1024]
BIGGEST = LIMIT - 4096
"""Read whole, but more data than a ConfigMap holds: refused by kube-apiserver's 1 MiB data validation
(ValidateConfigMap), which only a body read and decoded whole reaches (one read in part answered
`unexpected end of JSON input`)."""
TOO_LONG = 'The ConfigMap "{}" is invalid: []: Too long: may not be more than 1048576 bytes'



def configmap(name: str, size: int) -> dict[str, Any]:
    """A ConfigMap whose compact JSON is `size` bytes."""
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
                           "data": {"blob": ""}}
    doc["data"]["blob"] = "x" * (size - len(json.dumps(doc, separators=(",", ":"))))
    return doc


def typed(doc: dict[str, Any]) -> Any:
    """The client's V1ConfigMap of a ConfigMap document (it encodes it with json.dumps: a few bytes more)."""
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=doc["metadata"]["name"]), data=doc["data"])


@pytest.fixture(scope="module")
def daemon(api_daemon: Daemon) -> Daemon:
    api_daemon.kubectl("create", "namespace", NS, check=False)
    return api_daemon


@pytest.mark.parametrize("size", SIZES)
def test_kubectl_create_reads_the_whole_body(daemon: Daemon, size: int) -> None:
    name = f"kubectl-{size}"
    out = daemon.kubectl("create", "-f", "-", input=json.dumps(configmap(name, size), separators=(",", ":")))
    assert out.stdout.strip() == f"configmap/{name} created"
    got = json.loads(daemon.kubectl("get", "configmap", "-n", NS, name, "-o", "json").stdout)
    assert got["data"]["blob"] == configmap(name, size)["data"]["blob"]


def test_kubectl_create_of_the_biggest_body_reads_it_whole(daemon: Daemon) -> None:
    out = daemon.kubectl("create", "-f", "-", input=json.dumps(configmap("kubectl-biggest", BIGGEST),
                                                               separators=(",", ":")), check=False)
    assert out.returncode != 0
    assert TOO_LONG.format("kubectl-biggest") in out.stderr, out.stderr


def test_python_client_create_of_the_biggest_body_reads_it_whole(daemon: Daemon) -> None:
    core = client.CoreV1Api(config.new_client_from_config(str(daemon.kubeconfig)))
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_config_map(NS, typed(configmap("python-biggest", BIGGEST)))
    status = json.loads(refused.value.body or "{}")
    assert (refused.value.status, status["reason"]) == (422, "Invalid")
    assert status["message"] == TOO_LONG.format("python-biggest").removeprefix("The ")


def test_kubectl_past_the_limit_is_413(daemon: Daemon) -> None:
    out = daemon.kubectl("create", "-f", "-", input=json.dumps(configmap("kubectl-over", LIMIT + 1024)),
                         check=False)
    assert out.returncode != 0 and f"Request entity too large: limit is {LIMIT}" in out.stderr
    assert daemon.kubectl("get", "configmap", "-n", NS, "kubectl-over", check=False).returncode == 1


@pytest.mark.parametrize("size", SIZES)
def test_python_client_create_reads_the_whole_body(daemon: Daemon, size: int) -> None:
    core = client.CoreV1Api(config.new_client_from_config(str(daemon.kubeconfig)))
    name = f"python-{size}"
    made = core.create_namespaced_config_map(NS, typed(configmap(name, size)))
    assert made.metadata.name == name
    assert core.read_namespaced_config_map(name, NS).data["blob"] == configmap(name, size)["data"]["blob"]


def test_python_client_past_the_limit_is_413(daemon: Daemon) -> None:
    core = client.CoreV1Api(config.new_client_from_config(str(daemon.kubeconfig)))
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_config_map(NS, typed(configmap("python-over", LIMIT + 1024)))
    status = json.loads(refused.value.body or "{}")
    assert (refused.value.status, status["reason"], status["message"]) == (
        413, "RequestEntityTooLarge", f"Request entity too large: limit is {LIMIT}")


def test_server_side_applies_of_48_kib_side_by_side(daemon: Daemon) -> None:
    def apply(i: int) -> subprocess.CompletedProcess[str]:
        doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"ssa-{i}", "namespace": NS},
               "data": {f"k{j}": "v" * 1000 for j in range(48)}}
        return daemon.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(doc), check=False)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(apply, range(24)))
    failed = [r.stderr for r in results if r.returncode != 0]
    assert not failed, failed[:3]
    assert all(r.stdout.strip().endswith("serverside-applied") for r in results)
