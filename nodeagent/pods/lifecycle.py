"""A started pod's life on the fake node: going Running, then finishing when its timer fires.

No containers run here, so what moves a running pod on is the nodeagent.dev/finish-after-seconds
annotation, and nodeagent.dev/exit-code decides how it ends. The finish timers run on the
injected clock, so tests drive them with FakeClock. A finishing pod's final status is durable
first (the containers exited), then it gives back what it holds through the release it is given
(the pod's worker, outside the manager's lock), before the timer's task ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from nodeagent.objects.pod.model import ANNOTATION_EXIT_CODE, ANNOTATION_FINISH_AFTER, Pod
from nodeagent.pods import status as st
from nodeagent.pods.events import EventRecorder, ObjectRef
from nodeagent.pods.ports import StartResult
from nodeagent.pods.table import PodEntry, PodTable
from nodeagent.state.batch import WriteBatch
from nodeagent.util.clock import Clock
from nodeagent.util.yielding import TURN, chunked, sized_call

logger = logging.getLogger(__name__)


class PodLifecycle:
    """Moves admitted, started pods to Running and finishes them on their timers."""

    def __init__(
        self,
        *,
        table: PodTable,
        lock: asyncio.Lock,
        clock: Clock,
        recorder: EventRecorder,
        release: Callable[[PodEntry], Awaitable[None]],
        ensure_secret_pulled: bool = True,
    ) -> None:
        """`ensure_secret_pulled`: the KubeletEnsureSecretPulledImages gate (the Pulled event's wording)."""
        self._ensure_secret_pulled = ensure_secret_pulled
        self._table = table
        self._lock = lock  # the pod manager's lock, taken when a timer fires
        self._clock = clock
        self._recorder = recorder
        self._release = release
        self._timers: dict[str, asyncio.Task[None]] = {}

    async def go_running(self, entry: PodEntry, result: StartResult, *, store: bool = False,
                         staged: WriteBatch | None = None) -> None:
        """Make the pod Running with the starters' resource statuses; arm its finish timer.

        `store` indexes a new entry as well (a pod that needed no starters to call), its record
        committed with its admission's `staged` writes; events and the timer follow the commit.
        The status is durable before any event is recorded: the containers' events are recorded in
        chunks (util.yielding), as a pod of 10,000 containers held the event loop for seconds; such a
        pod's status is built and its record committed in worker threads (the caller holds the pod
        manager's lock throughout, so nothing else changes the entry meanwhile).
        """
        pod = entry.pod
        now = self._clock.now()
        status = await sized_call(len(pod.containers) + len(pod.init_containers), st.running_status,
                                  pod, entry.status.qos_class, now, result.container_resource_status)
        if result.pod_resource_status:
            status = st.with_pod_resource_status(status, result.pod_resource_status, replace=False)
        entry.status = status
        delay = _finish_after(pod)
        entry.finish_at = None if delay is None else now + delay
        if store:
            await self._table.store_async(entry, staged)
        else:
            await self._table.persist_async(entry)
        init_count = len(pod.init_containers)
        i = 0
        async for c in chunked(pod.all_containers(), budget=TURN):
            # kuberuntime's startContainer: the image manager's Pulled (no image is pulled here: every
            # image counts as present), then Created and Started, each about the container
            ref = ObjectRef.for_container(pod, c.name, init=i < init_count)
            i += 1
            pulled = pulled_message(c.image, ensure_secret_pulled=self._ensure_secret_pulled)
            self._recorder.normal(ref, "Pulled", pulled)
            self._recorder.normal(ref, "Created", "Container created")
            self._recorder.normal(ref, "Started", "Container started")
        if delay is not None:
            self.start_timer(pod.uid, delay)

    async def containers_failed(self, entry: PodEntry, result: StartResult) -> None:
        """Some containers failed to start (result.failed_containers): the pod waits Pending with them
        (status.start_failed_status), and each gets what kuberuntime's startContainer records before
        and at the failure: the image manager's Pulled, then the Warning (reason "Failed", "Error: ...").
        The caller persists nothing else; it retries the start later.

        Intended difference: a regular container that did start beside a failed one shows running, but
        its Pulled/Created/Started come with the pod's go_running, once every container started (the
        kubelet records them as it starts it); the events are the same once the pod runs."""
        pod = entry.pod
        status = st.start_failed_status(pod, entry.status.qos_class, result.failed_containers, self._clock.now(),
                                        entry.status.start_time, result.container_resource_status)
        entry.status = status
        await self._table.persist_async(entry)  # a huge pod's record off the loop (issue 25)
        init = {c.name for c in pod.init_containers}
        images = {c.name: c.image for c in pod.all_containers()}
        for name, (_, message) in result.failed_containers.items():
            ref = ObjectRef.for_container(pod, name, init=name in init)
            self._recorder.normal(ref, "Pulled", pulled_message(images.get(name, ""),
                                                                ensure_secret_pulled=self._ensure_secret_pulled))
            self._recorder.warning(ref, result.reason, result.event or f"Error: {message}")

    def start_timer(self, uid: str, delay: float) -> None:
        self.cancel_timer(uid)
        self._timers[uid] = asyncio.get_running_loop().create_task(
            self._finish_later(uid, max(delay, 0.0)), name=f"pod-finish-{uid}"
        )

    def cancel_timer(self, uid: str) -> None:
        task = self._timers.pop(uid, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    def take_tasks(self) -> list[asyncio.Task[None]]:
        """Hand over every pending timer task (for the manager's close) and forget them."""
        tasks = list(self._timers.values())
        self._timers.clear()
        return tasks

    async def _finish_later(self, uid: str, delay: float) -> None:
        await self._clock.sleep(delay)
        async with self._lock:
            if self._timers.get(uid) is not asyncio.current_task():
                return  # cancelled (deleted, evicted) while waiting for the lock
            del self._timers[uid]
            entry = self._table.entry(uid)
            if entry is None or entry.status.terminal:
                return
            exit_code = _exit_code(entry.pod)
            entry.status = st.finished_status(entry.status, exit_code, self._clock.now())
            entry.finish_at = None
            await self._table.persist_async(entry)
            logger.info("pod finished pod=%s uid=%s phase=%s exit_code=%d", entry.pod.key, uid,
                        entry.status.phase, exit_code)
        await self._release(entry)


def pulled_message(image: str, *, ensure_secret_pulled: bool) -> str:
    """The image manager's Pulled event for an image already present (EnsureImageExists): with
    KubeletEnsureSecretPulledImages (beta, on since 1.35) it says the pod may use it."""
    if ensure_secret_pulled:
        return f"Container image {_go_quote(image)} already present on machine and can be accessed by the pod"
    return f"Container image {_go_quote(image)} already present on machine"


def _go_quote(text: str) -> str:
    """Go's %q of a plain image reference (quotes and backslashes escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _finish_after(pod: Pod) -> float | None:
    raw = pod.annotations.get(ANNOTATION_FINISH_AFTER)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        logger.warning("annotation ignored pod=%s annotation=%s value=%r",
                       pod.key, ANNOTATION_FINISH_AFTER, raw)
        return None
    return max(value, 0.0)


def _exit_code(pod: Pod) -> int:
    raw = pod.annotations.get(ANNOTATION_EXIT_CODE, "0")
    try:
        return int(raw)
    except ValueError:
        logger.warning("annotation ignored pod=%s annotation=%s value=%r", pod.key, ANNOTATION_EXIT_CODE, raw)
        return 0
