"""Micro-benchmark: the pure structured allocator as a scheduler would call it, no store, no asyncio.

Shaped like scheduler_perf's SchedulingWithResourceClaimTemplate: N nodes with 10 GPUs each
(node-local ResourceSlices), pods with one claim asking for one GPU of class `gpu` (a CEL
selector on driver and memory capacity). For every pod, `allocate` runs on every node (or
until `--score-nodes` feasible nodes were found, as the scheduler's percentageOfNodesToScore
does), the lowest score wins and its devices join the allocated set. Variant `prio` uses
firstAvailable whose first alternative names a class with no devices. Device objects are
built once and kept in one Inventory per node (as the scheduler should keep them while a node's
slices do not change), so selector matches are memoized and a call does little more than search.

Prints pods/s and time per pod for each node count and variant.
Run: python bench/allocator.py [--nodes 100,500,2000] [--pods 1000] [--score-nodes 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nodeagent.controlplane.allocator import (
    Claim,
    Device,
    DeviceClass,
    DeviceId,
    Inventory,
    Node,
    Request,
    ResourceSlice,
    SubRequest,
    allocate,
)

D = "gpu.example.com"
CLASSES = {
    "gpu": DeviceClass("gpu", (f'device.driver == "{D}"',
                               f'device.capacity["{D}"].memory.compareTo(quantity("40Gi")) >= 0')),
    "none": DeviceClass("none", ('device.driver == "nothing.example.com"',)),
}
PLAIN = Request("gpu", "gpu")
PRIO = Request("gpu", first_available=(SubRequest("none", "none"), SubRequest("gpu", "gpu")))


def build(n: int) -> tuple[list[Node], dict[str, Inventory]]:
    nodes = [Node(f"node-{i}", {"kubernetes.io/hostname": f"node-{i}"}) for i in range(n)]
    slices = {
        node.name: Inventory(node, [ResourceSlice(f"{node.name}-gpu", D, node.name, tuple(
            Device(D, node.name, f"gpu-{j}", {"model": "a100", "index": j}, {"memory": 80 * 2**30})
            for j in range(10)), node_name=node.name)])
        for node in nodes
    }
    return nodes, slices


def run(n: int, pods: int, request: Request, score_nodes: int) -> tuple[float, int]:
    nodes, slices = build(n)
    allocated: set[DeviceId] = set()
    calls = 0
    start = time.perf_counter()
    for p in range(pods):
        claim = Claim("default", f"pod-{p}-gpu", f"uid-{p}", (request,))
        best = None
        feasible = 0
        for node in nodes:
            calls += 1
            out = allocate([claim], node, slices[node.name], CLASSES, allocated, explain_failure=False)
            if out.results is None:
                continue
            feasible += 1
            if best is None or out.score < best[0]:
                best = (out.score, out.results)
            if score_nodes and feasible >= score_nodes:
                break
        assert best is not None, "cluster full"
        allocated.update(d.id for r in best[1] for d in r.devices)
    return time.perf_counter() - start, calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", default="100,500,2000")
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--score-nodes", type=int, default=0, help="stop after this many feasible nodes (0: all)")
    args = parser.parse_args()
    for n in (int(x) for x in args.nodes.split(",")):
        pods = min(args.pods, n * 10)
        for label, request in (("plain", PLAIN), ("prio", PRIO)):
            elapsed, calls = run(n, pods, request, args.score_nodes)
            print(f"nodes={n:5d} variant={label:5s} pods={pods} pods/s={pods / elapsed:8.1f} "
                  f"ms/pod={elapsed / pods * 1000:7.3f} us/call={elapsed / calls * 1e6:6.1f}")


if __name__ == "__main__":
    main()
