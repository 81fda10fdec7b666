"""EvictionManager: one eviction pass per interval on the injected clock.

Each pass observes the node signals (through a SignalSource, the container manager
in the daemon), feeds them with the active pods to decision.decide(), keeps the
returned state, and evicts at most one pod through the injected async `evict`
callback (the pod manager's), counting kubelet_evictions{eviction_signal}. A failing
pass is logged and retried next interval; run() never raises except on cancel.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from nodeagent.cm.eviction import decision
from nodeagent.cm.eviction.decision import Decision, EvictionState, Observation, ThresholdSpec, Victim
from nodeagent.objects.pod.model import Pod
from nodeagent.util.clock import Clock

if TYPE_CHECKING:
    from nodeagent.metrics.instruments import Instruments

logger = logging.getLogger(__name__)

EVICTED = "Evicted"


class SignalSource(Protocol):
    def observe(self, pods: Sequence[Pod]) -> Mapping[str, Observation]:
        """The node's eviction signals now, counting the pods' simulated usage."""
        ...


class EvictFn(Protocol):
    async def __call__(self, pod: Pod, /, *, reason: str, message: str) -> None: ...


class EvictionManager:
    def __init__(
        self,
        thresholds: Sequence[ThresholdSpec],
        transition_period: float,
        interval: float,
        signals: SignalSource,
        active_pods: Callable[[], Sequence[Pod]],
        evict: EvictFn,
        clock: Clock,
        instruments: Instruments | None = None,
    ) -> None:
        self.thresholds = tuple(thresholds)
        self.transition_period = transition_period
        self.interval = interval
        self._signals = signals
        self._active_pods = active_pods
        self._evict = evict
        self._clock = clock
        self._instruments = instruments
        self._state = EvictionState()
        self._last: Decision | None = None
        self._observations: Mapping[str, Observation] = {}

    @property
    def last_decision(self) -> Decision | None:
        return self._last

    def conditions(self) -> tuple[str, ...]:
        """Node conditions that are True after the last pass."""
        return self._last.conditions if self._last else ()

    def observations(self) -> Mapping[str, Observation]:
        return self._observations

    async def synchronize(self) -> Victim | None:
        """One pass; returns the evicted pod's verdict, if any."""
        pods = list(self._active_pods())
        self._observations = self._signals.observe(pods)
        result = decision.decide(
            self._clock.monotonic(), self._state, self.thresholds, self._observations, pods,
            self.transition_period,
        )
        self._state = result.state
        self._last = result
        for t in result.met:
            if t not in result.actionable:
                logger.debug("eviction threshold met, grace period pending signal=%s kind=%s grace=%ss",
                            t.signal, "soft", t.grace_period)
        victim = result.victim
        if victim is None:
            if result.actionable:
                logger.warning("eviction threshold met but no pod to evict signal=%s",
                               result.actionable[0].signal)
            return None
        logger.warning("evicting pod=%s uid=%s signal=%s message=%r",
                       victim.pod.key, victim.pod.uid, victim.signal, victim.message)
        await self._evict(victim.pod, reason=EVICTED, message=victim.message)
        if self._instruments is not None:
            self._instruments.evictions.labels(eviction_signal=victim.signal).inc()
        return victim

    async def run(self) -> None:
        """Passes forever, `interval` apart; cancel the task to stop."""
        logger.info("eviction manager started interval=%ss thresholds=%d",
                    self.interval, len(self.thresholds))
        while True:
            try:
                await self.synchronize()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("eviction pass failed")
            await self._clock.sleep(self.interval)
