"""Partitionable devices and consumable capacity end to end, through kubectl against the daemon.

A MIG-like profile: one GPU publishes its counters (memory, compute slices) in a slice of their
own and its partitions in another; pods get partitions until the counters run out, and the next
pod stays Pending with the scheduler's reason. Then two claims share one NIC by consumable
capacity (allowMultipleAllocations, a validRange request policy), each result with its shareID
and consumedCapacity. The devices live on a virtual node, so no driver has to prepare them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon, daemon_in_temp_dir, virtual_node_agent, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

NODE = "gpu-node"
MIG = "mig.example.com"
NIC = "nic.example.com"

MIG_OBJECTS = f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: gpu0-counters}}
spec:
  driver: {MIG}
  nodeName: {NODE}
  pool: {{name: {NODE}, generation: 1, resourceSliceCount: 2}}
  sharedCounters:
  - name: gpu0
    counters:
      memory: {{value: 40Gi}}
      slices: {{value: "7"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: gpu0-partitions}}
spec:
  driver: {MIG}
  nodeName: {NODE}
  pool: {{name: {NODE}, generation: 1, resourceSliceCount: 2}}
  devices:
  - name: gpu0-3g-20gb-a
    attributes: {{profile: {{string: 3g.20gb}}}}
    consumesCounters:
    - counterSet: gpu0
      counters: {{memory: {{value: 20Gi}}, slices: {{value: "3"}}}}
  - name: gpu0-3g-20gb-b
    attributes: {{profile: {{string: 3g.20gb}}}}
    consumesCounters:
    - counterSet: gpu0
      counters: {{memory: {{value: 20Gi}}, slices: {{value: "3"}}}}
  - name: gpu0-2g-10gb
    attributes: {{profile: {{string: 2g.10gb}}}}
    consumesCounters:
    - counterSet: gpu0
      counters: {{memory: {{value: 10Gi}}, slices: {{value: "2"}}}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: mig-3g}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{MIG}" && device.attributes["{MIG}"].profile == "3g.20gb"'}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: mig-3g}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {{deviceClassName: mig-3g}}
"""

NIC_OBJECTS = f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: nic0}}
spec:
  driver: {NIC}
  nodeName: {NODE}
  pool: {{name: {NODE}, generation: 1, resourceSliceCount: 1}}
  devices:
  - name: nic0
    allowMultipleAllocations: true
    capacity:
      bandwidth:
        value: 10G
        requestPolicy:
          default: 1G
          validRange: {{min: 1G, step: 1G}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: nic}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{NIC}"'}}
"""


def pod(name: str, claim: str, *, template: bool) -> str:
    source = "resourceClaimTemplateName" if template else "resourceClaimName"
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {NODE}}}
  resourceClaims: [{{name: dev, {source}: {claim}}}]
  containers:
  - name: c
    image: busybox
    resources: {{claims: [{{name: dev}}]}}
"""


def nic_claim(name: str, bandwidth: str) -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}}}
spec:
  devices:
    requests:
    - name: nic
      exactly:
        deviceClassName: nic
        capacity: {{requests: {{bandwidth: {bandwidth}}}}}
