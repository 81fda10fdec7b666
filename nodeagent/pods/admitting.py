"""Admit a pod whole or not at all: the answer of an allocating admit handler.

The topology manager and the device manager (when it admits alone) allocate container by
container; a provider's AdmissionFailure refuses the pod with its reason and message, and any
failure gives back what the pod already took, so a refused pod holds nothing (the kubelet's
allocate-then-rollback in its admit handlers). Here once, so both roll back alike.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from nodeagent.objects.pod.model import Pod
from nodeagent.pods.hints import AdmissionFailure
from nodeagent.pods.ports import ADMITTED, AdmitResult
from nodeagent.state import batch

logger = logging.getLogger(__name__)


async def admit_or_roll_back(pod: Pod, allocate: Callable[[], Awaitable[None]],
                             roll_back: Callable[[Pod], Awaitable[None]], who: str) -> AdmitResult:
    """Run `allocate`; on an AdmissionFailure roll back and refuse, on any other error roll back
    and raise. `who` names the admitter in the log line of a refusal."""
    try:
        await allocate()
    except AdmissionFailure as failure:
        with batch.suspended():  # the admission's staged writes are dropped; the undo commits now
            await roll_back(pod)
        logger.info("%s refused pod=%s reason=%s message=%s", who, pod.key, failure.reason, failure.message)
        return AdmitResult(False, failure.reason, failure.message)
    except BaseException:
        with batch.suspended():
            await roll_back(pod)
        raise
    return ADMITTED
