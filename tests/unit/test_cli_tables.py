"""kubectl-like tables of `nodeagent get` for kinds with their own columns."""

from __future__ import annotations

import pytest

from nodeagent.cli import _print_objects


def test_cordoned_node_shows_scheduling_disabled(capsys: pytest.CaptureFixture[str]) -> None:
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    _print_objects("Node", [
        {"kind": "Node", "metadata": {"name": "a"}, "spec": {"unschedulable": True}, "status": ready},
        {"kind": "Node", "metadata": {"name": "b"}, "spec": {}, "status": {}},
    ], None, all_ns=False, single=False)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:2] == ["a", "Ready,SchedulingDisabled"]
    assert lines[2].split()[:2] == ["b", "NotReady"]


def test_quota_shows_used_over_hard(capsys: pytest.CaptureFixture[str]) -> None:
    _print_objects("ResourceQuota", [{"kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "team"},
                                      "status": {"hard": {"b": "4", "a": "10"}, "used": {"b": "1"}}}],
                   None, all_ns=True, single=False)
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAMESPACE", "NAME", "AGE", "REQUEST"]
    assert out[1].startswith("team") and out[1].endswith("a: 0/10, b: 1/4")
