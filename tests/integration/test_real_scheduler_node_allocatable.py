"""DRANodeAllocatableResources (KEP-5517): the embedded scheduler decides as the real v1.37.2
kube-scheduler does. The same objects go to two nodeagent daemons with the gate on: one with its
embedded scheduler, one with it off and the fixture binary's kube-scheduler (`--feature-gates=
DRANodeAllocatableResources=true`) on its kubeconfig. Each pod is created once the one before it
is decided; the test compares which pods each binds where (and which it leaves Unschedulable) and
the pod.status.nodeAllocatableResourceClaimStatuses each writes (claim names, generated per run,
replaced by the pod's claim name). The slice of the virtual node's driver carries the mappings:
per device 500m cpu once per pod and 500m per referencing container (overhead), and 4Gi of memory
per device (mapping), so a standalone claim of that driver serves one pod only (its device maps
memory directly), and on the 4-cpu node a 0-cpu pod with one device and a 1-cpu pod with one
device fit (1 + 2 cpu), a second 1-cpu pod does not, and a pod whose pod-level cpu request does
not cover its containers' requests plus its claim's overheads is refused for that.

Opt-in with the kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1: the same cached fixture binary),
skipped with its reason otherwise.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.integration.test_real_scheduler import real_component, scheduler_config

pytestmark = [pytest.mark.integration, pytest.mark.kube_apiserver]

DRIVER = "gpu.example.com"
NODE = "vn-na"
KUBELET = {"featureGates": {"DRANodeAllocatableResources": True}}


def _agent(embedded: bool) -> dict[str, Any]:
    return {"controlPlane": {"scheduler": {"enabled": embedded}},
            "virtualNodes": [{"name": NODE, "capacity": {"cpu": "4", "memory": "16Gi", "pods": "20"}}]}


def _device(i: int) -> dict[str, Any]:
    return {"name": f"gpu-{i}", "nodeAllocatableResources": {
        "cpu": {"overhead": {"perPod": "500m", "perContainer": "500m"}},
        "memory": {"mapping": {"deviceMultiplier": "4Gi"}}}}


SETUP: list[dict[str, Any]] = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
     "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{NODE}-gpu"},
     "spec": {"driver": DRIVER, "nodeName": NODE, "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
              "devices": [_device(i) for i in range(4)]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
     "metadata": {"name": "gpu", "namespace": "default"},
     "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
     "metadata": {"name": "shared", "namespace": "default"},
     "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}},
]


def _pod(name: str, claim: dict[str, str], cpu: str = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"resourceClaims": [{"name": "gpu", **claim}],
                     "containers": [{"name": "c", "image": "pause",
                                     "resources": {"requests": {"cpu": cpu}, "claims": [{"name": "gpu"}]}}]}}


PODS = [
    _pod("s0", {"resourceClaimName": "shared"}, cpu="0"),  # 1 cpu of overhead
    _pod("s1", {"resourceClaimName": "shared"}, cpu="0"),  # the claim maps memory: it serves s0 only
    _pod("t0", {"resourceClaimTemplateName": "gpu"}),  # 1 + 1 cpu: 3 of 4 taken
    _pod("t1", {"resourceClaimTemplateName": "gpu"}),  # 2 more cpu do not fit: Insufficient cpu
    # a pod-level request of 1 cpu fits the node's last cpu, but does not cover 500m + 1 cpu of the claim
    {**(pl := _pod("pl", {"resourceClaimTemplateName": "gpu"}, cpu="500m")),
     "spec": {**pl["spec"], "resources": {"requests": {"cpu": "1"}}}},
]


def _decided(d: Daemon, name: str) -> Callable[[], dict[str, Any] | None]:
    def check() -> dict[str, Any] | None:
        out: dict[str, Any] = d.api_get(f"/api/v1/namespaces/default/pods/{name}")
        conds = {c["type"]: c for c in out.get("status", {}).get("conditions") or []}
        scheduled = conds.get("PodScheduled", {})
        if out["spec"].get("nodeName") or scheduled.get("reason") == "Unschedulable":
            return out
        return None
    return check


def _outcome(pod: dict[str, Any]) -> tuple[str, Any, str]:
    """(node or "Unschedulable", statuses with the claim named by the pod's claim name, the
    PodScheduled message)."""
    names = {s["resourceClaimName"]: s["name"] for s in pod["status"].get("resourceClaimStatuses") or ()}
    names.update({c["resourceClaimName"]: c["name"] for c in pod["spec"]["resourceClaims"]
                  if c.get("resourceClaimName")})
    statuses = [{**s, "resourceClaimName": names.get(s["resourceClaimName"], "?")}
                for s in pod["status"].get("nodeAllocatableResourceClaimStatuses") or ()]
    message = next((c.get("message") or "" for c in pod["status"].get("conditions") or ()
                    if c["type"] == "PodScheduled"), "")
    return pod["spec"].get("nodeName") or "Unschedulable", statuses, message


def _run(d: Daemon, pods: list[dict[str, Any]], tail: Callable[[], str]) -> dict[str, tuple[str, Any, str]]:
    out = {}
    for p in pods:
        d.kubectl("apply", "-f", "-", input=yaml.safe_dump(p))
        try:
            decided = wait_for(_decided(d, p["metadata"]["name"]), timeout=60, what=f"pod {p['metadata']['name']}")
        except AssertionError:
            raise AssertionError(f"pod {p['metadata']['name']} undecided:\n{tail()}") from None
        out[p["metadata"]["name"]] = _outcome(decided)
    return out


@contextlib.contextmanager
def _daemon(embedded: bool) -> Iterator[tuple[Daemon, Path]]:
    base = Path(tempfile.mkdtemp(prefix="na-nar-", dir="/tmp"))
    try:
        with running_daemon(base, kubelet=KUBELET, agent=_agent(embedded)) as d:
            wait_for(lambda: any(n["metadata"]["name"] == NODE for n in d.api_get("/api/v1/nodes")["items"]),
                     what="the virtual node")
            d.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(SETUP))
            yield d, base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def outcomes(kube_apiserver_binary: Path) -> tuple[dict[str, tuple[str, Any, str]], dict[str, tuple[str, Any, str]]]:
    with _daemon(True) as (d, base):
        ours = _run(d, PODS, lambda: (base / "daemon.log").read_text()[-4000:])
    with _daemon(False) as (d, base):
        config = base / "kube-scheduler.yaml"
        config.write_text(yaml.safe_dump(scheduler_config(d.kubeconfig)))
        with real_component(kube_apiserver_binary, base, "kube-scheduler",
                            [f"--config={config}", "--feature-gates=DRANodeAllocatableResources=true"],
                            "/readyz") as sched:
            theirs = _run(d, PODS, sched.tail)
    return ours, theirs


def test_the_real_scheduler_binds_and_refuses_the_same_pods(
        outcomes: tuple[dict[str, tuple[str, Any, str]], dict[str, tuple[str, Any, str]]]) -> None:
    ours, theirs = outcomes
    assert {k: v[0] for k, v in ours.items()} == {k: v[0] for k, v in theirs.items()}
    assert [ours[p][0] for p in ("s0", "s1", "t0", "t1", "pl")] == [NODE, "Unschedulable", NODE, "Unschedulable",
                                                                   "Unschedulable"]
    # the reasons, in each scheduler's own message format
    for outcome in (ours, theirs):
        assert "node allocatable resource claim shared has a mapped device and cannot be shared across pods" \
            in outcome["s1"][2]
        assert "Insufficient cpu" in outcome["t1"][2]
        assert "pod level request for cpu is insufficient to cover the aggregated container and " \
            "node-allocatable DRA requests" in outcome["pl"][2]


def test_the_statuses_are_written_alike(
        outcomes: tuple[dict[str, tuple[str, Any, str]], dict[str, tuple[str, Any, str]]]) -> None:
    ours, theirs = outcomes
    assert {k: v[1] for k, v in ours.items()} == {k: v[1] for k, v in theirs.items()}
    assert ours["t0"][1] == [{"resourceClaimName": "gpu", "containers": ["c"],
                              "mapping": [{"name": "memory", "quantity": "4Gi"}],
                              "overhead": [{"name": "cpu", "perPod": "500m", "perContainer": "500m"}]}]
