"""The claim info cache: prepared claims and pod records, written through to the state database.

The kubelet's pkg/kubelet/cm/dra/claiminfo.go (claimInfoCache: the claims, one lock, and
syncToCheckpoint after each change). The entries themselves and their documents are the pure
ClaimCache (state.py); this adds what the manager's roles share around it: the asyncio lock that
guards it (never held across a driver call), `flush` (every change committed in one StateDB
transaction before a prepare is answered), loading and reloading from the state database, and an
index from each device to the pods whose records hold it, so a health report finds its pods
without a scan.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping

from nodeagent.dra.model import ClaimEntry, DeviceKey, PodRecord
from nodeagent.dra.state import CLAIMS_BUCKET, PODS_BUCKET, ClaimCache
from nodeagent.state.db import StateDB

logger = logging.getLogger(__name__)


class ClaimInfoCache:
    """Claims (uid -> ClaimEntry) and pod records (uid -> PodRecord); change them with `lock` held."""

    def __init__(self, db: StateDB) -> None:
        self._db = db
        self.lock = asyncio.Lock()
        """Guards the cache; never held across a driver call (per-claim order is ClaimLocks')."""
        self._cache, self._index = self._load()
        logger.info("dra claim cache loaded claims=%d pods=%d", len(self._cache.claims), len(self._cache.pods))

    def reload(self) -> None:
        """Read the cache back from the state database, as a new process would; `lock` held."""
        self.flush()
        self._cache, self._index = self._load()

    def _load(self) -> tuple[ClaimCache, dict[DeviceKey, set[str]]]:
        cache, problems = ClaimCache.load(self._db.items(CLAIMS_BUCKET), self._db.items(PODS_BUCKET))
        for problem in problems:
            logger.error("dra record unreadable, skipped record=%s", problem)
        index: dict[DeviceKey, set[str]] = {}
        for record in cache.pods.values():
            for key in record.device_keys():
                index.setdefault(key, set()).add(record.uid)
        return cache, index

    # --- reads --------------------------------------------------------------------------------

    @property
    def claims(self) -> Mapping[str, ClaimEntry]:
        return self._cache.claims

    @property
    def pods(self) -> Mapping[str, PodRecord]:
        return self._cache.pods

    @property
    def generation(self) -> int:
        """Changes whenever prepared claims change (podresources Versioned)."""
        return self._cache.generation

    def claims_of_pod(self, pod_uid: str) -> list[ClaimEntry]:
        return self._cache.claims_of_pod(pod_uid)

    def unused_claims(self) -> list[str]:
        """The claims no pod uses any more (to unprepare)."""
        return [u for u, e in self._cache.claims.items() if not e.pods]

    def pods_using(self, keys: Iterable[DeviceKey]) -> set[str]:
        """The uids of the pods whose records hold one of the devices."""
        uids: set[str] = set()
        for key in keys:
            uids |= self._index.get(key, set())
        return uids

    def claims_in_use(self) -> tuple[dict[str, int], int]:
        """({driver: prepared claims using it}, total) for dra_resource_claims_in_use, as the
        kubelet's claimsInUse: a claim counts once prepared by all its drivers and until every
        driver unprepared it (pods or not); only drivers with such claims are listed."""
        per_driver: dict[str, int] = {}
        total = 0
        for entry in self._cache.claims.values():
            if not entry.prepared or not all(d in entry.prepared or d in entry.released for d in entry.drivers):
                continue
            total += 1
            for driver in entry.drivers:
                per_driver[driver] = per_driver.get(driver, 0) + 1
        return per_driver, total

    # --- changes (lock held) ------------------------------------------------------------------

    def set_claim(self, entry: ClaimEntry) -> None:
        self._cache.set_claim(entry)

    def drop_claim(self, uid: str) -> None:
        self._cache.drop_claim(uid)

    def set_pod(self, record: PodRecord) -> None:
        """Keep the pod's record (replacing the one it had) and index its devices."""
        old = self._cache.pods.get(record.uid)
        if old is not None:
            self._unindex(old)
        self._cache.set_pod(record)
        for key in record.device_keys():
            self._index.setdefault(key, set()).add(record.uid)

    def drop_pod(self, uid: str) -> None:
        record = self._cache.pods.get(uid)
        if record is not None:
            self._unindex(record)
        self._cache.drop_pod(uid)

    def flush(self) -> None:
        """Commit every change since the last flush in one state database transaction."""
        if self._cache.dirty:
            with self._db.transaction() as txn:
                self._cache.flush(txn)

    def _unindex(self, record: PodRecord) -> None:
        for key in record.device_keys():
            pods = self._index.get(key)
            if pods is not None:
                pods.discard(record.uid)
                if not pods:
                    del self._index[key]