"""


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with daemon_in_temp_dir("na-share-", agent=virtual_node_agent(NODE, {"allocationTimeout": "5s"})) as d:
        yield d


def _claim_of(d: Daemon, pod_name: str) -> dict[str, Any] | None:
    obj = d.kubectl_json("get", "pod", pod_name)
    for status in (obj.get("status") or {}).get("resourceClaimStatuses") or ():
        name = status.get("resourceClaimName")
        if name:
            claim: dict[str, Any] = d.kubectl_json("get", "resourceclaim", name)
            if (claim.get("status") or {}).get("allocation"):
                return claim
    return None


def _allocated(d: Daemon, name: str) -> dict[str, Any] | None:
    claim: dict[str, Any] = d.kubectl_json("get", "resourceclaim", name)
    return claim if (claim.get("status") or {}).get("allocation") else None


def _scheduled(d: Daemon, pod_name: str) -> bool:
    return bool(d.kubectl_json("get", "pod", pod_name)["spec"].get("nodeName"))


def test_mig_partitions_until_the_counters_run_out(daemon: Daemon) -> None:
    d = daemon
    d.kubectl("apply", "-f", "-", input=MIG_OBJECTS)
    explained = d.kubectl("explain", "resourceslices.spec.sharedCounters").stdout
    assert "counters" in explained
    for name in ("mig-a", "mig-b"):
        d.kubectl("apply", "-f", "-", input=pod(name, "mig-3g", template=True))
    wait_for(lambda: _scheduled(d, "mig-a") and _scheduled(d, "mig-b"), timeout=30, what="two MIG pods scheduled")
    devices = set()
    for name in ("mig-a", "mig-b"):
        claim = wait_for(lambda name=name: _claim_of(d, name), timeout=15, what=f"{name} claim allocated")
        results = claim["status"]["allocation"]["devices"]["results"]
        assert [(r["driver"], r["pool"]) for r in results] == [(MIG, NODE)]
        devices.add(results[0]["device"])
    assert devices == {"gpu0-3g-20gb-a", "gpu0-3g-20gb-b"}
    # 2 x 3 of 7 slices and 2 x 20Gi of 40Gi memory are taken: the 2g partition no longer fits either
    d.kubectl("apply", "-f", "-", input=pod("mig-c", "mig-3g", template=True))

    def unschedulable() -> str:
        obj = d.kubectl_json("get", "pod", "mig-c")
        for cond in (obj.get("status") or {}).get("conditions") or ():
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return str(cond.get("message") or "")
        return ""

    message = wait_for(unschedulable, timeout=30, what="third MIG pod unschedulable")
    assert "0/" in message and "node" in message, message
    assert not _scheduled(d, "mig-c")
    # deleting one pod frees its partition's counters: the waiting pod gets it
    d.kubectl("delete", "pod", "mig-a", "--wait=false")
    wait_for(lambda: _scheduled(d, "mig-c"), timeout=60, what="third MIG pod scheduled after a release")


def test_two_claims_share_one_device_by_capacity(daemon: Daemon) -> None:
    d = daemon
    d.kubectl("apply", "-f", "-", input=NIC_OBJECTS)
    d.kubectl("apply", "-f", "-", input=nic_claim("nic-a", "3500M") + "---" + nic_claim("nic-b", "6G"))
    d.kubectl("apply", "-f", "-", input=pod("nic-a", "nic-a", template=False) + "---" + pod("nic-b", "nic-b",
                                                                                           template=False))
    wait_for(lambda: _scheduled(d, "nic-a") and _scheduled(d, "nic-b"), timeout=30, what="both NIC pods scheduled")
    shares = {}
    for name in ("nic-a", "nic-b"):
        claim = wait_for(lambda name=name: _allocated(d, name), timeout=15, what=f"{name} allocated")
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert result["device"] == "nic0"
        shares[name] = (result["shareID"], result["consumedCapacity"])
    assert shares["nic-a"][0] != shares["nic-b"][0]
    # 3500M rounds up to the next 1G step; 6G is on a step
    # (v1.37's roundUpRange builds the rounded amount in the step's format, 1G's DecimalSI; up to 1.36 in
    # BinarySI, "3906250Ki" and "5859375Ki")
    assert shares["nic-a"][1] == {"bandwidth": "4G"}
    assert shares["nic-b"][1] == {"bandwidth": "6G"}
    # the device is used up (4G + 6G of 10G): a third claim stays unallocated
    d.kubectl("apply", "-f", "-", input=nic_claim("nic-c", "1G") + "---" + pod("nic-c", "nic-c", template=False))

    def reason() -> str:
        obj = d.kubectl_json("get", "pod", "nic-c")
        for cond in (obj.get("status") or {}).get("conditions") or ():
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return str(cond.get("message") or "")
        return ""

    assert wait_for(reason, timeout=30, what="third NIC pod unschedulable")
    bad = d.kubectl("apply", "-f", "-", input=nic_claim("nic-bad", "1 G"), check=False)
    assert bad.returncode != 0
    assert "spec.devices.requests[0].exactly.capacity.requests[bandwidth]" in bad.stderr, bad.stderr
    # a slice with several errors: the 422 lists every one (upstream's field.ErrorList), in spec order
    bad = d.kubectl("apply", "-f", "-", check=False, input=f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: nic-bad}}
spec:
  driver: {NIC}
  nodeName: {NODE}
  pool: {{generation: 1, resourceSliceCount: 1}}
  devices:
  - name: NIC_0
""")
    assert bad.returncode != 0
    # (kubectl lists the causes of the 422 one per line)
    assert bad.stderr.startswith('The ResourceSlice "nic-bad" is invalid: \n* spec.pool.name: Required value\n'
                                 '* spec.devices[0].name: Invalid value: "NIC_0": a lowercase RFC 1123 label'), \
        bad.stderr
