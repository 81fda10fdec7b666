"""Pod status writes an API server refused (422, or too large for etcd): retried with backoff, reported once.

The first run against a real kube-apiserver saw a node patch a refused status about 14 times per
pod per second, since its status pass runs every 50 ms and the same status is refused again.
This keeps, per pod uid, when a refused write may be tried again (the project's Backoff on the
injected clock: 1 s doubling to the kubelet's maxDurationBeforeRetry, 2m2s) and whether the
refusal was already reported: a warning and one Warning event, until a write succeeds. It does
no I/O of its own: the caller writes and passes the recorder.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod.model import Pod
from nodeagent.pods.events import EventRecorder, ObjectRef
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

RETRY_INITIAL = 1.0
RETRY_MAX = 122.0
REASON = "FailedPodStatusUpdate"
"""The Warning event of a refused status write (nodeagent's own: the kubelet only logs it)."""


class StatusRefusals:
    """Per pod: may its status be written now, and was its refusal reported."""

    def __init__(self, clock: Clock, recorder: EventRecorder, api: str) -> None:
        self._clock = clock
        self._recorder = recorder
        self._api = api  # the API's description, for the log
        self._backoff = Backoff(initial=RETRY_INITIAL, cap=RETRY_MAX, clock=clock)
        self._reported: set[str] = set()

    def ready(self, uid: str) -> bool:
        return self._backoff.ready(uid)

    def due(self) -> bool:
        """Whether a refused pod status is due to be tried again."""
        pending = self._backoff.pending()
        return bool(pending) and min(pending.values()) <= self._clock.monotonic()

    def refused(self, pod: Pod, err: NodeAgentError) -> None:
        """Back off the pod's next try; report the first refusal (warning and Warning event)."""
        delay = self._backoff.failed(pod.uid)
        if pod.uid in self._reported:
            logger.debug("pod status refused again pod=%s retry_in=%ss", pod.key, delay)
            return
        self._reported.add(pod.uid)
        logger.warning("pod status refused by the API server pod=%s uid=%s api=%s retry_in=%ss err=%s",
                       pod.key, pod.uid, self._api, delay, err)
        self._recorder.warning(ObjectRef("Pod", pod.name, pod.namespace, pod.uid), REASON,
                               f"Failed to update the pod status: {err}")

    def written(self, pod: Pod) -> None:
        """The pod's status is what the API has: nothing left to retry."""
        self._backoff.succeeded(pod.uid)
        if pod.uid in self._reported:
            self._reported.discard(pod.uid)
            logger.info("pod status written after refusals pod=%s uid=%s", pod.key, pod.uid)

    def forget(self, uid: str) -> None:
        self._backoff.succeeded(uid)
        self._reported.discard(uid)

    def keep_only(self, uids: Iterable[str]) -> None:
        """Drop what is kept for pods the node no longer has."""
        if self._backoff.pending() or self._reported:
            keep = set(uids)
            self._backoff.forget_except({u: None for u in keep})
            self._reported &= keep
