"""The checkpoint of a policy-driven resource manager: one state bucket holding the policy's name
and one record per pod ("pod:<uid>").

The cpu and memory managers keep their assignments alike, as the kubelet's state_checkpoint.go
does for both: state written under another policy (or by a policy that keeps none) is dropped
whole at start, with a warning when it held pods; records that no longer fit are dropped one by
one. One place so both managers restore the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

from nodeagent.state.db import StateDB

logger = logging.getLogger(__name__)

POLICY_KEY = "policy"
POD_PREFIX = "pod:"


def pod_key(uid: str) -> str:
    return POD_PREFIX + uid


class PolicyBucket:
    """A manager's bucket; `what` names the manager and `items` what it keeps, in log lines."""

    def __init__(self, db: StateDB, bucket: str, policy: str, *, what: str, items: str) -> None:
        self.db, self.bucket, self.policy = db, bucket, policy
        self._what, self._items = what, items

    def stored_pods(self, keeps_state: bool) -> dict[str, Any]:
        """The stored record of each pod uid; none (and the bucket reset to this policy) when the
        state was written under another policy or this policy keeps no state."""
        stored = dict(self.db.items(self.bucket))
        stored_policy = (stored.get(POLICY_KEY) or {}).get("name")
        pods = {k[len(POD_PREFIX):]: v for k, v in stored.items() if k.startswith(POD_PREFIX)}
        if stored_policy not in (None, self.policy) or not keeps_state:
            if pods:
                logger.warning("%s policy changed, dropping %s old=%s new=%s pods=%d",
                               self._what, self._items, stored_policy, self.policy, len(pods))
            with self.db.transaction() as txn:
                txn.delete_bucket(self.bucket)
                txn.put(self.bucket, POLICY_KEY, {"name": self.policy})
            return {}
        if stored_policy is None:  # a new database: the policy once, not with every allocation
            self.db.put(self.bucket, POLICY_KEY, {"name": self.policy})
        return pods

    def drop(self, uids: Collection[str]) -> None:
        """Forget the records that did not restore."""
        if not uids:
            return
        logger.warning("%s dropped invalid %s pods=%s", self._what, self._items, ",".join(uids))
        with self.db.transaction() as txn:
            for uid in uids:
                txn.delete(self.bucket, pod_key(uid))
