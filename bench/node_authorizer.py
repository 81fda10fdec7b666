"""Benchmark: the Node authorizer's answer to a node reading one of its pods' secrets (and a secret
of another node's pod), with many pods in the namespace, through the authorizer chain the API
server runs (apiserver/authz) over an in-memory ObjectStore.

Why: without an index the question scans every pod of the namespace (9.3 ms with 2,500 pods); the
store's index of pods by the (kind, namespace, name, node) they reference answers it in one
lookup. Also timed: a pod write (the index is kept at commit), so the cost moved to writes shows.

Prints median/p95 of each in microseconds, for the indexed store and for the same store seen as a
plain reader (scan and peek only: the Node authorizer then scans, as before the index).

Run: python bench/node_authorizer.py [--pods 2500] [--nodes 25] [--rounds 2000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nodeagent.apiserver.authn.user import UserInfo
from nodeagent.apiserver.authz import bootstrap
from nodeagent.apiserver.authz.attributes import request_attributes
from nodeagent.apiserver.authz.chain import Authorizer
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock


def _pod(i: int, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i",
                                                       "env": [{"name": "E", "valueFrom": {"configMapKeyRef": {
                                                           "name": f"cm{i}", "key": "k"}}}]}],
                     "volumes": [{"name": "s", "secret": {"secretName": f"s{i}"}}]}}


class _ScanOnly:
    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    def scan(self, kind: str, namespace: str | None = None) -> list[Any]:
        return self._store.scan(kind, namespace)

    def peek(self, kind: str, namespace: str, name: str) -> Any:
        return self._store.peek(kind, namespace, name)


def _timed(fn: Any, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1e6)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=2500)
    parser.add_argument("--nodes", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    store = ObjectStore.memory(admitted_kinds(), FakeClock())
    for obj in bootstrap.policy():
        store.create(obj)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    authz = Authorizer(store)
    for i in range(args.pods):
        store.create(_pod(i, f"n{i % args.nodes}"))
    scanning = Authorizer(_ScanOnly(store))
    node = UserInfo("system:node:n7", groups=("system:nodes", "system:authenticated"))
    mine = request_attributes(node, "GET", "/api/v1/namespaces/default/secrets/s7", {})
    other = request_attributes(node, "GET", "/api/v1/namespaces/default/secrets/s8", {})
    assert authz.authorize(mine).allowed and not authz.authorize(other).allowed
    counter = iter(range(10**9))

    def write() -> None:
        store.create(_pod(args.pods + next(counter), "n3"))

    assert scanning.authorize(mine).allowed and not scanning.authorize(other).allowed
    few = max(args.rounds // 20, 20)
    rows = [("own pod's secret (allowed)", _timed(lambda: authz.authorize(mine), args.rounds)),
            ("  the same, scanning", _timed(lambda: scanning.authorize(mine), few)),
            ("another node's secret (refused)", _timed(lambda: authz.authorize(other), args.rounds)),
            ("  the same, scanning", _timed(lambda: scanning.authorize(other), few)),
            ("pod create (store + index)", _timed(write, min(args.rounds, 500)))]
    print(f"{args.pods} pods in one namespace on {args.nodes} nodes")
    for name, times in rows:
        times.sort()
        print(f"{name:34s} median {statistics.median(times):9.1f} us   p95 {times[int(len(times) * 0.95)]:9.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
