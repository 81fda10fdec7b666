"""The Summary API document: shape, derived fields, cpu rates from cumulative samples."""

from __future__ import annotations

from nodeagent.metrics import summary as sm
from nodeagent.util.clock import FakeClock


class Provider:
    def __init__(self) -> None:
        self.node_cpu = 100.0
        self.pods: tuple[sm.PodStats, ...] = (
            sm.PodStats("a", "ns", "u1", None, (), sm.CPUStats(4.0), sm.MemoryStats(10)),
        )

    def node_stats(self) -> sm.NodeStats:
        return sm.NodeStats(
            cpu=sm.CPUStats(self.node_cpu),
            memory=sm.MemoryStats(100, available_bytes=900),
            fs=sm.FsStats(1000, 1500, 5, 9),  # nonsense from a probe must not go negative
            pods=self.pods,
        )


def test_rates_and_shape() -> None:
    clock = FakeClock(start=1_700_000_000.0)
    provider = Provider()
    builder = sm.SummaryBuilder("n", provider, lambda: (1.0, 7), clock, start_time=1_600_000_000.0)
    first = builder.summary()
    assert first["node"]["cpu"]["usageNanoCores"] == 0  # no previous sample
    assert first["node"]["startTime"] == "2020-09-13T12:26:40Z"
    assert first["node"]["cpu"]["time"] == "2023-11-14T22:13:20Z"
    assert first["node"]["fs"]["usedBytes"] == 0 and first["node"]["fs"]["inodesUsed"] == 0
    assert first["node"]["memory"]["workingSetBytes"] == 100
    assert "rssBytes" not in first["pods"][0]["memory"]
    assert first["pods"][0]["startTime"] == "2023-11-14T22:13:20Z"  # unknown start: now
    clock.advance(4.0)
    provider.node_cpu = 102.0
    second = builder.summary()
    assert second["node"]["cpu"]["usageNanoCores"] == 500_000_000
    assert second["node"]["cpu"]["usageCoreNanoSeconds"] == 102_000_000_000
    # a pod that went away and came back starts from scratch
    provider.pods = ()
    builder.summary()
    provider.pods = (sm.PodStats("a", "ns", "u1", None, (), sm.CPUStats(8.0), sm.MemoryStats(10)),)
    clock.advance(1.0)
    assert builder.summary()["pods"][0]["cpu"]["usageNanoCores"] == 0


def test_provider_rate_wins() -> None:
    class Fixed(Provider):
        def node_stats(self) -> sm.NodeStats:
            base = super().node_stats()
            return sm.NodeStats(sm.CPUStats(1.0, usage_cores=1.25), base.memory, base.fs)

    doc = sm.SummaryBuilder("n", Fixed(), lambda: (0.0, 0), FakeClock()).summary()
    assert doc["node"]["cpu"]["usageNanoCores"] == 1_250_000_000
    assert doc["pods"] == []
