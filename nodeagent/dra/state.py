"""The DRA claim cache and the per-pod records, and their JSON documents for the StateDB.

Two buckets: `dra_claims` (claim uid -> namespace, name, allocation results, drivers, prepared
devices per driver, pods using it) and `dra_pods` (pod uid -> the claims and devices the pod
got). The cache is kept in memory and written through: changes are marked dirty and `flush`
hands them to a writer (a StateDB transaction) so the manager commits them in one go before it
answers. Pure: no I/O here; a record of an unknown version is refused, never misread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from nodeagent.dra.model import AllocationResult, ClaimEntry, PodClaim, PodRecord
from nodeagent.dra.ports import PreparedDevice
from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod.model import ClaimRef

CLAIMS_BUCKET = "dra_claims"
PODS_BUCKET = "dra_pods"
VERSION = 1


class Writer(Protocol):
    def put(self, bucket: str, key: str, value: Any) -> None: ...

    def delete(self, bucket: str, key: str) -> None: ...


def _results_to(results: Iterable[AllocationResult]) -> list[list[str]]:
    return [[r.request, r.driver, r.pool, r.device] for r in results]


def _results_from(d: list[list[str]]) -> tuple[AllocationResult, ...]:
    return tuple(AllocationResult(*r) for r in d)


def _devices_to(devices: Mapping[str, tuple[PreparedDevice, ...]]) -> dict[str, list[dict[str, Any]]]:
    return {
        driver: [
            {"requests": list(d.request_names), "pool": d.pool_name, "device": d.device_name,
             "cdi": list(d.cdi_device_ids), "shareID": d.share_id}
            for d in devs
        ]
        for driver, devs in devices.items()
    }


def _devices_from(d: dict[str, list[dict[str, Any]]]) -> dict[str, tuple[PreparedDevice, ...]]:
    return {
        driver: tuple(PreparedDevice(tuple(x["requests"]), x["pool"], x["device"], tuple(x["cdi"]), x["shareID"])
                      for x in devs)
        for driver, devs in d.items()
    }


def claim_to_record(e: ClaimEntry) -> dict[str, Any]:
    return {
        "version": VERSION,
        "uid": e.uid,
        "namespace": e.namespace,
        "name": e.name,
        "results": _results_to(e.results),
        "drivers": list(e.drivers),
        "prepared": _devices_to(e.prepared),
        "pods": sorted(e.pods),
        "released": sorted(e.released),
        **({"skipped": {d: sorted(ops) for d, ops in sorted(e.skipped.items())}} if e.skipped else {}),
    }


def claim_from_record(d: dict[str, Any]) -> ClaimEntry:
    # "skipped" is absent from records written before optional node operations: nothing skipped
    skipped = {driver: frozenset(ops) for driver, ops in (d.get("skipped") or {}).items()}
    return ClaimEntry(d["uid"], d["namespace"], d["name"], _results_from(d["results"]), tuple(d["drivers"]),
                      _devices_from(d["prepared"]), frozenset(d["pods"]), frozenset(d["released"]), skipped)


def pod_to_record(r: PodRecord) -> dict[str, Any]:
    return {
        "version": VERSION,
        "uid": r.uid,
        "namespace": r.namespace,
        "name": r.name,
        "prepared": r.prepared,
        "claims": [
            {"podClaimName": c.pod_claim_name, "uid": c.uid, "namespace": c.namespace, "name": c.name,
             "results": _results_to(c.results), "devices": _devices_to(c.devices)}
            for c in r.claims
        ],
        "containers": [[name, [[ref.name, ref.request] for ref in refs]] for name, refs in r.containers],
    }


def pod_from_record(d: dict[str, Any]) -> PodRecord:
    claims = tuple(
        PodClaim(c["podClaimName"], c["uid"], c["namespace"], c["name"], _results_from(c["results"]),
                 _devices_from(c["devices"]))
        for c in d["claims"]
    )
    containers = tuple((name, tuple(ClaimRef(n, r) for n, r in refs)) for name, refs in d["containers"])
    return PodRecord(d["uid"], d["namespace"], d["name"], bool(d["prepared"]), claims, containers)


class ClaimCache:
    """Prepared claims and pod records in memory, with the keys changed since the last flush."""

    def __init__(self) -> None:
        self.claims: dict[str, ClaimEntry] = {}
        self.pods: dict[str, PodRecord] = {}
        self._dirty_claims: set[str] = set()
        self._dirty_pods: set[str] = set()
        self.generation = 0  # bumped on every change, for readers that reuse answers (pod-resources)

    @classmethod
    def load(cls, claim_items: Iterable[tuple[str, Any]], pod_items: Iterable[tuple[str, Any]]
             ) -> tuple[ClaimCache, list[str]]:
        """The cache from stored documents, and a note per unreadable record (skipped)."""
        cache = cls()
        problems: list[str] = []
        for key, doc in claim_items:
            try:
                _check(doc, CLAIMS_BUCKET, key)
                cache.claims[key] = claim_from_record(doc)
            except (NodeAgentError, KeyError, TypeError, ValueError) as err:
                problems.append(f"{CLAIMS_BUCKET}/{key}: {err}")
        for key, doc in pod_items:
            try:
                _check(doc, PODS_BUCKET, key)
                cache.pods[key] = pod_from_record(doc)
            except (NodeAgentError, KeyError, TypeError, ValueError) as err:
                problems.append(f"{PODS_BUCKET}/{key}: {err}")
        return cache, problems

    def set_claim(self, entry: ClaimEntry) -> None:
        self.claims[entry.uid] = entry
        self._dirty_claims.add(entry.uid)
        self.generation += 1

    def drop_claim(self, uid: str) -> None:
        self.claims.pop(uid, None)
        self._dirty_claims.add(uid)
        self.generation += 1

    def set_pod(self, record: PodRecord) -> None:
        self.pods[record.uid] = record
        self._dirty_pods.add(record.uid)
        self.generation += 1

    def drop_pod(self, uid: str) -> None:
        self.pods.pop(uid, None)
        self._dirty_pods.add(uid)
        self.generation += 1

    def claims_of_pod(self, pod_uid: str) -> list[ClaimEntry]:
        return [e for e in self.claims.values() if pod_uid in e.pods]

    @property
    def dirty(self) -> bool:
        return bool(self._dirty_claims or self._dirty_pods)

    def flush(self, writer: Writer) -> None:
        """Write every changed claim and pod record (deletes for dropped ones)."""
        for uid in sorted(self._dirty_claims):
            entry = self.claims.get(uid)
            if entry is None:
                writer.delete(CLAIMS_BUCKET, uid)
            else:
                writer.put(CLAIMS_BUCKET, uid, claim_to_record(entry))
        for uid in sorted(self._dirty_pods):
            record = self.pods.get(uid)
            if record is None:
                writer.delete(PODS_BUCKET, uid)
            else:
                writer.put(PODS_BUCKET, uid, pod_to_record(record))
        self._dirty_claims.clear()
        self._dirty_pods.clear()


def _check(doc: Any, bucket: str, key: str) -> None:
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        version = doc.get("version") if isinstance(doc, dict) else None
        raise NodeAgentError(f"{bucket} record {key}: unsupported version {version!r}")
