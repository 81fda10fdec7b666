"""The node's share of KEP-5004 (which container gets which request of the special claim) and of
KEP-5945 (which node operations a claim's driver skips, kept across restarts)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.dra import extended
from nodeagent.dra.model import ClaimEntry, PodRecord
from nodeagent.dra.state import claim_from_record, claim_to_record
from nodeagent.objects.pod.model import ClaimRef, Container, Pod, ResourceHealth, ResourceStatus
from nodeagent.pods.admission import insufficient_resources

GPU = "example.com/gpu"
STATUS = {"extendedResourceClaimStatus": {"resourceClaimName": "p-extended-resources-abcde", "requestMappings": [
    {"containerName": "main", "resourceName": GPU, "requestName": "container-0-request-0"},
    {"containerName": "other", "resourceName": GPU, "requestName": "container-1-request-0"},
]}}


def pod(status: dict[str, Any] | None = None) -> Pod:
    return Pod("u1", "p", containers=(Container("main", requests={GPU: 1}), Container("other"),
                                      Container("side", requests={GPU: 0})),
               manifest={"status": status or {}})


def test_containers_get_only_their_requests() -> None:
    special = extended.extended_claim(pod(STATUS))
    assert special is not None and special.claim_name == "p-extended-resources-abcde"
    # "other" is mapped but does not request the resource: nothing for it (as GetResources)
    refs = extended.container_refs(pod(STATUS), special)
    assert refs == {"main": (ClaimRef(extended.EXTENDED_POD_CLAIM, "container-0-request-0"),)}
    record = extended.with_refs(PodRecord("u1", "default", "p", True, (), (("side", (ClaimRef("c"),)),)), refs)
    assert dict(record.containers)["main"] == refs["main"]
    assert extended.extended_claim(pod()) is None


def test_special_claim_has_no_health_entries() -> None:
    statuses = {"main": (ResourceStatus(f"claim:{extended.EXTENDED_POD_CLAIM}/container-0-request-0",
                                        (ResourceHealth("d/p/x", "Healthy"),)),)}
    assert extended.visible(statuses) == {}


def test_admission_leaves_dra_backed_requests_out() -> None:
    alloc = {"cpu": 4000, "memory": 1 << 30, "pods": 10, GPU: 0}
    assert [m.reason for m in insufficient_resources(pod(), alloc, [])] == [f"OutOf{GPU}"]
    assert insufficient_resources(pod(STATUS), alloc, []) == []


def result(driver: str, skip: list[str]) -> dict[str, Any]:
    return {"request": "r", "driver": driver, "pool": "p", "device": "d", "skipNodeOperations": skip}


@pytest.mark.parametrize(("results", "skipped"), [
    ([result("a", ["*"])], {"a": {extended.SKIP_PREPARE, extended.SKIP_UNPREPARE}}),
    ([result("a", ["*"]), result("a", ["NodeUnprepareResources"])], {"a": {extended.SKIP_UNPREPARE}}),
    ([result("a", ["*"]), result("a", [])], {}),  # one device needs both: nothing skipped
    ([result("a", ["*"]), result("b", [])], {"a": {extended.SKIP_PREPARE, extended.SKIP_UNPREPARE}}),
    ([result("a", ["Future"])], {}),  # unknown values are ignored
])
def test_skipped_operations_per_driver(results: list[dict[str, Any]], skipped: dict[str, set[str]]) -> None:
    doc = {"status": {"allocation": {"devices": {"results": results}}}}
    assert extended.skipped_operations(doc) == skipped


def test_skipped_operations_are_checkpointed_and_old_records_skip_nothing() -> None:
    entry = ClaimEntry("u", "ns", "c", (), ("a",), skipped={"a": frozenset({extended.SKIP_UNPREPARE})})
    record = claim_to_record(entry)
    assert claim_from_record(record) == entry
    del record["skipped"]
    assert claim_from_record(record).skipped == {}
