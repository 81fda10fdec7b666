"""Classic DRA across a small simulated cluster: YAML config, SQLite-backed store, the runner's
controller task, and a fake scheduler that steps every pending pod after each change.

Many pods compete for pools that only some nodes reach; checked at the end: every pod placed
on a node its devices are reachable from, no device allocated twice, every claim reserved
for its pod, and after the pods end and the claims are deleted, every claim is deallocated
and gone (finalizers) and no PodSchedulingContext is left.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from nodeagent.config import parse_documents
from nodeagent.controlplane.classic import ClassicRunner
from nodeagent.controlplane.classic.common import CLAIM, POD, PSC
from nodeagent.objects.common import node_selector_matches
from nodeagent.util.clock import FakeClock
from tests.unit.controlplane.test_classic_flow import add_claim, add_class, add_node, add_pod, make_store, settle

pytestmark = pytest.mark.integration

CONFIG = """
kind: KubeletConfiguration
---
kind: NodeAgentConfiguration
nodeName: node-1
classicDRA: true
classicControllers:
- controllerName: cxl.example.com
  pools:
  - name: west
    nodes: {nodeSelectorTerms: [{matchExpressions: [{key: side, operator: In, values: [west]}]}]}
    devices: [{name: w0}, {name: w1}, {name: w2}, {name: w3}]
  - name: east
    nodes: [node-3, node-4]
    devices: [{name: e0}, {name: e1}, {name: e2}]
"""

NODES = ["node-1", "node-2", "node-3", "node-4"]
PODS = 9  # 4 west + 3 east devices: two pods must wait


async def test_pods_compete_for_pools(tmp_path: Path) -> None:
    cfg = parse_documents(list(yaml.safe_load_all(CONFIG)))
    store = make_store(str(tmp_path / "objects.db"), FakeClock())
    for i, n in enumerate(NODES):
        add_node(store, n, {"side": "west" if i < 2 else "east"})
    add_class(store)
    for i in range(PODS):
        add_claim(store, f"c{i}")
        add_pod(store, f"p{i}", [f"c{i}"])
    runner = ClassicRunner(cfg, store, store.clock, CollectorRegistry())
    await runner.start()
    try:
        placed: dict[str, str] = {}
        waiting: dict[str, str] = {}
        for _ in range(60):
            for i in range(PODS):
                name = f"p{i}"
                if name in placed:
                    continue
                pod = store.get(POD, "default", name)
                decision = runner.scheduling.step(pod, [store.get(CLAIM, "default", f"c{i}")], NODES)
                if decision.ready:
                    assert decision.node is not None
                    placed[name] = decision.node
                    runner.scheduling.forget(pod)
                else:
                    waiting[name] = decision.message
            await settle(runner)
            if len(placed) == 7 and runner.in_flight() == 2:
                break
        assert len(placed) == 7, waiting
        used: set[str] = set()
        for name, node in placed.items():
            claim = store.get(CLAIM, "default", "c" + name[1:])
            alloc = claim["status"]["allocation"]
            (result,) = alloc["devices"]["results"]
            assert result["device"] not in used
            used.add(result["device"])
            labels = store.get("Node", "", node)["metadata"]["labels"]
            assert node_selector_matches(alloc["nodeSelector"], node, labels)
            assert claim["status"]["reservedFor"][0]["name"] == name
        for name in set(f"p{i}" for i in range(PODS)) - set(placed):
            assert "no potential node is suitable" in waiting[name]

        # Pods end: claims unreserved (the claim controller's job) and deleted; then the two
        # waiting pods get the freed devices.
        for name in sorted(placed)[:2]:
            claim = store.get(CLAIM, "default", "c" + name[1:])
            claim["status"].pop("reservedFor")
            store.update_status(claim)
            store.delete(CLAIM, "default", claim["metadata"]["name"])
            store.delete(POD, "default", name)
        await settle(runner)
        for name in sorted(placed)[:2]:
            assert store.try_get(CLAIM, "default", "c" + name[1:]) is None
        for _ in range(20):
            pending = [f"p{i}" for i in range(PODS) if f"p{i}" not in placed]
            for name in pending:
                pod = store.get(POD, "default", name)
                decision = runner.scheduling.step(pod, [store.get(CLAIM, "default", "c" + name[1:])], NODES)
                if decision.ready:
                    placed[name] = str(decision.node)
                    runner.scheduling.forget(pod)
            if not [n for n in pending if n not in placed]:
                break
            await settle(runner)
        assert len(placed) == PODS
        assert store.list(PSC) == []
        await asyncio.sleep(0)
    finally:
        await runner.stop()
        store.close()
