"""The daemon's /healthz and pod-resources List answers timed from a process of their own, as a user's
probes see them (issue 25: "no single request delays a /healthz or pod-resources answer by more than
100 ms").

A client that shares the daemon's process (an in-process test) shares its GIL, its event loop and its
garbage collections too: its own answers come late for reasons no user's client has. This one runs as
a child process (`python -m tests.sockprobe`), one thread per socket, each asking every INTERVAL
seconds over one kept-alive connection (HTTPS with the kubeconfig's CA and token; gRPC on the unix
socket), and notes each request's send time (time.monotonic, the system-wide CLOCK_MONOTONIC, so
comparable with the parent's clock) and its latency. Stopping it (closing its stdin) prints them as
JSON.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml

INTERVAL = 0.02
LATE = 0.1  # issue 25's bound: the report counts the answers above it
HEALTHZ, LIST = "/healthz", "pod-resources List"


@dataclass(frozen=True)
class Api:
    """The daemon's Kubernetes API as its kubeconfig names it."""

    server: str
    ca: str
    token: str

    @classmethod
    def from_kubeconfig(cls, path: Path) -> Api:
        doc = yaml.safe_load(path.read_text())
        cluster, user = doc["clusters"][0]["cluster"], doc["users"][0]["user"]
        return cls(cluster["server"], base64.b64decode(cluster["certificate-authority-data"]).decode(), user["token"])

    def connection(self, timeout: float = 60) -> http.client.HTTPSConnection:
        url = urlsplit(self.server)
        return http.client.HTTPSConnection(url.hostname or "127.0.0.1", url.port, timeout=timeout,
                                           context=ssl.create_default_context(cadata=self.ca))

    def request(self, conn: http.client.HTTPSConnection, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        conn.request(method, path, body=body, headers={"Authorization": f"Bearer {self.token}", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.read()


@dataclass
class Answers:
    """Every answer of both sockets: (send time, latency) per socket, and the phases the driver went
    through: (start time, name), in order."""

    samples: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    phases: list[tuple[float, str]] = field(default_factory=list)

    def phase(self, name: str) -> None:
        self.phases.append((time.monotonic(), name))

    def by_phase(self) -> dict[str, dict[str, list[float]]]:
        """socket -> phase -> latencies of the requests sent in that phase."""
        out: dict[str, dict[str, list[float]]] = {}
        for what, samples in self.samples.items():
            per = out.setdefault(what, {})
            for sent, took in samples:
                name = next((n for t, n in reversed(self.phases) if t <= sent), "start")
                per.setdefault(name, []).append(took)
        return out

    def worst(self) -> float:
        return max((took for samples in self.samples.values() for _, took in samples), default=0.0)

    def report(self) -> str:
        lines = []
        for what, per in self.by_phase().items():
            cells = []
            for name, took in per.items():
                took.sort()
                over = sum(t > LATE for t in took)
                cells.append(f"{name} n={len(took)} p50 {_pct(took, 50) * 1000:.0f} p90 {_pct(took, 90) * 1000:.0f}"
                             f" p99 {_pct(took, 99) * 1000:.0f} max {took[-1] * 1000:.0f} >{LATE * 1000:.0f}: {over}")
            lines.append(f"{what} (ms): " + "; ".join(cells))
        return "\n".join(lines)


def _pct(ordered: list[float], pct: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]


@contextlib.contextmanager
def probing(kubeconfig: Path, socket_path: Path) -> Iterator[Answers]:
    """The child process asking both sockets for the body of the `with`; its answers in the Answers
    once the body is left."""
    answers = Answers()
    proc = subprocess.Popen([sys.executable, "-m", "tests.sockprobe", str(kubeconfig), str(socket_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            cwd=Path(__file__).resolve().parent.parent)
    assert proc.stdin and proc.stdout
    try:
        assert proc.stdout.readline().strip() == b"ready", "the probe process did not start"
        yield answers
    finally:
        proc.stdin.close()
        with proc.stdout:
            out = proc.stdout.read()
        proc.wait(30)
    answers.samples = {k: [(s, t) for s, t in v] for k, v in json.loads(out).items()}


@dataclass
class Churn:
    """The small API writes `churning` made: rounds done, and each failure's text."""

    rounds: int = 0
    failures: list[str] = field(default_factory=list)


@contextlib.contextmanager
def churning(api: Api, interval: float = INTERVAL) -> Iterator[Churn]:
    """For the body of the `with`, a thread of this process writing small objects as controllers and
    kubectl do beside the huge pod (a ConfigMap created, patched and deleted, the namespace's ConfigMaps
    listed, every `interval` seconds): each write lands whenever the huge pod's worker threads hold the
    store, as a real cluster's other clients' would."""
    churn, stop = Churn(), threading.Event()

    def run() -> None:
        path = "/api/v1/namespaces/default/configmaps"
        with contextlib.closing(api.connection()) as conn:
            while not stop.is_set():
                name = f"churn-{churn.rounds}"
                for method, url, body, ctype, want in (
                        ("POST", path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                        "data": {"a": "1"}}, "application/json", 201),
                        ("PATCH", f"{path}/{name}", {"data": {"b": "2"}}, "application/merge-patch+json", 200),
                        ("GET", path, None, "", 200),
                        ("DELETE", f"{path}/{name}", None, "", 200)):
                    status, raw = api.request(conn, method, url, None if body is None else json.dumps(body).encode(),
                                              {"Content-Type": ctype} if ctype else None)
                    if status != want:
                        churn.failures.append(f"{method} {url}: {status} {raw[:200]!r}")
                churn.rounds += 1
                stop.wait(interval)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield churn
    finally:
        stop.set()
        thread.join(60)


def wait_healthy(api: Api, timeout: float = 60) -> None:
    """Until /healthz answers 200, then 2 s more: the start's own work (the printers imported after
    READY=1 and the like) is not the huge pod's."""
    deadline = time.monotonic() + timeout
    while True:
        conn = api.connection()
        try:
            if api.request(conn, "GET", "/healthz")[0] == 200:
                break
        except OSError:
            pass
        finally:
            conn.close()
        assert time.monotonic() < deadline, f"/healthz not 200 after {timeout} s"
        time.sleep(0.1)
    time.sleep(2)


def _until(what: str, check: Callable[[], bool], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not {what} after {timeout} s"
        time.sleep(0.5)


def huge_pod_life(api: Api, answers: Answers, containers: int) -> None:
    """A pod of `containers` containers on the local node "test-node" through its life, as
    tests/integration/test_huge_pod_stall.py's in-process test drives it, each phase marked in
    `answers`: created, until the Table's Status column says Running (asked every 0.5 s, as `kubectl
    get` would: no object), 2 s running, deleted, until 404, 2 s gone."""
    body = json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "huge"},
        "spec": {"nodeName": "test-node", "containers": [{"name": f"c{i}", "image": "x"} for i in range(containers)]},
    }).encode()
    with contextlib.closing(api.connection(300)) as conn:
        _life(api, conn, answers, body)


def _life(api: Api, conn: http.client.HTTPSConnection, answers: Answers, body: bytes) -> None:
    pod, table = "/api/v1/namespaces/default/pods/huge", "application/json;as=Table;v=v1;g=meta.k8s.io"

    def phase() -> tuple[int, str]:
        status, raw = api.request(conn, "GET", f"{pod}?includeObject=None", headers={"Accept": table})
        return status, json.loads(raw)["rows"][0]["cells"][2] if status == 200 else ""

    time.sleep(1)
    answers.phase("create")
    status, raw = api.request(conn, "POST", pod.rsplit("/", 1)[0], body, {"Content-Type": "application/json"})
    assert status == 201, raw[:500]
    answers.phase("admit and start")
    _until("Running", lambda: phase() == (200, "Running"))
    answers.phase("running")
    time.sleep(2)
    answers.phase("delete")
    status, raw = api.request(conn, "DELETE", pod)
    assert status == 200, raw[:500]
    _until("gone", lambda: phase()[0] == 404)
    answers.phase("gone")
    time.sleep(2)


def _ask_healthz(api: Api, stop: threading.Event, out: list[tuple[float, float]], up: threading.Event) -> None:
    with contextlib.closing(api.connection()) as conn:
        _healthz_loop(api, conn, stop, out, up)


def _healthz_loop(api: Api, conn: http.client.HTTPSConnection, stop: threading.Event,
                  out: list[tuple[float, float]], up: threading.Event) -> None:
    api.request(conn, "GET", "/healthz")  # connected before the first timed answer
    up.set()
    while not stop.is_set():
        sent = time.monotonic()
        status, _ = api.request(conn, "GET", "/healthz")
        out.append((sent, time.monotonic() - sent))
        assert status == 200, status
        stop.wait(INTERVAL)


def _ask_list(socket_path: Path, stop: threading.Event, out: list[tuple[float, float]], up: threading.Event) -> None:
    import grpc

    from nodeagent.apis.podresources.v1 import api_pb2, api_pb2_grpc

    with grpc.insecure_channel(f"unix://{socket_path}") as channel:
        lister = api_pb2_grpc.PodResourcesListerStub(channel)
        request = api_pb2.ListPodResourcesRequest()
        lister.List(request, timeout=60)  # connected before the first timed answer
        up.set()
        while not stop.is_set():
            sent = time.monotonic()
            lister.List(request, timeout=60)
            out.append((sent, time.monotonic() - sent))
            stop.wait(INTERVAL)


def main(argv: list[str]) -> int:
    api, socket_path = Api.from_kubeconfig(Path(argv[0])), Path(argv[1])
    stop, ups = threading.Event(), (threading.Event(), threading.Event())
    samples: dict[str, list[tuple[float, float]]] = {HEALTHZ: [], LIST: []}
    threads = [threading.Thread(target=_ask_healthz, args=(api, stop, samples[HEALTHZ], ups[0]), daemon=True),
               threading.Thread(target=_ask_list, args=(socket_path, stop, samples[LIST], ups[1]), daemon=True)]
    for t in threads:
        t.start()
    for up in ups:
        up.wait(60)
    print("ready", flush=True)
    sys.stdin.read()  # until the parent closes it
    stop.set()
    for t in threads:
        t.join(60)
    print(json.dumps(samples))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
