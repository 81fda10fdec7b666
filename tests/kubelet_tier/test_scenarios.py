"""Each scenario of scenarios/ on the real kubelet and on nodeagent, compared (tier.py, compare.py).

A scenario fails on any difference the divergence register (DIVERGENCES.yaml) does not list; the
registered ones it met are printed, with their reasons, so a run shows what it ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.kubelet_tier import compare

pytestmark = [pytest.mark.kubelet_tier]



def _grouped(paths: list[Path]) -> list[Path]:
    """Scenarios in file order, but those with the same KubeletConfiguration and profiles together: a new
    configuration restarts both nodes from fresh state, which is the slow part of the tier."""
    def key(p: Path) -> str:
        doc = yaml.safe_load(p.read_text())
        return json.dumps([doc.get("kubelet") or {}, doc.get("profile")], sort_keys=True)
    order: dict[str, int] = {}
    for p in paths:
        order.setdefault(key(p), len(order))
    return sorted(paths, key=lambda p: (order[key(p)], p.name))


SCENARIOS = _grouped(sorted((Path(__file__).resolve().parent / "scenarios").glob("*.yaml")))


@pytest.mark.timeout(4200)  # the first use builds the kubelet when the cache is cold (43 min measured)
def test_tier_starts(tier: object) -> None:
    """The control plane, the real kubelet on containerd and the nodeagent node come up (the session fixture:
    this test comes first so that a cold build of the binary runs under its long timeout)."""
    from tests.kubelet_tier.tier import Tier

    assert isinstance(tier, Tier)
    assert tier.real.holder is not None and tier.real.holder.poll() is None


def test_register_is_argued() -> None:
    """Every entry of the register has a path and a reason (the tier refuses to load one without)."""
    entries = compare.load_register()
    assert all(e.path and e.reason for e in entries)


def test_scenarios_are_well_formed() -> None:
    """Each scenario names its steps among the known ones and creates only pods it defines."""
    known = {"create", "wait", "delete", "device", "driver", "deleteClaim", "restartNode", "sleep", "compare",
             "staticPod"}
    for path in SCENARIOS:
        doc = yaml.safe_load(path.read_text())
        pods = {p["metadata"]["name"] for p in doc.get("pods", [])}
        for step in doc["steps"]:
            (kind, arg), = step.items()
            assert kind in known, f"{path.name}: unknown step {kind}"
            if kind == "create":
                assert set(arg) <= pods, f"{path.name}: creates undefined pods {set(arg) - pods}"
            if kind == "staticPod":
                static = {p["metadata"]["name"] for p in doc.get("staticPods", [])}
                named = set(arg.get("write", [])) | set(arg.get("remove", []))
                assert named <= static, f"{path.name}: undefined static pods {named - static}"
        assert any("compare" in s for s in doc["steps"]), f"{path.name} compares nothing"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(tier: object, path: Path) -> None:
    from tests.kubelet_tier.tier import Scenario, Tier

    assert isinstance(tier, Tier)
    scenario = Scenario.load(path)
    if scenario.skip:
        pytest.skip(scenario.skip)
    outcome = tier.run(scenario)
    for diff, entry in outcome.ignored:
        print(f"registered: {diff}  ({entry.reason})")
    print(f"timings: {outcome.timings}")
    assert not outcome.failures, "differences not in the register:\n" + "\n".join(str(d) for d in outcome.failures)
    assert not outcome.refused, "the nodeagent node asked what a kubelet's identity may not:\n" + "\n".join(
        outcome.refused[:20])
