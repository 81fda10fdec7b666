"""Benchmark: the Kubernetes API over HTTPS against the in-process store it serves.

One run, three figures, each a ratio of two measurements taken here and now:
- LIST: 5000 pods read as JSON over HTTPS (`GET /api/v1/pods`, full body received and parsed by a
  client in another process) / the same pods taken from the store in process and encoded to JSON
  (the floor). list_ratio = floor_seconds / https_seconds (goal >= 0.5).
- Watch fan-out: 100 REST watchers on pods (one client process, 100 streaming connections) while
  5000 pods are created; events delivered per second / the same with 100 in-process store
  watchers. watch_ratio = rest_rate / inprocess_rate (goal >= 0.5; no watcher may drop).
- `kubectl get pods -A` of the 5000 pods (server-side Table) wall time, reported when kubectl exists.

The last line is `list_ratio=X watch_ratio=Y`.
Run: python bench/apiserver.py [--pods 5000] [--watchers 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

from nodeagent.apiserver.server import APIServer, APIServerOptions
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util import gcsettings
from nodeagent.util.clock import RealClock

CLIENT = textwrap.dedent('''
    import asyncio, json, ssl, sys, time
    import aiohttp, orjson

    async def main(mode, url, token, ca, n, expect):
        ctx = ssl.create_default_context(cafile=ca)
        headers = {"Authorization": "Bearer " + token, "Accept": "application/json"}
        conn = aiohttp.TCPConnector(ssl=ctx, limit=0)
        async with aiohttp.ClientSession(connector=conn, headers=headers) as s:
            if mode == "list":
                best = None
                for _ in range(n):
                    t0 = time.perf_counter()
                    async with s.get(url + "/api/v1/pods") as r:
                        body = await r.read()
                    items = len(orjson.loads(body)["items"])
                    dt = time.perf_counter() - t0
                    best = dt if best is None else min(best, dt)
                print(json.dumps({"seconds": best, "items": items}), flush=True)
                return
            counts = [0] * n
            ready = asyncio.Event()
            opened = [0]
            async def one(i):
                async with s.get(url + "/api/v1/pods?watch=true&resourceVersion=" + sys.argv[7]
                                 + "&timeoutSeconds=600") as r:
                    opened[0] += 1
                    if opened[0] == n:
                        print(json.dumps({"opened": n}), flush=True)
                    tail = b""
                    async for chunk in r.content.iter_any():
                        data = tail + chunk
                        cut = data.rfind(b"\\n") + 1
                        tail = data[cut:]
                        counts[i] += data.count(b'{"type":"ADDED"', 0, cut)
                        if counts[i] >= expect:
                            return time.perf_counter()
                return None
            ends = await asyncio.gather(*(one(i) for i in range(n)))
            print(json.dumps({"end": max(e for e in ends if e), "complete": sum(1 for c in counts if c == expect)}),
                  flush=True)

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])))
''')


def pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{i:05d}", "namespace": "bench", "labels": {"app": "bench", "i": str(i % 10)}},
            "spec": {"nodeName": "node-0", "containers": [{"name": "main", "image": "registry.example/app:1",
                                                          "resources": {"requests": {"cpu": "10m", "memory": "8Mi"}}}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                       "podIP": "10.0.0.1", "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                                                                  "image": "registry.example/app:1", "imageID": "",
                                                                  "state": {"running": {}}}]}}


def new_store(path: Path) -> ObjectStore:
    return ObjectStore(path, admitted_kinds(), RealClock())


def create_pods(store: ObjectStore, start: int, count: int, batch: int = 100) -> None:
    for s in range(start, start + count, batch):
        with store.transaction() as tx:
            for i in range(s, min(s + batch, start + count)):
                tx.create(pod(i))


def floor_list(store: ObjectStore, repeats: int) -> float:
    best = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        items = store.scan("Pod")
        orjson.loads(orjson.dumps({"kind": "PodList", "apiVersion": "v1", "items": items}))
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    assert best is not None
    return best


async def inprocess_watch(store: ObjectStore, watchers: int, pods: int) -> float:
    watches = [store.watch({"Pod"}) for _ in range(watchers)]

    async def consume(w: Any) -> None:
        n = 0
        async for _ev in w:
            n += 1
            if n == pods:
                return

    tasks = [asyncio.create_task(consume(w)) for w in watches]
    t0 = time.perf_counter()
    start = store.count("Pod")
    for s in range(start, start + pods, 100):
        create_pods(store, s, min(100, start + pods - s))
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    dt = time.perf_counter() - t0
    for w in watches:
        w.close()
    return watchers * pods / dt


async def run(args: argparse.Namespace) -> str:
    tmp = Path(tempfile.mkdtemp(prefix="na-bench-api-"))
    try:
        store = new_store(tmp / "objects.db")
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
        create_pods(store, 0, args.pods)
        server = APIServer(store, RealClock(), APIServerOptions(bind_address="127.0.0.1:0",
                                                                credentials_dir=tmp / "creds",
                                                                kubeconfig=tmp / "kubeconfig"))
        await server.start()
        assert server.credentials is not None
        creds = server.credentials
        client = [sys.executable, "-c", CLIENT]

        floor = floor_list(store, 5)
        proc = await asyncio.create_subprocess_exec(*client, "list", server.url, creds.token, str(creds.ca_path),
                                                    "5", "0", "0", stdout=subprocess.PIPE)
        out, _ = await proc.communicate()
        listed = json.loads(out)
        assert listed["items"] == args.pods, listed
        list_ratio = floor / listed["seconds"]
        print(f"list: {args.pods} pods floor {floor * 1000:.1f} ms, https {listed['seconds'] * 1000:.1f} ms, "
              f"ratio {list_ratio:.2f}")

        kubectl = shutil.which("kubectl")
        if kubectl:
            env = {**os.environ, "KUBECTL_KUBERC": "false"}
            t0 = time.perf_counter()
            done = await asyncio.create_subprocess_exec(kubectl, "--kubeconfig", str(tmp / "kubeconfig"), "get", "pods",
                                                        "-A", stdout=subprocess.PIPE, env=env)
            text, _ = await done.communicate()
            wall = time.perf_counter() - t0
            print(f"kubectl get pods -A: {len(text.splitlines()) - 1} rows in {wall:.2f} s")
        # watch: REST
        rv = store.resource_version
        proc = await asyncio.create_subprocess_exec(*client, "watch", server.url, creds.token, str(creds.ca_path),
                                                    str(args.watchers), str(args.pods), str(rv),
                                                    stdout=subprocess.PIPE)
        assert proc.stdout is not None
        json.loads(await proc.stdout.readline())  # every watcher connected
        await asyncio.sleep(0.2)
        t0 = time.perf_counter()
        for s in range(args.pods, 2 * args.pods, 100):
            create_pods(store, s, 100)
            await asyncio.sleep(0)
        line = await proc.stdout.readline()
        await proc.wait()
        result = json.loads(line)
        # the client's clock is the same monotonic clock (CLOCK_MONOTONIC) on Linux
        rest_rate = args.watchers * args.pods / (result["end"] - t0)
        inproc_rate = await inprocess_watch(store, args.watchers, args.pods)
        watch_ratio = rest_rate / inproc_rate
        print(f"watch: {args.watchers} watchers x {args.pods} events; REST {rest_rate:,.0f} ev/s "
              f"(complete {result['complete']}/{args.watchers}), in process {inproc_rate:,.0f} ev/s, "
              f"ratio {watch_ratio:.2f}")

        await server.stop()
        store.close()
        return f"list_ratio={list_ratio:.2f} watch_ratio={watch_ratio:.2f}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--watchers", type=int, default=100)
    args = parser.parse_args()
    gcsettings.apply()
    print(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
